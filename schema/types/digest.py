"""GraphQL types of digests and their items, built from stored rows.

A pointer's `resolvedText` is sliced at read time from the revision of the message it was made
from (`revisionText`), which never changes: an edited message cannot break a stored pointer.
Items whose sources changed since carry a `source_edited` flag (schema/types/coverage.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

import strawberry
from strawberry import relay
from strawberry.scalars import JSON
from strawberry.types import Info

from db import models
from schema.context import Context
from schema.types.channel import Channel
from schema.types.coverage import MessageCoverage, item_flags
from schema.types.enums import KnowledgeKind, SignalLevel
from schema.types.ids import (
    CHANNEL,
    DIGEST,
    DIGEST_JOB,
    KNOWLEDGE_ITEM,
    global_id,
    optional_global_id,
)
from schema.types.job import DigestJob
from schema.types.periods import DigestPeriod, periods_of
from schema.types.prose import CitationAudit, CitedSentence, overview_markdown, sentences_of
from schema.types.shared import Flag


@strawberry.type
class Pointer:
    message_id: str = strawberry.field(description="External id of the message pointed into.")
    char_start: int
    char_end: int
    match_kind: str = strawberry.field(description="offsets, exact, normalized or fuzzy.")
    revision: int = strawberry.field(
        description="The revision of the message this pointer was made from (1-based)."
    )
    message_row: strawberry.Private[int]

    @strawberry.field(
        description="The full normalized text of the pointed revision (immutable; may differ "
        "from the message's current text if it was edited since)."
    )
    async def revision_text(self, info: Info[Context, None]) -> str | None:
        return await info.context.loaders.revision_text.load((self.message_row, self.revision))

    @strawberry.field(description="revisionText[charStart:charEnd]: always the verbatim quote.")
    async def resolved_text(self, info: Info[Context, None]) -> str | None:
        text = await self.revision_text(info)
        return text[self.char_start : self.char_end] if text is not None else None

    @classmethod
    def stored(
        cls,
        message_row: int | None,
        message_id: str | None,
        char_start: int | None,
        char_end: int | None,
        revision: int | None,
    ) -> Pointer | None:
        """An exact span stored as nullable columns (all NULL: none) as a Pointer."""
        if message_row is None or message_id is None:
            return None
        assert char_start is not None and char_end is not None  # the tables' span checks
        return cls(
            message_id=message_id,
            char_start=char_start,
            char_end=char_end,
            match_kind="exact",
            revision=revision or 1,
            message_row=message_row,
        )


def _pointer(row: models.ArtifactWithMessage | models.KnowledgeItemWithMessage) -> Pointer | None:
    if row.message_id is None:
        return None
    # NOT NULL for a pointer: the tables' checks (span) and the join on its message (external id).
    assert row.message_external_id is not None and row.match_kind is not None
    assert row.char_start is not None and row.char_end is not None
    return Pointer(
        message_id=row.message_external_id,
        char_start=row.char_start,
        char_end=row.char_end,
        match_kind=row.match_kind,
        revision=row.message_revision,
        message_row=row.message_id,
    )


@strawberry.type
class Topic:
    title: str
    summary: str
    message_ids: list[str]


@strawberry.type
class _Cited:
    """What the `flags` of an item need: its digest, stored flags and cited messages."""

    digest_row: strawberry.Private[int]
    stored_flags: strawberry.Private[list[Flag]]

    def cited(self) -> list[str]:
        return list(getattr(self, "message_ids", []))

    @strawberry.field(
        description="Validation flags, and source_edited when a cited message changed."
    )
    async def flags(self, info: Info[Context, None]) -> list[Flag]:
        return await item_flags(info, self.digest_row, self.stored_flags, self.cited())


@strawberry.type
class Decision(_Cited):
    text: str
    message_ids: list[str]


@strawberry.type
class ActionItem(_Cited):
    text: str
    owner: str | None
    message_ids: list[str]


@strawberry.type
class OpenQuestion(_Cited):
    text: str
    asked_by: str | None
    message_ids: list[str]


@strawberry.type
class Link(_Cited):
    url: str
    description: str
    message_ids: list[str]

    @strawberry.field(
        description="Who shared it: the authors of the messages it is cited "
        "from, in citation order, each once."
    )
    async def shared_by(self, info: Info[Context, None]) -> list[str]:
        loader = info.context.loaders.cited_author
        authors = await loader.load_many([(self.digest_row, m) for m in self.message_ids])
        return list(dict.fromkeys(a for a in authors if a is not None))


@strawberry.type
class Artifact(_Cited):
    kind: str
    title: str
    language: str | None
    pointer: Pointer

    def cited(self) -> list[str]:
        return [self.pointer.message_id]


@strawberry.type
class KnowledgeItem(_Cited, relay.Node):
    id: relay.NodeID[int]
    digest_id: strawberry.ID
    channel_id: strawberry.ID
    key: str
    kind: KnowledgeKind
    title: str
    verbatim: bool = strawberry.field(description="True: a pointer; false: synthesized content.")
    content: str | None = strawberry.field(description="Synthesized content (null if verbatim).")
    pointer: Pointer | None
    message_ids: list[str]
    context_version: str | None
    entity_refs: list[str]
    supersedes_id: strawberry.ID | None
    conflicts_with_id: strawberry.ID | None
    created_at: datetime

    def cited(self) -> list[str]:
        return [*self.message_ids, *([self.pointer.message_id] if self.pointer else [])]

    @classmethod
    def from_row(cls, row: models.KnowledgeItemWithMessage) -> KnowledgeItem:
        return cls(
            id=row.id,
            digest_id=global_id(DIGEST, row.digest_id),
            channel_id=global_id(CHANNEL, row.channel_id),
            key=row.item_key,
            kind=KnowledgeKind(row.kind),
            title=row.title,
            verbatim=row.message_id is not None,
            content=row.content,
            pointer=_pointer(row),
            message_ids=list(row.message_ids),
            context_version=row.context_version,
            entity_refs=list(row.entity_refs),
            supersedes_id=optional_global_id(KNOWLEDGE_ITEM, row.supersedes_id),
            conflicts_with_id=optional_global_id(KNOWLEDGE_ITEM, row.conflicts_with_id),
            digest_row=row.digest_id,
            stored_flags=Flag.many(row.flags),
            created_at=row.created_at,
        )

    @strawberry.field(description="The verbatim text, or the synthesized content.")
    async def text(self, info: Info[Context, None]) -> str | None:
        if self.pointer is None:
            return self.content
        text: str | None = await self.pointer.resolved_text(info)
        return text


@strawberry.type
class ItemCounts:
    topics: int
    decisions: int
    action_items: int
    open_questions: int
    links: int
    artifacts: int
    knowledge_items: int


@strawberry.type
class Rejection:
    """An item validation dropped, and why. Nothing listed here is stored as an item."""

    stage: str
    field: str
    label: str
    reason: str


@strawberry.type
class SignalQuality:
    level: SignalLevel
    reason: str


@strawberry.interface
class DigestBase(relay.Node):
    """A digest, in either form: both forms of one digest have its one global id (type
    `Digest`), and `node(id:)` returns the full form."""

    id: relay.NodeID[int]
    channel_id: strawberry.ID
    channel_row: strawberry.Private[int]
    title: str
    signal_quality: SignalQuality
    message_count: int
    window_start: datetime | None
    window_end: datetime | None
    created_at: datetime

    @strawberry.field
    async def channel(self, info: Info[Context, None]) -> Channel | None:
        row = await info.context.loaders.channel.load(self.channel_row)
        return Channel.from_row(row) if row else None

    @strawberry.field
    async def item_counts(self, info: Info[Context, None]) -> ItemCounts:
        row = await info.context.loaders.item_counts.load(self.id)
        names = ItemCounts.__annotations__
        return ItemCounts(**{name: int(getattr(row, name)) if row else 0 for name in names})


def _base_fields(row: models.Digest) -> dict[str, Any]:
    return {
        "id": row.id,
        "channel_id": global_id(CHANNEL, row.channel_id),
        "channel_row": row.channel_id,
        "title": row.title,
        "signal_quality": SignalQuality(
            level=SignalLevel(row.signal_quality), reason=row.signal_reason
        ),
        "message_count": row.message_count,
        "window_start": row.window_start,
        "window_end": row.window_end,
        "created_at": row.created_at,
    }


@strawberry.type(description="The light form of a digest, for lists.")
class DigestSummary(DigestBase):
    excerpt: str

    @classmethod
    def resolve_typename(cls, root: DigestSummary, info: Info[Any, Any]) -> str:
        return DIGEST  # the light form names the digest itself: one node, one id

    @classmethod
    def from_row(cls, row: models.Digest) -> DigestSummary:
        overview: str = row.overview
        excerpt = overview if len(overview) <= 280 else overview[:279].rsplit(" ", 1)[0] + "…"
        return cls(excerpt=excerpt, **_base_fields(row))


@strawberry.type(description="A digest with every item.")
class Digest(DigestBase):
    overview: str = strawberry.field(
        description="The overview as plain text (its sentences joined); see overviewSentences "
        "for their citations and overviewMarkdown for footnotes."
    )
    highlights: list[str]
    coverage: JSON
    search_keywords: list[str]
    notable_message_ids: list[str]
    extractor: str
    flags: list[Flag]
    rejections: list[Rejection]
    job_id: strawberry.ID | None
    job_row: strawberry.Private[int | None]
    message_coverage: MessageCoverage = strawberry.field(
        description="Which messages this digest read, and the ranges it left out with why."
    )
    citation_audit: CitationAudit | None = strawberry.field(
        description="Sentences kept and dropped, the share of overview sentences with a valid "
        "citation, and the reasons (null for digests stored before citations were checked)."
    )
    row: strawberry.Private[models.Digest]

    @strawberry.field(description="The overview's sentences, each with its citations.")
    async def overview_sentences(self, info: Info[Context, None]) -> list[CitedSentence]:
        return await sentences_of(info, self.row, "overview")

    @strawberry.field(description="The highlights as sentences, each with its citations.")
    async def highlight_sentences(self, info: Info[Context, None]) -> list[CitedSentence]:
        return await sentences_of(info, self.row, "highlights")

    @strawberry.field(
        description="A window that spans several days told period by period (days, or weeks, "
        "months, quarters, years when there would be more than 62 days), oldest first, each "
        "with its own cited overview; the overview above is the roll-up. Empty for a window of "
        "one day."
    )
    async def periods(self, info: Info[Context, None]) -> list[DigestPeriod]:
        return await periods_of(info, self.row)

    @strawberry.field(
        description="The overview as Markdown: a [^n] marker after each sentence and one "
        "footnote per cited message, numbered from 1 in order of first citation: "
        '`[^1]: ann, 2024-05-01 10:02 UTC, "the quoted words" (message 12)`.'
    )
    async def overview_markdown(self, info: Info[Context, None]) -> str:
        return await overview_markdown(info, self.row)

    @classmethod
    def from_row(cls, row: models.Digest) -> Digest:
        return cls(
            overview=row.overview,
            highlights=list(row.highlights),
            coverage=cast(JSON, row.coverage),
            search_keywords=list(row.search_keywords),
            notable_message_ids=list(row.notable_message_ids),
            extractor=row.extractor,
            flags=Flag.many(row.flags),
            rejections=[
                Rejection(
                    stage=str(r.get("stage", "")),
                    field=str(r.get("field", "")),
                    label=str(r.get("label", "")),
                    reason=str(r.get("reason", "")),
                )
                for r in row.rejections
            ],
            job_id=optional_global_id(DIGEST_JOB, row.job_id),
            job_row=row.job_id,
            message_coverage=MessageCoverage.from_row(row),
            citation_audit=(
                CitationAudit.from_json(row.citation_audit) if row.citation_audit else None
            ),
            row=row,
            **_base_fields(row),
        )

    @strawberry.field
    async def job(self, info: Info[Context, None]) -> DigestJob | None:
        if self.job_row is None:
            return None
        row = await info.context.loaders.job.load(self.job_row)
        return DigestJob.from_row(row) if row else None

    @strawberry.field
    async def topics(self, info: Info[Context, None]) -> list[Topic]:
        rows = await info.context.loaders.topics.load(self.id)
        return [
            Topic(title=r.title, summary=r.summary, message_ids=list(r.message_ids)) for r in rows
        ]

    @strawberry.field
    async def decisions(self, info: Info[Context, None]) -> list[Decision]:
        rows = await info.context.loaders.decisions.load(self.id)
        return [
            Decision(
                text=r.text,
                message_ids=list(r.message_ids),
                digest_row=r.digest_id,
                stored_flags=Flag.many(r.flags),
            )
            for r in rows
        ]

    @strawberry.field
    async def action_items(self, info: Info[Context, None]) -> list[ActionItem]:
        rows = await info.context.loaders.action_items.load(self.id)
        return [
            ActionItem(
                text=r.text,
                owner=r.owner,
                message_ids=list(r.message_ids),
                digest_row=r.digest_id,
                stored_flags=Flag.many(r.flags),
            )
            for r in rows
        ]

    @strawberry.field
    async def open_questions(self, info: Info[Context, None]) -> list[OpenQuestion]:
        rows = await info.context.loaders.open_questions.load(self.id)
        return [
            OpenQuestion(
                text=r.text,
                asked_by=r.asked_by,
                message_ids=list(r.message_ids),
                digest_row=r.digest_id,
                stored_flags=Flag.many(r.flags),
            )
            for r in rows
        ]

    @strawberry.field
    async def links(self, info: Info[Context, None]) -> list[Link]:
        rows = await info.context.loaders.links.load(self.id)
        return [
            Link(
                url=r.url,
                description=r.description,
                message_ids=list(r.message_ids),
                digest_row=r.digest_id,
                stored_flags=[],
            )
            for r in rows
        ]

    @strawberry.field
    async def artifacts(self, info: Info[Context, None]) -> list[Artifact]:
        rows = await info.context.loaders.artifacts.load(self.id)
        return [
            Artifact(
                kind=r.kind,
                title=r.title,
                language=r.language,
                pointer=_pointer(r),  # type: ignore[arg-type]
                digest_row=r.digest_id,
                stored_flags=[],
            )
            for r in rows
        ]

    @strawberry.field
    async def knowledge_items(self, info: Info[Context, None]) -> list[KnowledgeItem]:
        rows = await info.context.loaders.knowledge_items.load(self.id)
        return [KnowledgeItem.from_row(r) for r in rows]
