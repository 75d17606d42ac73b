"""Mutations: ingest messages, trigger a digest, cancel a job (documents: schema/resolvers/documents.py;
reports: schema/resolvers/reports.py; schedules: schema/resolvers/schedules.py; chat export
uploads: schema/resolvers/imports.py; deletions, admins only: schema/resolvers/deletions.py).
Writers only.

Expected failures (an unknown channel, a bad input) come back as typed results in the union, so
a client handles them without parsing error strings; GraphQL errors are left for bugs, limits and
permissions.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.scalars import JSON
from strawberry.types import Info

from db import jobs as job_queries
from db.ingest import ChannelKey, MessageIngestor
from runner.core.display_names import name_problem
from runner.grounding.normalize import normalize_text
from runner.importers.records import RecordError as ParseError
from runner.importers.records import message_from_fields
from runner.triggers import TriggerRefused, trigger_channel_digest
from schema.context import Context
from schema.gate.permissions import IsWriter
from schema.resolvers.catchup import CatchUpMutations
from schema.resolvers.deletions import DeletionMutations
from schema.resolvers.deliveries import DeliveryMutations
from schema.resolvers.documents import DocumentMutations
from schema.resolvers.imports import ImportMutations
from schema.resolvers.reports import ReportMutations
from schema.resolvers.schedules import ScheduleMutations
from schema.types.channel import Channel
from schema.types.ids import CHANNEL, DIGEST_JOB, IdArgument
from schema.types.job import DigestJob
from schema.types.shared import (
    InvalidInputError,
    NotFoundError,
    RecordError,
    not_found,
    parse_id_or_error,
    refusal,
)


@strawberry.input
class ChannelInput:
    name: str
    server: str | None = None
    external_id: str | None = None


@strawberry.input
class MessageInput:
    id: str = strawberry.field(description="The external message id (a string).")
    author: str
    ts: datetime
    text: str
    reply_to: str | None = None
    attachments: JSON | None = None


@strawberry.input
class DigestOptions:
    chunk_tokens: int | None = strawberry.field(
        default=None, description="Token budget of one map chunk (200 to 32000)."
    )
    since: datetime | None = strawberry.field(
        default=None,
        description="Catch-up window start (inclusive, message ts). With since and/or until, the "
        "digest reads exactly the messages in [since, until) and changes no coverage.",
    )
    until: datetime | None = strawberry.field(
        default=None, description="Catch-up window end (exclusive, message ts)."
    )


@strawberry.type
class IngestResult:
    channel: Channel
    accepted: int
    rejected: int
    inserted: int
    updated: int
    unchanged: int
    errors: list[RecordError] = strawberry.field(description="The first 20 rejected records.")


IngestMessagesResult = Annotated[
    IngestResult | InvalidInputError, strawberry.union("IngestMessagesResult")
]
TriggerDigestResult = Annotated[
    DigestJob | NotFoundError | InvalidInputError, strawberry.union("TriggerDigestResult")
]
CancelJobResult = Annotated[
    DigestJob | NotFoundError | InvalidInputError, strawberry.union("CancelJobResult")
]

MAX_ERRORS_SHOWN = 20


@strawberry.type
class Mutation(
    DocumentMutations,
    ReportMutations,
    ScheduleMutations,
    ImportMutations,
    DeletionMutations,
    CatchUpMutations,
    DeliveryMutations,
):
    @strawberry.mutation(
        permission_classes=[IsWriter],
        description="Store messages of one channel (upsert on channel + message id).",
    )
    async def ingest_messages(
        self, info: Info[Context, None], channel: ChannelInput, messages: list[MessageInput]
    ) -> IngestMessagesResult:
        config = info.context.config
        if len(messages) > config.max_ingest_batch:
            return InvalidInputError(
                message=f"too many messages in one call: {len(messages)} "
                f"(at most {config.max_ingest_batch}; send several calls)"
            )
        # Names are shown on one line (report headings, footnotes): a typed name that is not
        # one line is refused, not rewritten into a name the caller did not choose.
        for field_name, value in (
            ("channel.name", channel.name),
            ("channel.server", channel.server),
        ):
            if field_name == "channel.server" and not (value or "").strip():
                continue  # no server: the channel stands alone
            problem = name_problem(value or "")
            if problem:
                return InvalidInputError(message=f"{field_name} {problem}")
        name = channel.name.strip()
        server = channel.server.strip() if channel.server and channel.server.strip() else None
        ingestor = MessageIngestor(info.context.pool, normalize_text)
        key = ChannelKey(server=server, channel=name, channel_external_id=channel.external_id)
        errors: list[ParseError] = []
        rejected = 0
        for index, message in enumerate(messages):
            parsed = message_from_fields(
                location=f"messages[{index}]",
                external_id=message.id,
                author=message.author,
                ts=message.ts,
                text=message.text,
                reply_to=message.reply_to,
                attachments=message.attachments,
                max_message_chars=config.max_message_chars,
            )
            if isinstance(parsed, ParseError):
                rejected += 1
                if len(errors) < MAX_ERRORS_SHOWN:
                    errors.append(parsed)
                continue
            # A connection lost while writing (db.ingest ends such a batch at once) is an
            # outage the client retries: schema.errors reports it as UNAVAILABLE. Batches
            # already committed stay; the same call again stores the rest.
            await ingestor.add(key, parsed)
        await ingestor.flush()
        channel_id = await ingestor.channel_id(key)
        row = await info.context.loaders.channel.load(channel_id)
        assert row is not None  # the ingestor has just found or created it
        counts = ingestor.counts
        return IngestResult(
            channel=Channel.from_row(row),
            accepted=counts.received,
            rejected=rejected,
            inserted=counts.inserted,
            updated=counts.updated,
            unchanged=counts.unchanged,
            errors=[RecordError(location=e.location, reason=e.reason) for e in errors],
        )

    @strawberry.mutation(
        permission_classes=[IsWriter],
        description="Queue a digest of the channel's messages no digest covers yet (or, with "
        "options.since/until, of exactly that time range) and return the job at once. If one "
        "for the same window is already queued or running, that job is returned instead.",
    )
    async def trigger_digest(
        self,
        info: Info[Context, None],
        channel_id: IdArgument,
        options: DigestOptions | None = None,
    ) -> TriggerDigestResult:
        channel_key = parse_id_or_error(channel_id, CHANNEL)
        if isinstance(channel_key, InvalidInputError):
            return channel_key
        options = options or DigestOptions()
        try:
            async with info.context.pool.acquire() as connection:
                job, _created = await trigger_channel_digest(
                    connection,
                    channel_key,
                    chunk_tokens=options.chunk_tokens,
                    since=options.since,
                    until=options.until,
                    max_attempts=info.context.config.max_attempts,
                )
        except TriggerRefused as refused:
            return refusal(refused, {("channel", channel_key): channel_id})
        return DigestJob.from_row(job)

    @strawberry.mutation(
        permission_classes=[IsWriter],
        description=(
            "Cancel a job: a queued one at once, a running one at its next checkpoint. On a job "
            "that split its channel's backlog into coverage slices, the slices still queued or "
            "running are cancelled (the job itself has ended and stays as it was)."
        ),
    )
    async def cancel_job(self, info: Info[Context, None], id: IdArgument) -> CancelJobResult:
        job_id = parse_id_or_error(id, DIGEST_JOB)
        if isinstance(job_id, InvalidInputError):
            return job_id
        async with info.context.pool.acquire() as connection:
            row = await job_queries.cancel_job(connection, job_id)
        if row is None:
            return not_found("job", id)
        return DigestJob.from_row(row)
