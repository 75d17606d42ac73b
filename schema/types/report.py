"""GraphQL types of a report: sections → sentences → citations → sources
with their locators and quoted text, the Markdown with `[^n]` footnotes, and the citation audit,
built from the stored row (`Report.from_row`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

import strawberry
from strawberry import relay
from strawberry.scalars import JSON
from strawberry.types import Info

from db import models
from db.reports import EMPTY_FIDELITY
from runner.core.fidelity import ordered_phases
from runner.reports.sources import source_number
from schema.context import Context
from schema.types.enums import FidelityLevel
from schema.types.ids import DIGEST_JOB, DOCUMENT, MESSAGE, optional_global_id

_FIRST_SPAN = "A source may have several cited spans: read `spans` (this is the first one's)."


@strawberry.type(
    description="One cited span of a source: the exact characters a sentence rests on, with "
    "where they lie (a message's charStart/charEnd, a document's locator)."
)
class ReportSpan:
    quote: str = strawberry.field(description="The exact cited characters.")
    char_start: int | None = strawberry.field(
        description="Message sources: revisionText[charStart:charEnd] = quote."
    )
    char_end: int | None
    locator: str | None = strawberry.field(
        description="Document sources: char:S-E or page:N:char:S-E of its canonical text."
    )

    @classmethod
    def from_json(cls, span: dict[str, Any]) -> ReportSpan:
        return cls(
            quote=str(span["quote"]),
            char_start=span.get("char_start"),
            char_end=span.get("char_end"),
            locator=span.get("locator"),
        )


@strawberry.type(
    description="A source a report cites, once however many of its passages are cited: a "
    "message revision, a document, or the page at a URL, with its cited spans."
)
class ReportSource:
    id: str = strawberry.field(description='"S1", "S2", ...: numbered by first appearance.')
    footnote: int = strawberry.field(description="Its `[^n]` number in the Markdown (n of Sn).")
    kind: str = strawberry.field(description='"message" or "document".')
    title: str = strawberry.field(
        description="What the source is called: a document's title (its own, else its first "
        "heading or file name); a message's `#channel`."
    )
    url: str | None = strawberry.field(description="Document sources: the URL it was fetched from.")
    spans: list[ReportSpan] = strawberry.field(
        description="The distinct spans of it the report cites, in order of first citation."
    )
    cited_in_sections: list[str] = strawberry.field(
        description="Headings of the report's sections citing it, in reading order."
    )
    citation_count: int = strawberry.field(
        description="How many (sentence, span) citations point at it."
    )
    credibility_score: float | None = strawberry.field(
        description="0..1: how much the source says about where it comes from (a document's "
        "title, stated author, publisher and date, a clean extraction, a copy elsewhere; a "
        "message's author being a regular of the channel, or a digest's decision or action item "
        "citing it). No judgement of its content. Null for a report stored before scores."
    )
    relevance_score: float | None = strawberry.field(
        description="0..1: how well its cited passages match the report's question (the best "
        "BM25 score among them, over the best passage of the same part of the question). Null "
        "for a report stored before scores."
    )
    quote: str = strawberry.field(
        description="The exact characters of its first cited span.", deprecation_reason=_FIRST_SPAN
    )
    channel_name: str | None
    message_id: strawberry.ID | None = strawberry.field(description="Message sources: the message.")
    external_id: str | None
    revision: int | None = strawberry.field(
        description="Message sources: the revision read; revisionText[charStart:charEnd] = quote."
    )
    author: str | None
    ts: datetime | None
    char_start: int | None = strawberry.field(deprecation_reason=_FIRST_SPAN)
    char_end: int | None = strawberry.field(deprecation_reason=_FIRST_SPAN)
    document_id: strawberry.ID | None = strawberry.field(description="Document sources.")
    document_title: str | None
    locator: str | None = strawberry.field(
        description="Document sources: char:S-E or page:N:char:S-E of its canonical text.",
        deprecation_reason=_FIRST_SPAN,
    )
    message_row: strawberry.Private[int | None] = None

    @strawberry.field(
        description="Message sources: the full normalized text of the cited revision (immutable, "
        "even after the message was edited): each span's quote is revisionText[charStart:charEnd]."
    )
    async def revision_text(self, info: Info[Context, None]) -> str | None:
        if self.message_row is None or self.revision is None:
            return None
        return await info.context.loaders.revision_text.load((self.message_row, self.revision))

    @classmethod
    def from_json(
        cls, entry: dict[str, Any], cited_in: tuple[list[str], int] = ([], 0)
    ) -> ReportSource:
        """`cited_in`: the sections citing it and the number of sentences that do, for a
        report stored before its sources said so."""
        message = entry["kind"] == "message"
        document = not message
        spans = entry.get("spans") or [entry]
        return cls(
            id=str(entry["id"]),
            footnote=source_number(str(entry["id"])) or 0,
            kind=str(entry["kind"]),
            title=f"#{entry.get('channel')}" if message else str(entry.get("title")),
            url=entry.get("url") if document else None,
            spans=[ReportSpan.from_json(span) for span in spans],
            cited_in_sections=[str(s) for s in entry.get("sections", cited_in[0])],
            citation_count=int(entry.get("citation_count", cited_in[1])),
            credibility_score=_score(entry.get("credibility_score")),
            relevance_score=_score(entry.get("relevance_score")),
            quote=str(entry["quote"]),
            channel_name=entry.get("channel") if message else None,
            message_id=optional_global_id(MESSAGE, entry.get("message_id")),
            external_id=entry.get("external_id"),
            revision=entry.get("revision"),
            author=entry.get("author"),
            ts=datetime.fromisoformat(entry["ts"]) if message else None,
            char_start=entry.get("char_start"),
            char_end=entry.get("char_end"),
            document_id=optional_global_id(DOCUMENT, int(entry["document_id"]))
            if document
            else None,
            document_title=entry.get("title") if document else None,
            locator=entry.get("locator"),
            message_row=int(entry["message_id"]) if message else None,
        )


def _score(value: Any) -> float | None:
    """A stored score; None (null) when the report was stored before sources had scores."""
    return None if value is None else float(value)


@strawberry.type
class ReportCitation:
    source_id: str
    footnote: int
    source: ReportSource
    span: ReportSpan = strawberry.field(description="The span of the source this sentence cites.")


@strawberry.type
class ReportSentence:
    text: str
    citations: list[ReportCitation]


@strawberry.type
class ReportSection:
    heading: str | None
    bullets: bool = strawberry.field(description="Shown as a list (open points).")
    sentences: list[ReportSentence]


@strawberry.type(description="What the citation audit did to the report.")
class ReportAudit:
    proposed: int
    kept: int
    dropped: int
    re_asked: int
    citations: int = strawberry.field(
        description="(sentence, cited span) pairs of the kept sentences."
    )
    orphan_sources: int = strawberry.field(
        description="Listed sources no sentence cites (always 0 in a stored report)."
    )
    audit_failures: int = strawberry.field(
        description="Sentences dropped by the audit plus problems left in the report."
    )
    coverage: float | None = strawberry.field(
        description="Share of kept sentences with a resolving, supporting citation (stored: 1)."
    )
    sources: int
    reasons: JSON = strawberry.field(description="Dropped sentences by reason.")

    @classmethod
    def from_json(cls, audit: dict[str, Any]) -> ReportAudit:
        return cls(
            proposed=int(audit.get("proposed", 0)),
            kept=int(audit.get("kept", 0)),
            dropped=int(audit.get("dropped", 0)),
            re_asked=int(audit.get("re_asked", 0)),
            citations=int(audit.get("citations", 0)),
            orphan_sources=int(audit.get("orphan_sources", 0)),
            audit_failures=int(audit.get("audit_failures", audit.get("dropped", 0))),
            coverage=audit.get("coverage"),
            sources=int(audit.get("sources", 0)),
            reasons=cast(JSON, audit.get("reasons", {})),
        )


@strawberry.type(
    description="One step of fitting the evidence to the writer model's budget (a fidelity record)."
)
class ReportFidelityRecord:
    phase: str = strawberry.field(description='"synthesis": the evidence given to the writer.')
    step: str = strawberry.field(
        description='"none" (it fitted), "cap", "floor", "truncate", "drop", "condense", '
        '"headline", "final_fit" (the whole request counted and fitted again) or "over".'
    )
    original_tokens: int
    final_tokens: int
    reason: str = strawberry.field(
        description='"within_budget", "unit_cap", "budget_floor", "budget_limit", '
        '"protected_overflow", "request_over_budget" or "over_budget".'
    )

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> ReportFidelityRecord:
        return cls(
            phase=str(record.get("phase", "")),
            step=str(record.get("step", "")),
            original_tokens=int(record.get("original_tokens", 0)),
            final_tokens=int(record.get("final_tokens", 0)),
            reason=str(record.get("reason", "")),
        )


@strawberry.type(
    description="What one phase of the report did to one evidence unit (a per-item fidelity "
    "record): gathering it for the question's sub-questions, adding it in the refinement, "
    "fitting it to the writer model's budget."
)
class ReportItemFidelity:
    content_id: str = strawberry.field(
        description="The evidence unit (ids as in droppedContentIds and ReportWarning.itemIds)."
    )
    phase: str = strawberry.field(
        description='"gathering" (ranked for a sub-question and merged), "refinement" (added '
        'for a point the first answer left open), "synthesis" (fitted to the writer\'s budget) '
        'or "final_fit" (fitted again after the whole request was counted over its limit).'
    )
    level: FidelityLevel | None = strawberry.field(
        description="What the unit became; null for a level this server does not know."
    )
    reason: str = strawberry.field(
        description='"gathered", "open_point", "within_budget", "budget_limit" or '
        '"protected_overflow".'
    )
    original_tokens: int = strawberry.field(
        description="Its tokens before the fitting (0 in a phase that counts none)."
    )
    final_tokens: int = strawberry.field(
        description="Its tokens as sent (0 when dropped, or in a phase that counts none)."
    )
    rank: int | None = strawberry.field(
        description="Its place by priority, 1 first (question relevance, then recency)."
    )
    protected: bool = strawberry.field(
        description="Never dropped for the budget: it holds a phrase the question quotes, or is "
        "a digest decision or action item on the question's subject."
    )
    warnings: list[str] = strawberry.field(
        description="Codes of the report's warnings naming this unit (CONTENT_TRUNCATED, ...)."
    )
    archive_hash: str | None = strawberry.field(
        description='"sha256:<hex>" of its whole text in the evidence archive, when it was cut '
        "or dropped and archiving is on."
    )
    recorded_at: datetime | None = strawberry.field(
        description="When the phase ran; null for a report stored before it was recorded."
    )

    @classmethod
    def from_json(cls, item_id: str, phase: str, record: dict[str, Any]) -> ReportItemFidelity:
        """A stored record; fields a report stored before they existed read as null/defaults."""
        level = record.get("level")
        known = {member.value for member in FidelityLevel}
        rank, hash_, stamp = record.get("rank"), record.get("archive_hash"), record.get("timestamp")
        return cls(
            content_id=item_id,
            phase=phase,
            level=FidelityLevel(level) if level in known else None,
            reason=str(record.get("reason", "")),
            original_tokens=int(record.get("original_tokens", 0)),
            final_tokens=int(record.get("final_tokens", 0)),
            rank=None if rank is None else int(rank),
            protected=bool(record.get("protected", False)),
            warnings=[str(code) for code in record.get("warnings", [])],
            archive_hash=None if hash_ is None else str(hash_),
            recorded_at=_timestamp(stamp),
        )


@strawberry.type(description="The archive hash of one evidence unit's whole text.")
class ReportArchiveHash:
    content_id: str
    hash: str = strawberry.field(description='"sha256:<hex>".')


def _timestamp(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


@strawberry.type(
    description="One evidence unit with every phase it passed through, in order: its history "
    "(a phase written again keeps only its latest record)."
)
class ReportItemPhases:
    content_id: str = strawberry.field(
        description="The evidence unit (ids as in droppedContentIds and ReportWarning.itemIds)."
    )
    level: FidelityLevel | None = strawberry.field(
        description="What the unit ended as: its last phase's level."
    )
    phases: list[ReportItemFidelity] = strawberry.field(
        description="Gathering, refinement, synthesis, final_fit: those it passed through."
    )


def item_phases(stored: dict[str, Any]) -> list[ReportItemPhases]:
    """The stored per-item records ({id: {phases: {phase: record}}}, fidelity-v1 or v2) grouped
    by item, each item's phases in phase order, the items by their rank in the writer's fitting
    (the database's JSON keeps no key order), then id."""
    items = []
    for item_id, entry in stored.items():
        phases = ordered_phases(entry.get("phases") or {})
        records = [
            ReportItemFidelity.from_json(str(item_id), str(phase), dict(record))
            for phase, record in phases.items()
        ]
        items.append(
            ReportItemPhases(
                content_id=str(item_id),
                level=records[-1].level if records else None,
                phases=records,
            )
        )

    def rank(item: ReportItemPhases) -> tuple[bool, int, str]:
        ranks = [record.rank for record in item.phases if record.rank is not None]
        return (not ranks, ranks[-1] if ranks else 0, item.content_id)

    return sorted(items, key=rank)


def item_fidelity(stored: dict[str, Any]) -> list[ReportItemFidelity]:
    """The stored per-item records, one per item and phase: the items as `item_phases` orders
    them, each item's phases in phase order."""
    return [record for item in item_phases(stored) for record in item.phases]


def archive_hashes(
    stored: dict[str, Any], items: list[ReportItemFidelity]
) -> list[ReportArchiveHash]:
    """The stored hashes by content id, in the per-item records' order (then by id)."""
    order = {item.content_id: place for place, item in reversed(list(enumerate(items)))}
    return [
        ReportArchiveHash(content_id=str(item_id), hash=str(digest))
        for item_id, digest in sorted(
            stored.items(), key=lambda pair: (order.get(pair[0], len(order)), pair[0])
        )
    ]


@strawberry.type(
    description="A degradation of the report (warning codes such as "
    "CONTENT_TRUNCATED, CONTENT_DROPPED, PRIORITY_SUMMARIZED, PROTECTED_OVERFLOW, "
    "TOKEN_BUDGET_FLOORED, ARCHIVE_WRITE_FAILED; llm_writer_failed, re_ask_failed)."
)
class ReportWarning:
    code: str
    message: str
    phase: str | None
    item_ids: list[str] = strawberry.field(
        description="The evidence units it concerns (ids as in droppedContentIds), if any."
    )

    @classmethod
    def from_json(cls, warning: dict[str, Any]) -> ReportWarning:
        phase = warning.get("phase")
        return cls(
            code=str(warning.get("code", "")),
            message=str(warning.get("message", "")),
            phase=None if phase is None else str(phase),
            item_ids=[str(i) for i in warning.get("item_ids", [])],
        )


@strawberry.type(
    description="An answer to a question across channels and documents, every "
    "sentence citing S1..Sn sources."
)
class Report(relay.Node):
    id: relay.NodeID[int]
    question: str
    title: str
    markdown: str = strawberry.field(description="The report with `[^n]` footnotes.")
    request: JSON = strawberry.field(
        description="What was asked: channel_ids, document_ids, since, until (row ids, ISO times)."
    )
    sections: list[ReportSection]
    sources: list[ReportSource]
    audit: ReportAudit
    writer: str = strawberry.field(
        description='Who wrote it: "extractive-5" (offline) or "llm:MODEL:PROMPT_VERSION:MAX_UNITS".'
    )
    fidelity: list[ReportFidelityRecord] = strawberry.field(
        description="How the evidence was fitted to the writer model's budget (empty offline)."
    )
    warnings: list[ReportWarning]
    dropped_content_ids: list[str] = strawberry.field(
        description="Evidence units not given to the model (source key, and the span of a "
        "message), lowest priority last."
    )
    content_fidelity_schema_version: str = strawberry.field(
        description='The version of the contentFidelity records ("fidelity-v2"; a report '
        'stored with "fidelity-v1" has one phase per unit, synthesis).'
    )
    content_fidelity: list[ReportItemFidelity] = strawberry.field(
        description="Each phase's record of each evidence unit the writer's fitting considered "
        "(at most the writer's unit cap, plus protected units), by rank, each unit's phases in "
        "order; empty offline."
    )
    content_fidelity_items: list[ReportItemPhases] = strawberry.field(
        description="The same records grouped by evidence unit: each unit's phases in order "
        "and what it ended as; empty offline."
    )
    content_archive_hashes: list[ReportArchiveHash] = strawberry.field(
        description="The archived whole text of each unit cut or dropped (when archiving is on)."
    )
    research: JSON | None = strawberry.field(
        description="How the evidence was gathered: {method (rules or model), sub_questions: "
        "[{text, gathered, cited}], refinement: {ran, open_points: [{reason, text, terms}], "
        "added, added_cited}, document_digests: [{document_id, digest_id, snippets, "
        "snippets_left_out}]}; null for a report stored before it was recorded."
    )
    job_id: strawberry.ID | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: models.Report) -> Report:
        sources = {
            str(e["id"]): ReportSource.from_json(e, _citing_sections(row.sections, str(e["id"])))
            for e in row.sources
        }

        def citation(entry: dict[str, Any]) -> ReportCitation:
            source = sources[str(entry["source_id"])]
            return ReportCitation(
                source_id=source.id,
                footnote=source.footnote,
                source=source,
                span=source.spans[int(entry.get("span", 0))],
            )

        sections = [
            ReportSection(
                heading=section.get("heading"),
                bullets=bool(section.get("bullets")),
                sentences=[
                    ReportSentence(
                        text=str(sentence["text"]),
                        citations=[citation(entry) for entry in _citations(sentence)],
                    )
                    for sentence in section.get("sentences", [])
                ],
            )
            for section in row.sections
        ]
        grouped = item_phases(row.fidelity.get("content_fidelity") or {})
        items = [record for item in grouped for record in item.phases]
        return cls(
            id=row.id,
            question=row.question,
            title=row.title,
            markdown=row.markdown,
            request=cast(JSON, row.request),
            sections=sections,
            sources=list(sources.values()),
            audit=ReportAudit.from_json(row.audit),
            writer=row.writer,
            fidelity=[ReportFidelityRecord.from_json(r) for r in row.fidelity.get("fidelity", [])],
            warnings=[ReportWarning.from_json(w) for w in row.fidelity.get("warnings", [])],
            dropped_content_ids=[str(i) for i in row.fidelity.get("dropped_content_ids", [])],
            content_fidelity_schema_version=str(
                row.fidelity.get(
                    "content_fidelity_schema_version",
                    EMPTY_FIDELITY["content_fidelity_schema_version"],
                )
            ),
            content_fidelity=items,
            content_fidelity_items=grouped,
            content_archive_hashes=archive_hashes(
                row.fidelity.get("content_archive_hashes") or {}, items
            ),
            research=cast(JSON, row.fidelity.get("research")),
            job_id=optional_global_id(DIGEST_JOB, row.job_id),
            created_at=row.created_at,
        )


def _citations(sentence: dict[str, Any]) -> list[dict[str, Any]]:
    """A stored sentence's citations, each {source_id, span}; a report stored before citations
    named their span cites the one span each of its sources had."""
    stored = sentence.get("citations")
    if stored is not None:
        return list(stored)
    return [{"source_id": i, "span": 0} for i in sentence["source_ids"]]


def _citing_sections(sections: list[dict[str, Any]], identifier: str) -> tuple[list[str], int]:
    """Headings of the stored sections with a sentence citing `identifier`, and how many
    sentences cite it (for a report stored before its sources said so)."""
    headings: dict[str, None] = {}
    count = 0
    for section in sections:
        for sentence in section.get("sentences", []):
            if identifier in sentence.get("source_ids", []):
                headings.setdefault(str(section.get("heading") or ""), None)
                count += 1
    return list(headings), count
