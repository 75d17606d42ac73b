"""What every job kind shares: the context of one run, the interface of a kind's runner, and
the one place a job's end is written (`finish`).

A new kind is one module with a `JobRunner` and one entry in the worker's table of runners.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import asyncpg

from db import deliveries as delivery_queries
from db import jobs as job_queries
from db.models import DigestJob
from runner.core.progress import JobPhase, overall_fraction
from runner.jobs.outcomes import Finished, LostLease, Outcome


@dataclass
class JobContext:
    """One run of a claimed job: where it runs, what it measured (`stats`, recorded with the
    job's end whatever the outcome), and the heartbeat's word on whether it should stop."""

    pool: asyncpg.Pool
    worker_id: str
    stats: dict[str, Any] = field(default_factory=dict)
    cancel_requested: bool = False
    lease_lost: bool = False
    shutting_down: bool = False

    def should_stop(self) -> bool:
        return self.cancel_requested or self.lease_lost or self.shutting_down


class JobRunner(Protocol):
    """Runs one claimed job of its kind. Returns (or raises, from deep inside) the outcome; any
    other exception is retried later. A kind that stores a digest commits the job's end with it
    through `finish` and returns `Stored`; the worker records every other outcome."""

    async def run(self, job: DigestJob, context: JobContext) -> Outcome: ...


async def report_progress(
    connection: asyncpg.Connection,
    job_id: int,
    worker_id: str,
    phase: JobPhase,
    done: int = 0,
    total: int = 0,
) -> None:
    """Record that a job this worker holds is at `phase` (and `done` of `total` chunks), with
    the overall fraction that makes; a no-op when the worker no longer holds the job."""
    fraction = overall_fraction(phase, done, total)
    await job_queries.update_progress(connection, job_id, worker_id, phase, done, total, fraction)


async def finish(
    connection: asyncpg.Connection,
    job_id: int,
    worker_id: str,
    end: Finished,
    stats: dict[str, Any],
) -> None:
    """End a job this worker holds, and queue its deliveries (a digest ready, the job's end) in
    the same transaction. Run it in the transaction that stored the digest so all of it commits
    together. Raises LostLease when another worker holds the job now."""
    async with connection.transaction():
        finished = await job_queries.finish_job(
            connection,
            job_id,
            worker_id,
            status=end.status,
            digest_id=end.digest_id,
            document_digest_id=end.document_digest_id,
            report_id=end.report_id,
            message=end.message,
            stats=stats,
            warnings=end.warnings,
            error=end.error,
        )
        if finished is None:
            raise LostLease(f"job {job_id} is no longer held by {worker_id}")
        await delivery_queries.enqueue_job_deliveries(connection, job_id)
