"""GraphQL types of jobs (channel digests, document digests, reports): status, phase, progress
and stats, built from the stored job row (`DigestJob.from_row`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, cast

import strawberry
from strawberry import relay
from strawberry.scalars import JSON
from strawberry.types import Info

from db import jobs, models
from runner.core.job_options import ChannelDigestOptions, DocumentDigestOptions
from runner.core.progress import eta_seconds
from schema.context import Context
from schema.types.channel import Channel
from schema.types.document import DocumentDigest
from schema.types.enums import JobPhase, JobStatus
from schema.types.ids import (
    CHANNEL,
    DIGEST,
    DIGEST_JOB,
    DOCUMENT,
    DOCUMENT_DIGEST,
    REPORT,
    global_id,
    optional_global_id,
)
from schema.types.report import Report
from schema.types.shared import Flag

if TYPE_CHECKING:
    from schema.types.digest import Digest


@strawberry.type(description="How far a job is, for a progress bar.")
class JobProgress:
    chunks_done: int = strawberry.field(
        description="Chunks of the map done (a report: its sub-questions gathered, then its "
        "refinement round); never goes back, and never passes chunksTotal."
    )
    chunks_total: int = strawberry.field(
        description="Chunks the map was planned in: 0 until the plan is made (before MAP "
        "starts), then fixed for the rest of the job."
    )
    fraction: float = strawberry.field(
        description="The whole job done, 0 to 1, across all phases (the map weighs most); "
        "never goes back, and is 1 once the job succeeded (or ended PARTIAL)."
    )
    eta_seconds: float | None = strawberry.field(
        description="Seconds left at the pace so far, for a running job once the map has "
        "shown its pace (5% of its chunks or 3 of them); null before and once the job ended."
    )

    @classmethod
    def of(cls, row: models.DigestJob, now: datetime) -> JobProgress:
        eta = None
        if row.status == jobs.JobStatus.RUNNING and row.started_at is not None:
            eta = eta_seconds(
                JobPhase(row.phase),
                row.chunks_done,
                row.chunks_total,
                row.progress_fraction,
                (now - row.started_at).total_seconds(),
            )
        return cls(
            chunks_done=row.chunks_done,
            chunks_total=row.chunks_total,
            fraction=row.progress_fraction,
            eta_seconds=None if eta is None else round(eta, 1),
        )


@strawberry.type
class JobStats:
    messages: int | None = None
    chunks: int | None = None
    chunks_from_cache: int | None = None
    chunks_failed: int | None = None
    chunks_offline: int | None = strawberry.field(
        default=None,
        description="Chunks the model could not extract that the offline rules read instead.",
    )
    extractor: str | None = None
    llm_calls: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    content_tokens: int | None = None
    prompt_to_content_ratio: float | None = None
    items_rejected: int | None = None
    items_flagged: int | None = None
    tokens_estimated: bool | None = None
    duration_seconds: float | None = None
    cache_hit: bool | None = strawberry.field(
        default=None, description="Document jobs: the digest was served from the cache."
    )
    summarizer_calls: int | None = None
    summary_offline: bool | None = strawberry.field(
        default=None,
        description="Document jobs: the model failed and the offline rules wrote the summary "
        "and key points instead.",
    )
    original_chars: int | None = None
    digest_chars: int | None = None
    compression_ratio: float | None = None
    evidence_snippets: int | None = None
    final_tokens: int | None = None

    @classmethod
    def from_json(cls, stats: dict[str, Any]) -> JobStats:
        known = {name for name in cls.__annotations__}
        return cls(**{key: value for key, value in stats.items() if key in known})


@strawberry.type(
    description="One slice of a channel backlog larger than DIGESTD_MAX_WINDOW_MESSAGES: a "
    "coverage digest of the uncovered messages from the first through the last (in time order, "
    "both included), one of `count` slices that workers digest at once."
)
class CoverageSlice:
    batch_id: strawberry.ID = strawberry.field(
        description="The coverage job that cut the backlog; "
        "digestJobs(filter: {batchId}) lists its slices."
    )
    index: int = strawberry.field(description="1-based, in time order.")
    count: int
    first_at: datetime
    last_at: datetime
    message_count: int = strawberry.field(description="Uncovered messages in it when it was cut.")

    @classmethod
    def of(cls, options: dict[str, Any] | None) -> CoverageSlice | None:
        piece = ChannelDigestOptions.parse(options).slice
        if piece is None:
            return None
        assert piece.first_at is not None and piece.last_at is not None
        return cls(
            batch_id=global_id(DIGEST_JOB, piece.batch),
            index=piece.index,
            count=piece.count,
            first_at=piece.first_at,
            last_at=piece.last_at,
            message_count=piece.messages,
        )


# A job's stats, warnings, query and coverage slice parse the row's JSON columns, so they are
# built only when a query asks for them: a poller reading status and progress pays for none.
def _job_stats(root: DigestJob) -> JobStats:
    return JobStats.from_json(root.row.stats or {})


def _job_warnings(root: DigestJob) -> list[Flag]:
    return Flag.many(root.row.warnings or [])


def _job_query(root: DigestJob) -> str | None:
    if root.row.kind != jobs.JobKind.DOCUMENT:
        return None
    return DocumentDigestOptions.parse(root.row.options).query


def _job_coverage_slice(root: DigestJob) -> CoverageSlice | None:
    if root.row.kind != jobs.JobKind.CHANNEL:
        return None
    return CoverageSlice.of(root.row.options)


@strawberry.type
class DigestJob(relay.Node):
    id: relay.NodeID[int]
    kind: str = strawberry.field(
        description='What the job makes: "channel" (a channel digest), "document" (a document '
        'digest) or "report".'
    )
    channel_id: strawberry.ID | None
    status: JobStatus
    phase: JobPhase
    progress: JobProgress
    attempts: int
    max_attempts: int
    error: str | None
    result_message: str | None = strawberry.field(description='E.g. "no new messages".')
    cancel_requested: bool
    stats: JobStats = strawberry.field(resolver=_job_stats)
    warnings: list[Flag] = strawberry.field(resolver=_job_warnings)
    digest_id: strawberry.ID | None
    document_id: strawberry.ID | None = strawberry.field(description="Document jobs: the document.")
    document_digest_id: strawberry.ID | None = strawberry.field(
        description="Document jobs: the digest produced or served from the cache."
    )
    query: str | None = strawberry.field(
        resolver=_job_query, description="Document jobs: the query digested for."
    )
    report_id: strawberry.ID | None = strawberry.field(
        description="Report jobs: the report written or served from the cache."
    )
    options: JSON = strawberry.field(
        description='What was asked: e.g. {"chunk_tokens": 1500}; a catch-up window stores '
        '{"since": iso, "until": iso}; a coverage slice {"slice": {...}} (see coverageSlice).'
    )
    coverage_slice: CoverageSlice | None = strawberry.field(
        resolver=_job_coverage_slice,
        description="Channel jobs cut from a backlog larger than DIGESTD_MAX_WINDOW_MESSAGES: "
        "which slice of it this job digests.",
    )
    created_at: datetime
    started_at: datetime | None = strawberry.field(
        description="When a worker first claimed the job (a retry keeps it)."
    )
    finished_at: datetime | None
    duration_seconds: float | None = strawberry.field(
        description="From startedAt to finishedAt, or to now while the job runs; null while "
        "it waits for a worker."
    )
    updated_at: datetime
    row: strawberry.Private[models.DigestJob]

    @classmethod
    def from_row(cls, row: models.DigestJob) -> DigestJob:
        now = datetime.now(UTC)
        end = row.finished_at or (now if row.status == jobs.JobStatus.RUNNING else None)
        return cls(
            id=row.id,
            kind=row.kind,
            channel_id=optional_global_id(CHANNEL, row.channel_id),
            status=JobStatus(row.status),
            phase=JobPhase(row.phase),
            progress=JobProgress.of(row, now),
            attempts=row.attempts,
            max_attempts=row.max_attempts,
            error=row.error,
            result_message=row.result_message,
            cancel_requested=row.cancel_requested,
            digest_id=optional_global_id(DIGEST, row.digest_id),
            document_id=optional_global_id(DOCUMENT, row.document_id),
            document_digest_id=optional_global_id(DOCUMENT_DIGEST, row.document_digest_id),
            report_id=optional_global_id(REPORT, row.report_id),
            options=cast(JSON, row.options or {}),
            created_at=row.created_at,
            started_at=row.started_at,
            finished_at=row.finished_at,
            duration_seconds=(
                round(max(0.0, (end - row.started_at).total_seconds()), 3)
                if row.started_at is not None and end is not None
                else None
            ),
            updated_at=row.updated_at,
            row=row,
        )

    @strawberry.field
    async def channel(self, info: Info[Context, None]) -> Channel | None:
        if self.row.channel_id is None:
            return None
        row = await info.context.loaders.channel.load(self.row.channel_id)
        return Channel.from_row(row) if row else None

    @strawberry.field(description="Report jobs: the report, once there is one.")
    async def report(self, info: Info[Context, None]) -> Report | None:
        if self.row.report_id is None:
            return None
        row = await info.context.loaders.report.load(self.row.report_id)
        return Report.from_row(row) if row else None

    @strawberry.field(description="Document jobs: the digest, once there is one.")
    async def document_digest(self, info: Info[Context, None]) -> DocumentDigest | None:
        if self.row.document_digest_id is None:
            return None
        row = await info.context.loaders.document_digest.load(self.row.document_digest_id)
        return DocumentDigest.from_row(row) if row else None

    # The one import cycle among the schema's types: a Digest links to the job that made it
    # (Digest.job) and a job to the digest it made (here). schema/types/digest.py imports this
    # module; this side names Digest lazily, and imports it only when the field resolves.
    @strawberry.field(description="The digest this job produced, once it has.")
    async def digest(
        self, info: Info[Context, None]
    ) -> Annotated[Digest, strawberry.lazy("schema.types.digest")] | None:
        from schema.types.digest import Digest

        if self.row.digest_id is None:
            return None
        row = await info.context.loaders.digest.load(self.row.digest_id)
        return Digest.from_row(row) if row else None
