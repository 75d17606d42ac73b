"""The report fields of the API: `triggerReport` (writers), the `report` query and the `reports`
list (newest first). `Query` and
`Mutation` inherit them; a report is also a Relay node (`node(id:)`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from db import pages
from runner.triggers import TriggerRefused, trigger_report
from schema.context import Context
from schema.gate.permissions import IsWriter
from schema.types.connections import Connection
from schema.types.ids import CHANNEL, DOCUMENT, REPORT, IdArgument, parse_id, parse_optional_id
from schema.types.job import DigestJob
from schema.types.paging import After, Before, First, Last, PageArgs, connection_of
from schema.types.report import Report
from schema.types.shared import InvalidInputError, NotFoundError, parse_id_or_error, refusal


@strawberry.input(
    description="What a report reads: channels (their messages in [since, until)) "
    "and documents; at least one of them."
)
class ReportSources:
    channel_ids: list[strawberry.ID] = strawberry.field(default_factory=list)
    document_ids: list[strawberry.ID] = strawberry.field(default_factory=list)
    since: datetime | None = strawberry.field(
        default=None, description="Messages from (inclusive, message ts); documents are whole."
    )
    until: datetime | None = strawberry.field(default=None, description="Messages before.")


@strawberry.input(description="Reports that read a channel and/or a document.")
class ReportFilter:
    channel_id: strawberry.ID | None = None
    document_id: strawberry.ID | None = None


TriggerReportResult = Annotated[
    DigestJob | NotFoundError | InvalidInputError, strawberry.union("TriggerReportResult")
]


@strawberry.type
class ReportQueries:
    @strawberry.field(description="One report: sections, cited sources, Markdown and audit.")
    async def report(self, info: Info[Context, None], id: IdArgument) -> Report | None:
        row = await info.context.loaders.report.load(parse_id(id, REPORT))
        return Report.from_row(row) if row else None

    @strawberry.field(description="Reports, newest first.")
    async def reports(
        self,
        info: Info[Context, None],
        filter: ReportFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Report] | None:
        filter = filter or ReportFilter()
        filters = {
            "channel_id": parse_optional_id(filter.channel_id, CHANNEL),
            "document_id": parse_optional_id(filter.document_id, DOCUMENT),
        }
        args = PageArgs(first, after, last, before, default_size=20)
        return await connection_of(info, pages.REPORTS, filters, args, Report.from_row)


@strawberry.type
class ReportMutations:
    @strawberry.mutation(
        permission_classes=[IsWriter],
        description="Queue a report answering the question from the chosen channels and "
        "documents, every sentence citing S1..Sn sources, and return the job at once (poll it, "
        "cancel it or follow jobProgress like any job; `report` once it succeeded). A queued or "
        "running job for the same request is returned instead; an unchanged re-run is served "
        "from the stored report.",
    )
    async def trigger_report(
        self, info: Info[Context, None], question: str, sources: ReportSources
    ) -> TriggerReportResult:
        channel_ids: list[int] = []
        document_ids: list[int] = []
        sent: dict[tuple[str, int], str] = {}
        for values, type_name, subject, into in (
            (sources.channel_ids, CHANNEL, "channel", channel_ids),
            (sources.document_ids, DOCUMENT, "document", document_ids),
        ):
            for value in values:
                key = parse_id_or_error(value, type_name)
                if isinstance(key, InvalidInputError):
                    return key
                into.append(key)
                sent.setdefault((subject, key), value)
        try:
            async with info.context.pool.acquire() as connection:
                job, _created = await trigger_report(
                    connection,
                    question,
                    channel_ids=channel_ids,
                    document_ids=document_ids,
                    since=sources.since,
                    until=sources.until,
                    max_attempts=info.context.config.max_attempts,
                )
        except TriggerRefused as refused:
            return refusal(refused, sent)
        return DigestJob.from_row(job)
