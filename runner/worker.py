"""The worker loop: claim a job, hold its lease with heartbeats, run it, record how it ended.

Workers wake on LISTEN digestd_jobs and fall back to polling, so a lost notification only costs
latency. A worker that dies simply stops renewing its lease; another worker reclaims the job and,
thanks to the chunk-result cache, does not pay again for the chunks already finished.

What a job does is its kind's business (`runner/jobs/`: one `JobRunner` per `JobKind`); how it
ends is an outcome (`runner/jobs/outcomes.py`) that `_record` writes to the job, in one place.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import asyncpg

from db import jobs as job_queries
from db.jobs import JobKind, JobStatus
from db.models import DigestJob
from runner.core.cancel import Cancelled
from runner.core.extractor import Extractor
from runner.digests.job import ChannelJobRunner
from runner.documents.job import DocumentJobRunner
from runner.jobs.base import JobContext, JobRunner, finish
from runner.jobs.outcomes import FailNow, Finished, LostLease, Outcome, RetryLater, Stored
from runner.llm.redaction import redaction_scope
from runner.metrics import JOB_SECONDS
from runner.reports.job import ReportJobRunner
from runner.supervision import Backoff, JobListener, describe_error, wait_any

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerConfig:
    lease_seconds: float = 30.0
    heartbeat_seconds: float = 10.0
    poll_seconds: float = 5.0
    chunk_tokens: int = 6000
    min_overlap: float = 0.5
    map_concurrency: int = 1
    retry_base_seconds: float = 5.0
    retry_max_seconds: float = 300.0
    max_window_messages: int = 100_000
    shutdown_grace_seconds: float = 10.0
    reconnect_base_seconds: float = 0.5
    reconnect_max_seconds: float = 30.0
    worker_id: str = field(
        default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    )


class Worker:
    def __init__(
        self,
        pool: asyncpg.Pool,
        database_url: str,
        config: WorkerConfig,
        extractor_factory: Callable[[], Extractor],
        documents: DocumentJobRunner | None = None,
        reports: ReportJobRunner | None = None,
    ) -> None:
        self._pool = pool
        self._database_url = database_url
        self._config = config
        self._runners: dict[JobKind, JobRunner] = {
            JobKind.CHANNEL: ChannelJobRunner(
                extractor_factory,
                chunk_tokens=config.chunk_tokens,
                min_overlap=config.min_overlap,
                map_concurrency=config.map_concurrency,
                max_window_messages=config.max_window_messages,
            ),
            JobKind.DOCUMENT: documents or DocumentJobRunner(),
            JobKind.REPORT: reports
            or ReportJobRunner(
                min_overlap=config.min_overlap, max_messages=config.max_window_messages
            ),
        }
        self._wake = asyncio.Event()
        self._stop: asyncio.Event | None = None  # the event `run` was given
        self.worker_id = config.worker_id

    async def run(self, stop: asyncio.Event) -> None:
        """Process jobs until `stop` is set. No exception ends the loop: a database that is down,
        restarting or refusing connections (whatever asyncpg raises) costs a retry after a capped,
        jittered backoff; only cancellation of the task ends it early."""
        listener = self._listener()
        backoff = Backoff(self._config.reconnect_base_seconds, self._config.reconnect_max_seconds)
        self._stop = stop
        try:
            while not stop.is_set():
                # Cleared before the claim, not after it: a NOTIFY that lands while the claim
                # finds nothing must still wake the wait below instead of being wiped out.
                self._wake.clear()
                await listener.ensure()
                try:
                    processed = await self.run_once()
                except Exception as error:
                    delay = backoff.next_delay()
                    logger.warning(
                        "worker %s: %s; retrying in %.1fs",
                        self.worker_id,
                        describe_error(error),
                        delay,
                    )
                    logger.debug("worker %s: claim failed", self.worker_id, exc_info=True)
                    await wait_any((stop,), delay)
                    continue
                backoff.reset()
                if not processed:
                    limit = listener.wait_limit(self._config.poll_seconds)
                    await wait_any((self._wake, stop), limit)
        finally:
            await listener.close()

    def _listener(self) -> JobListener:
        return JobListener(self._database_url, self._wake, self._config.poll_seconds)

    async def run_once(self, stop: asyncio.Event | None = None) -> bool:
        """Claim and process one job; False when there was none. When `stop` (default: the
        event `run` was given) is set meanwhile, the job is checkpointed and released."""
        stop = stop if stop is not None else self._stop
        if stop is not None and stop.is_set():
            return False
        async with self._pool.acquire() as connection:
            job = await job_queries.claim_next_job(
                connection, self.worker_id, self._config.lease_seconds
            )
        if job is None:
            return False
        logger.info("worker %s claimed job %s (attempt %s)", self.worker_id, job.id, job.attempts)
        await self._process(job, stop)
        return True

    async def _heartbeat(self, job_id: int, context: JobContext) -> None:
        while True:
            await asyncio.sleep(self._config.heartbeat_seconds)
            try:
                async with self._pool.acquire(timeout=self._config.lease_seconds) as connection:
                    state = await job_queries.heartbeat(
                        connection, job_id, self.worker_id, self._config.lease_seconds
                    )
            except Exception as error:  # noqa: BLE001 - retried at the next beat
                # The lease may run out meanwhile; then another worker takes the job and the
                # next beat that reaches the database reports the lease lost.
                logger.warning("job %s: heartbeat failed (%s)", job_id, describe_error(error))
                continue
            if state is None:
                context.lease_lost = True
                return
            context.cancel_requested = state

    async def _process(self, job: DigestJob, stop: asyncio.Event | None = None) -> None:
        """Run one claimed job while the heartbeat holds its lease. When `stop` is set, the job
        stops at its next checkpoint (the running chunk finishes; its result is cached) within
        the shutdown grace, then its lease is released so another worker resumes it at once."""
        context = JobContext(
            self._pool, self.worker_id, cancel_requested=bool(job.cancel_requested)
        )
        heartbeat = asyncio.create_task(self._heartbeat(job.id, context))
        work = asyncio.create_task(self._run_job(job, context))
        try:
            if stop is None:
                await work
                return
            await wait_any((stop,), None, task=work)
            if work.done():
                await work
                return
            context.shutting_down = True
            grace = self._config.shutdown_grace_seconds
            logger.warning("job %s: shutting down; checkpointing within %ss", job.id, grace)
            await wait_any((), grace, task=work)
            await _cancel(work)
            await self._release(job)
        except asyncio.CancelledError:
            # Cancelled from outside, with no grace (a command interrupted as a whole): stop
            # the job now and still give it back rather than leave its lease to expire.
            await _cancel(work)
            await self._release(job)
            raise
        finally:
            await _cancel(work)
            await _cancel(heartbeat)

    async def _release(self, job: DigestJob) -> None:
        """Give the job back (the attempt not counted); a no-op if it already ended."""
        try:
            async with self._pool.acquire(timeout=self._config.lease_seconds) as connection:
                released = await job_queries.release_job(connection, job.id, self.worker_id)
        except Exception as error:  # noqa: BLE001 - the lease expires and it is reclaimed
            logger.warning("job %s: could not release (%s)", job.id, describe_error(error))
            return
        if released is not None:
            logger.warning("job %s: released for another worker", job.id)

    async def _run_job(self, job: DigestJob, context: JobContext) -> None:
        started = time.perf_counter()
        outcome: Outcome
        try:
            # One redaction session per job: a value gets the same placeholder in every model
            # call of the job, and the job's stats count what was hidden.
            with redaction_scope(context.stats):
                outcome = await self._runners[JobKind(job.kind)].run(job, context)
        except (Cancelled, LostLease, FailNow) as raised:
            outcome = raised
        except RetryLater as retry:
            logger.warning("job %s failed (%s); it will be retried", job.id, retry.code)
            outcome = retry
        except Exception as error:
            logger.exception("job %s failed", job.id)
            outcome = RetryLater(type(error).__name__, str(error))
        if isinstance(outcome, RetryLater):
            context.stats["duration_seconds"] = round(time.perf_counter() - started, 3)
        JOB_SECONDS.labels(job.kind, _outcome_label(outcome, context)).observe(
            time.perf_counter() - started
        )
        await self._settle(job, self._record(job, outcome, context))

    async def _record(self, job: DigestJob, outcome: Outcome, context: JobContext) -> None:
        """Write how the job ended: each outcome is one call on the queue, or none."""
        match outcome:
            case Stored():
                return  # committed with the digest
            case Finished():
                end = outcome
            case FailNow():
                end = Finished(JobStatus.FAILED, error=outcome.error)
            case Cancelled() if context.cancel_requested and not context.lease_lost:
                end = Finished(JobStatus.CANCELLED, message="cancelled by request")
            case Cancelled() if not context.lease_lost:
                return  # shutting down: _process releases the job
            case RetryLater():
                delay = job_queries.retry_delay(
                    job.attempts, self._config.retry_base_seconds, self._config.retry_max_seconds
                )
                async with self._pool.acquire() as connection:
                    await job_queries.fail_job(
                        connection, job.id, self.worker_id, outcome.error, delay, context.stats
                    )
                return
            case _:  # LostLease, or Cancelled because the lease was lost
                logger.warning("job %s: lease lost; another worker has it", job.id)
                return
        async with self._pool.acquire() as connection:
            await finish(connection, job.id, self.worker_id, end, context.stats)

    async def _settle(self, job: DigestJob, write: Awaitable[None]) -> None:
        """Record a job's end; when the database is down the write is given up: the lease then
        expires and the job is reclaimed (counting the attempt), so nothing is lost."""
        try:
            await write
        except LostLease:
            logger.warning("job %s: lease lost; another worker has it", job.id)
        except Exception as error:  # noqa: BLE001 - see above
            logger.warning(
                "job %s: could not record its end (%s); it will be reclaimed when its lease "
                "expires",
                job.id,
                describe_error(error),
            )


def _outcome_label(outcome: Outcome, context: JobContext) -> str:
    """How a run ended, as a closed set of labels: the status it ended with, or what else
    happened to it."""
    match outcome:
        case Stored() | Finished():
            return str(outcome.status)
        case FailNow():
            return "failed"
        case RetryLater():
            return "retry"
        case Cancelled() if context.cancel_requested and not context.lease_lost:
            return "cancelled"
        case Cancelled() if not context.lease_lost:
            return "released"
        case _:
            return "lease_lost"


async def _cancel(task: asyncio.Task[None]) -> None:
    """Cancel `task` unless it is done, and wait until it is."""
    if not task.done():
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
