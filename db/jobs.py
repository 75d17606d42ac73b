"""The job queue in Postgres: enqueue, claim with a lease, heartbeat, finish, fail, cancel.

Workers on any number of machines share it safely: claims use FOR UPDATE SKIP LOCKED, leases
expire when a worker dies (any worker then reclaims the job), and a worker only changes a job it
still holds (`worker_id` matches and the job is running).

The lifecycle of a job (`digest_jobs.status`, table in db/migrations/0001_init.sql), the same for
every `JobKind`:

    enqueue_job                    → queued     (at most one active job per channel window, or
                                                 per document and query hash, or per report
                                                 request)
    queued  → running              claim_next_job: a worker holds it under a lease
    running → succeeded|partial    finish_job: the job ends with what it produced (a digest_id or
                                   a document_digest_id), committed with the digest itself
    running → queued               fail_job with attempts left (run_after = now() + backoff), or
                                   release_job on graceful shutdown (the attempt not counted)
    running → failed               fail_job with no attempt left, finish_job(FAILED) for a job
                                   that cannot succeed, or its lease expired on its last attempt
    queued|running → cancelled     cancel_job (a running job stops at its next check)
    running (lease expired)        reclaimed by any worker as if queued

`ACTIVE` statuses hold a job slot (the partial unique indexes); `TERMINAL` ones never change.

Every change after the enqueue (claim, progress, finish, fail or retry, cancel, release, lease
expiry) notifies `JOB_EVENTS_CHANNEL` with the job id, in the statement that makes it, so the
API's jobProgress subscription (server/job_events.py) learns of it when it commits.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import asyncpg

from db.deliveries import enqueue_job_deliveries
from db.models import DigestJob, as_row, as_row_or_none, as_rows
from db.queries import QUERIES

JOBS_CHANNEL = "digestd_jobs"
# Payload: the id of a job that changed (db/queries.sql sends it; subscribers re-read the row).
JOB_EVENTS_CHANNEL = "digestd_job_events"


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    PARTIAL = "partial"
    FAILED = "failed"
    CANCELLED = "cancelled"


class JobKind(StrEnum):
    CHANNEL = "channel"
    DOCUMENT = "document"
    REPORT = "report"


ACTIVE: frozenset[JobStatus] = frozenset({JobStatus.QUEUED, JobStatus.RUNNING})
TERMINAL: frozenset[JobStatus] = frozenset(JobStatus) - ACTIVE

# Per kind: the insert that yields nothing while an active job holds the slot, and the read of
# that active job. Both take (subject id, options); a report's subject is its request, so its
# two take (options) alone.
_ENQUEUE_QUERIES: dict[JobKind, tuple[str, str]] = {
    JobKind.CHANNEL: ("insert_channel_job", "active_channel_job"),
    JobKind.DOCUMENT: ("insert_document_job", "active_document_job"),
    JobKind.REPORT: ("insert_report_job", "active_report_job"),
}


async def enqueue_job(
    connection: asyncpg.Connection,
    kind: JobKind,
    subject_id: int | None,
    options: dict[str, Any],
    *,
    max_attempts: int,
) -> tuple[DigestJob, bool]:
    """Queue a job of `kind` on its subject (a channel id, a document id, or None for a report,
    whose subject is its request in `options`), or return the
    queued/running one that holds the same slot. Returns (job, created).

    The slot: a channel has one active job per window, the coverage digest (no since/until in
    `options`), each explicit catch-up window (`options` "since"/"until", canonical ISO
    strings) and each coverage slice (`options` "slice") apart; while slices of a channel are
    active, a coverage digest is not queued and the job that split the backlog is returned
    instead. A document has one per `options["query_hash"]`.

    The partial unique index makes a duplicate impossible; when the insert yields nothing, the
    active job is read. If that job finished in between, the insert is simply tried again."""
    insert, active = _ENQUEUE_QUERIES[kind]
    subject = () if kind == JobKind.REPORT else (subject_id,)
    for _ in range(5):
        async with connection.transaction():
            job = await connection.fetchrow(QUERIES[insert], *subject, options, max_attempts)
            if job is not None:
                await connection.execute(QUERIES["notify_jobs"], str(job["id"]))
                return as_row(DigestJob, job), True
            existing = await connection.fetchrow(QUERIES[active], *subject, options)
            if existing is not None:
                return as_row(DigestJob, existing), False
    raise RuntimeError(f"could not queue a {kind} digest of {subject_id}: too much contention")


async def active_slice_batch(connection: asyncpg.Connection, channel_id: int) -> int | None:
    """The job whose backlog the channel's active coverage slices digest, if any are active."""
    batch: int | None = await connection.fetchval(QUERIES["active_slice_batch"], channel_id)
    return batch


async def slices_of_batch(
    connection: asyncpg.Connection, channel_id: int, batch_job_id: int
) -> list[DigestJob]:
    """The slice jobs a coverage job split its channel's backlog into, in slice order."""
    return as_rows(
        DigestJob, await connection.fetch(QUERIES["slices_of_batch"], channel_id, batch_job_id)
    )


async def claim_next_job(
    connection: asyncpg.Connection, worker_id: str, lease_seconds: float
) -> DigestJob | None:
    """Claim the next runnable job. Jobs whose lease expired with no attempt left are ended
    FAILED (`lease_expired: ...`) first, so they are never claimed again."""
    async with connection.transaction():
        # A job ended this way is ended like any other: its deliveries (job.failed) go with it.
        for expired in await connection.fetch(QUERIES["expire_exhausted_leases"]):
            await enqueue_job_deliveries(connection, expired["id"])
    claimed = await connection.fetchrow(QUERIES["claim_next_job"], worker_id, lease_seconds)
    return as_row_or_none(DigestJob, claimed)


async def heartbeat(
    connection: asyncpg.Connection, job_id: int, worker_id: str, lease_seconds: float
) -> bool | None:
    """Renew the lease. Returns cancel_requested, or None when this worker lost the job."""
    row = await connection.fetchrow(QUERIES["heartbeat_job"], job_id, worker_id, lease_seconds)
    return None if row is None else bool(row["cancel_requested"])


async def release_job(
    connection: asyncpg.Connection, job_id: int, worker_id: str
) -> DigestJob | None:
    """Give a held job back (graceful shutdown): queued, due now, the attempt not counted, and
    the workers woken so another one takes it over at once. None when this worker lost it."""
    async with connection.transaction():
        released = await connection.fetchrow(QUERIES["release_job"], job_id, worker_id)
        if released is not None:
            await connection.execute(QUERIES["notify_jobs"], str(job_id))
    return as_row_or_none(DigestJob, released)


async def update_progress(
    connection: asyncpg.Connection,
    job_id: int,
    worker_id: str,
    phase: str,
    done: int,
    total: int,
    fraction: float,
) -> None:
    """Record where a job this worker holds is: its phase, `done` of `total` chunks and the
    overall `fraction`. The stored chunk total is kept once known (a later `total` scales
    `done`), and neither the chunks done nor the fraction ever go back (db/queries.sql)."""
    await connection.execute(
        QUERIES["update_job_progress"], job_id, worker_id, phase, done, total, fraction
    )


async def finish_job(
    connection: asyncpg.Connection,
    job_id: int,
    worker_id: str,
    *,
    status: JobStatus,
    digest_id: int | None = None,
    document_digest_id: int | None = None,
    report_id: int | None = None,
    message: str | None,
    stats: dict[str, Any],
    warnings: list[dict[str, Any]],
    error: str | None = None,
) -> DigestJob | None:
    """End a job this worker holds with what it produced (a channel job's `digest_id`, a
    document job's `document_digest_id`, a report job's `report_id`, or nothing). Run it in the transaction that stored the
    digest so both commit together. None when this worker no longer holds the job."""
    finished = await connection.fetchrow(
        QUERIES["finish_job"],
        job_id,
        worker_id,
        status,
        digest_id,
        message,
        stats,
        warnings,
        error,
        document_digest_id,
        report_id,
    )
    return as_row_or_none(DigestJob, finished)


async def fail_job(
    connection: asyncpg.Connection,
    job_id: int,
    worker_id: str,
    error: str,
    retry_in_seconds: float,
    stats: dict[str, Any],
) -> DigestJob | None:
    """A failed attempt: queued again after `retry_in_seconds` while attempts remain, else
    ended failed with its deliveries (job.failed) queued in the same transaction. None when
    this worker no longer holds the job."""
    async with connection.transaction():
        failed = await connection.fetchrow(
            QUERIES["fail_job"], job_id, worker_id, error[:2000], retry_in_seconds, stats
        )
        if failed is not None and failed["status"] != "queued":
            await enqueue_job_deliveries(connection, job_id)
    return as_row_or_none(DigestJob, failed)


async def cancel_job(connection: asyncpg.Connection, job_id: int) -> DigestJob | None:
    return as_row_or_none(DigestJob, await connection.fetchrow(QUERIES["cancel_job"], job_id))


async def job_by_id(connection: asyncpg.Connection, job_id: int) -> DigestJob | None:
    return as_row_or_none(DigestJob, await connection.fetchrow(QUERIES["job_by_id"], job_id))


async def jobs_by_ids(connection: asyncpg.Connection, ids: list[int]) -> list[DigestJob]:
    return as_rows(DigestJob, await connection.fetch(QUERIES["jobs_by_ids"], ids))


@dataclass(frozen=True)
class QueueCount:
    """How many jobs of a kind are in a status; for queued ones, how long the oldest due one
    has waited (0 when none is due)."""

    kind: JobKind
    status: JobStatus
    jobs: int
    oldest_due_seconds: float


async def queue_summary(connection: asyncpg.Connection) -> list[QueueCount]:
    rows = await connection.fetch(QUERIES["job_queue_summary"])
    return [
        QueueCount(
            JobKind(row["kind"]),
            JobStatus(row["status"]),
            int(row["jobs"]),
            float(row["oldest_due_seconds"]),
        )
        for row in rows
    ]


def retry_delay(attempts: int, base_seconds: float, max_seconds: float) -> float:
    """Capped exponential backoff for the next attempt of a failed job."""
    return float(min(max_seconds, base_seconds * (2 ** max(0, attempts - 1))))
