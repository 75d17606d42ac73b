"""GraphQL types of a digest's cited prose: overview and highlight sentences with their
citations, the overview as Markdown with numbered footnotes, and the citation audit.

Built from the jsonb columns of migration 0004. A citation's quote is sliced at read time from
the revision of the message it was made from, like a pointer's `resolvedText`, so it is always
the exact characters the validator anchored.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import strawberry
from strawberry.types import Info

from db import models
from runner.core.markdown_text import escape_inline
from runner.grounding.footnotes import (
    FootnotedSentence,
    Section,
    Source,
    citation_keys,
    footnote_numbers,
    footnoted_markdown,
    stored_sentences,
)
from schema.context import Context


@strawberry.type(description="A message a sentence rests on, and the exact words it cites.")
class Citation:
    message_id: str = strawberry.field(description="External id of the cited message.")
    author: str
    ts: datetime
    quote: str = strawberry.field(
        description="revisionText[charStart:charEnd] of the cited revision: the exact words."
    )
    char_start: int
    char_end: int
    revision: int
    footnote: int = strawberry.field(
        description="Its footnote number in the digest's Markdown (overview, then highlights)."
    )
    message_row: strawberry.Private[int]

    @strawberry.field(
        description="The full normalized text of the cited revision (immutable; may differ from "
        "the message's current text if it was edited since), so a client can show the quote in "
        "its message: quote is revisionText[charStart:charEnd]."
    )
    async def revision_text(self, info: Info[Context, None]) -> str | None:
        return await info.context.loaders.revision_text.load((self.message_row, self.revision))


@strawberry.type(description="One sentence of prose and the messages it rests on.")
class CitedSentence:
    text: str
    citations: list[Citation]


@strawberry.type
class AuditField:
    field: str = strawberry.field(
        description="overview, highlights or search_keywords (channel digests); summary (its "
        "sentences) or key_points (document digests)."
    )
    proposed: int
    kept: int
    cited: int | None = strawberry.field(
        default=None,
        description="Kept entries that cite evidence: every kept overview or highlight sentence "
        "(validated); for a document digest, the summary sentences and key points that one of "
        "its evidence snippets supports; null for search keywords.",
    )


@strawberry.type
class AuditReason:
    reason: str = strawberry.field(description="A rejection code (low_support, ...).")
    count: int


# Channel digests store only sentences whose citations validated: every kept one is cited.
VALIDATED_PROSE = ("overview", "highlights")
PROSE_FIELDS = (*VALIDATED_PROSE, "summary", "key_points")


@strawberry.type(description="What validation did to the digest's prose and citations.")
class CitationAudit:
    sentences_kept: int = strawberry.field(
        description="Overview and highlight sentences kept (document digests: summary sentences "
        "and key points)."
    )
    sentences_dropped: int
    overview_cited_share: float | None = strawberry.field(
        description="Share of the stored overview sentences with a valid citation (1.0 for "
        "every digest stored since citations are checked; null when it has no overview). For a "
        "document digest: the share of its summary sentences that one of its evidence snippets "
        "supports."
    )
    title_replaced: bool
    fields: list[AuditField]
    reasons: list[AuditReason]

    @classmethod
    def from_json(cls, audit: dict[str, Any]) -> CitationAudit:
        fields = [
            AuditField(
                field=name,
                proposed=int(v["proposed"]),
                kept=int(v["kept"]),
                cited=int(v["cited"])
                if "cited" in v
                else int(v["kept"])
                if name in VALIDATED_PROSE
                else None,
            )
            for name, v in sorted(audit.get("fields", {}).items())
        ]
        prose = [f for f in fields if f.field in PROSE_FIELDS]
        share = audit.get("overview_cited_share")
        return cls(
            sentences_kept=sum(f.kept for f in prose),
            sentences_dropped=sum(f.proposed - f.kept for f in prose),
            overview_cited_share=None if share is None else float(share),
            title_replaced=bool(audit.get("title_replaced", False)),
            fields=fields,
            reasons=[
                AuditReason(reason=str(reason), count=int(count))
                for reason, count in sorted(audit.get("reasons", {}).items())
            ],
        )


Sentences = tuple[FootnotedSentence[Source], ...]


async def load_prose(
    info: Info[Context, None], row: models.Digest
) -> tuple[Sentences, Sentences, list[Sentences]]:
    """The overview, highlight and period sentences of a digest with authors, times and
    quotes (the periods' one tuple per period, in the stored order)."""
    periods = [list(period.get("sentences", [])) for period in row.periods]
    stored = [
        *row.overview_sentences,
        *row.highlight_sentences,
        *(sentence for period in periods for sentence in period),
    ]
    keys = citation_keys(stored)
    loaders = info.context.loaders
    texts = await loaders.revision_text.load_many(keys)
    messages = await loaders.message.load_many(list(dict.fromkeys(k[0] for k in keys)))
    authors = {m.id: (m.author, m.ts) for m in messages if m is not None}
    by_key = dict(zip(keys, texts, strict=True))
    return (
        stored_sentences(row.overview_sentences, authors, by_key),
        stored_sentences(row.highlight_sentences, authors, by_key),
        [stored_sentences(period, authors, by_key) for period in periods],
    )


def prose_sections(
    overview: Sentences,
    highlights: Sentences,
    periods: Sequence[tuple[str, Sentences]] = (),
) -> list[Section[Source]]:
    """The one footnote numbering of a digest: overview first, then highlights, then each
    period (its label as its heading)."""
    return [
        Section(None, overview),
        Section("Highlights", highlights, bullets=True),
        *(Section(heading, sentences, bullets=True) for heading, sentences in periods),
    ]


def cited_sentences(
    row_sentences: list[dict[str, Any]],
    sentences: tuple[FootnotedSentence[Source], ...],
    numbers: dict[str, int],
) -> list[CitedSentence]:
    result: list[CitedSentence] = []
    for entry, sentence in zip(row_sentences, sentences, strict=True):
        spans = {str(c["external_id"]): c for c in entry.get("citations", [])}
        citations = [
            Citation(
                message_id=source.message_id,
                author=source.author,
                ts=source.ts,
                quote=source.quote,
                char_start=int(spans[source.message_id]["char_start"]),
                char_end=int(spans[source.message_id]["char_end"]),
                revision=int(spans[source.message_id]["revision"]),
                footnote=numbers[source.message_id],
                message_row=int(spans[source.message_id]["message_id"]),
            )
            for source in sentence.sources
        ]
        result.append(CitedSentence(text=sentence.sentence, citations=citations))
    return result


async def sentences_of(
    info: Info[Context, None], row: models.Digest, field: str
) -> list[CitedSentence]:
    overview, highlights, _ = await load_prose(info, row)
    numbers = footnote_numbers(prose_sections(overview, highlights))
    if field == "overview":
        return cited_sentences(row.overview_sentences, overview, numbers)
    return cited_sentences(row.highlight_sentences, highlights, numbers)


async def overview_markdown(info: Info[Context, None], row: models.Digest) -> str:
    """The overview with `[^n]` markers and its footnotes; a digest stored before citations
    (no sentences) gives its overview text, escaped like any other text."""
    if not row.overview_sentences:
        return escape_inline(row.overview)
    overview, _, _ = await load_prose(info, row)
    return footnoted_markdown([Section(None, overview)])
