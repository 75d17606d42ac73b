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
from runner.reports.sources import source_number
from schema.context import Context
from schema.types.ids import DIGEST_JOB, DOCUMENT, MESSAGE, optional_global_id


@strawberry.type(description="A source a report cites: a message revision or a document span.")
class ReportSource:
    id: str = strawberry.field(description='"S1", "S2", ...: numbered by first appearance.')
    footnote: int = strawberry.field(description="Its `[^n]` number in the Markdown (n of Sn).")
    kind: str = strawberry.field(description='"message" or "document".')
    quote: str = strawberry.field(description="The exact cited characters.")
    channel_name: str | None
    message_id: strawberry.ID | None = strawberry.field(description="Message sources: the message.")
    external_id: str | None
    revision: int | None = strawberry.field(
        description="Message sources: the revision read; revisionText[charStart:charEnd] = quote."
    )
    author: str | None
    ts: datetime | None
    char_start: int | None
    char_end: int | None
    document_id: strawberry.ID | None = strawberry.field(description="Document sources.")
    document_title: str | None
    locator: str | None = strawberry.field(
        description="Document sources: char:S-E or page:N:char:S-E of its canonical text."
    )
    message_row: strawberry.Private[int | None] = None

    @strawberry.field(
        description="Message sources: the full normalized text of the cited revision (immutable, "
        "even after the message was edited): quote is revisionText[charStart:charEnd]."
    )
    async def revision_text(self, info: Info[Context, None]) -> str | None:
        if self.message_row is None or self.revision is None:
            return None
        return await info.context.loaders.revision_text.load((self.message_row, self.revision))

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> ReportSource:
        message = entry["kind"] == "message"
        document = not message
        return cls(
            id=str(entry["id"]),
            footnote=source_number(str(entry["id"])) or 0,
            kind=str(entry["kind"]),
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


@strawberry.type
class ReportCitation:
    source_id: str
    footnote: int
    source: ReportSource


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
        description='"none" (it fitted), "cap", "floor", "truncate" or "drop".'
    )
    original_tokens: int
    final_tokens: int
    reason: str = strawberry.field(
        description='"within_budget", "unit_cap", "budget_floor" or "budget_limit".'
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
    description="A degradation of the report (warning codes such as "
    "CONTENT_TRUNCATED, CONTENT_DROPPED, TOKEN_BUDGET_FLOORED; llm_writer_failed, "
    "re_ask_failed)."
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
        description='Who wrote it: "extractive-4" (offline) or "llm:MODEL:PROMPT_VERSION:MAX_UNITS".'
    )
    fidelity: list[ReportFidelityRecord] = strawberry.field(
        description="How the evidence was fitted to the writer model's budget (empty offline)."
    )
    warnings: list[ReportWarning]
    dropped_content_ids: list[str] = strawberry.field(
        description="Evidence units not given to the model (source key, and the span of a "
        "message), lowest priority last."
    )
    job_id: strawberry.ID | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: models.Report) -> Report:
        sources = {str(e["id"]): ReportSource.from_json(e) for e in row.sources}
        sections = [
            ReportSection(
                heading=section.get("heading"),
                bullets=bool(section.get("bullets")),
                sentences=[
                    ReportSentence(
                        text=str(sentence["text"]),
                        citations=[
                            ReportCitation(
                                source_id=i, footnote=sources[i].footnote, source=sources[i]
                            )
                            for i in sentence["source_ids"]
                        ],
                    )
                    for sentence in section.get("sentences", [])
                ],
            )
            for section in row.sections
        ]
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
            job_id=optional_global_id(DIGEST_JOB, row.job_id),
            created_at=row.created_at,
        )
