"""The worker loop: claim a job, hold its lease with heartbeats, run the pipeline, store.

Workers wake on LISTEN digestd_jobs and fall back to polling, so a lost notification only costs
latency. A worker that dies simply stops renewing its lease; another worker reclaims the job and,
thanks to the chunk-result cache, does not pay again for the chunks already finished.
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
from typing import Any

import asyncpg

from db import jobs as job_queries
from db.jobs import JobKind, JobStatus
from db.models import ChannelWithServer, DigestJob
from db import channels as channel_queries
from db import digests as digest_queries
from runner.contract import ChunkSummary
from runner.coverage import StoredWindow, WindowSpec, load_window, window_key
from runner.document_jobs import DocumentJobRunner
from runner.extractors.base import Extractor
from runner.job_stats import job_stats
from runner.pipeline import Cancelled, PipelineHooks, run_pipeline
from runner.store import LostLease, store_digest
from runner.supervision import Backoff, JobListener, describe_error, wait_any
from runner.window import Window

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


class _JobControl:
    """Heartbeat state of the job in hand: cancel requested, lease lost, or process stopping."""

    def __init__(self) -> None:
        self.cancel_requested = False
        self.lease_lost = False
        self.shutting_down = False

    def should_stop(self) -> bool:
        return self.cancel_requested or self.lease_lost or self.shutting_down


class Worker:
    def __init__(
        self,
        pool: asyncpg.Pool,
        database_url: str,
        config: WorkerConfig,
        extractor_factory: Callable[[], Extractor],
        documents: DocumentJobRunner | None = None,
    ) -> None:
        self._pool = pool
        self._database_url = database_url
        self._config = config
        self._extractor_factory = extractor_factory
        self._documents = documents or DocumentJobRunner()
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
                except Exception as error:  # noqa: BLE001 - the loop outlives any error
                    delay = backoff.next_delay()
                    logger.warning(
                        "worker %s: %s; retrying in %.1fs",
                        self.worker_id, describe_error(error), delay,
                    )  # fmt: skip
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

    async def _heartbeat(self, job_id: int, control: _JobControl) -> None:
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
                control.lease_lost = True
                return
            control.cancel_requested = state

    async def _process(self, job: DigestJob, stop: asyncio.Event | None = None) -> None:
        """Run one claimed job while the heartbeat holds its lease. When `stop` is set, the job
        stops at its next checkpoint (the running chunk finishes; its result is cached) within
        the shutdown grace, then its lease is released so another worker resumes it at once."""
        control = _JobControl()
        control.cancel_requested = bool(job.cancel_requested)
        heartbeat = asyncio.create_task(self._heartbeat(job.id, control))
        work = asyncio.create_task(self._run_job(job, control))
        try:
            if stop is None:
                await work
                return
            await wait_any((stop,), None, task=work)
            if work.done():
                await work
                return
            control.shutting_down = True
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

    async def _run_job(self, job: DigestJob, control: _JobControl) -> None:
        started = time.perf_counter()
        stats: dict[str, Any] = {}
        try:
            if job.kind == JobKind.DOCUMENT:
                await self._documents.run(
                    self._pool, job, self.worker_id, control.should_stop, stats
                )
            else:
                await self._digest_channel(job, control, stats)
        except LostLease:
            logger.warning("job %s: lease lost; another worker has it", job.id)
        except Cancelled:
            if control.lease_lost:
                logger.warning("job %s: lease lost; another worker has it", job.id)
            elif control.cancel_requested:
                await self._settle(
                    job, self._finish_without_digest(job, JobStatus.CANCELLED, "cancelled by request", stats)
                )
            # else: shutting down; _process releases the job.
        except Exception as error:  # noqa: BLE001 - any failure is recorded on the job
            logger.exception("job %s failed", job.id)
            delay = job_queries.retry_delay(
                job.attempts, self._config.retry_base_seconds, self._config.retry_max_seconds
            )
            stats["duration_seconds"] = round(time.perf_counter() - started, 3)
            await self._settle(job, self._fail(job, f"{type(error).__name__}: {error}", delay, stats))

    async def _fail(
        self, job: DigestJob, error: str, delay: float, stats: dict[str, Any]
    ) -> None:
        async with self._pool.acquire() as connection:
            await job_queries.fail_job(connection, job.id, self.worker_id, error, delay, stats)

    async def _settle(self, job: DigestJob, write: Awaitable[None]) -> None:
        """Record a job's end; when the database is down the write is given up: the lease then
        expires and the job is reclaimed (counting the attempt), so nothing is lost."""
        try:
            await write
        except Exception as error:  # noqa: BLE001 - see above
            logger.warning(
                "job %s: could not record its end (%s); it will be reclaimed when its lease "
                "expires", job.id, describe_error(error),
            )  # fmt: skip

    async def _finish_without_digest(
        self, job: DigestJob, status: JobStatus, message: str, stats: dict[str, Any]
    ) -> None:
        async with self._pool.acquire() as connection:
            await job_queries.finish_job(
                connection, job.id, self.worker_id, status=status, digest_id=None,
                message=message, stats=stats, warnings=[],
            )  # fmt: skip

    async def _load_window(
        self, channel: ChannelWithServer, spec: WindowSpec
    ) -> tuple[Window, StoredWindow]:
        async with self._pool.acquire() as connection:
            return await load_window(connection, channel, spec, self._config.max_window_messages)

    def _hooks(self, job_id: int, extractor: Extractor, control: _JobControl) -> PipelineHooks:
        async def load_chunk(key: str) -> ChunkSummary | None:
            async with self._pool.acquire() as connection:
                summary = await digest_queries.load_chunk_result(connection, key)
            return None if summary is None else ChunkSummary.model_validate(summary)

        async def save_chunk(key: str, summary: ChunkSummary) -> None:
            async with self._pool.acquire() as connection:
                await digest_queries.save_chunk_result(
                    connection, key, extractor.name, summary.model_dump(mode="json")
                )

        async def on_progress(phase: str, done: int, total: int) -> None:
            async with self._pool.acquire() as connection:
                await job_queries.update_progress(
                    connection, job_id, self.worker_id, phase, done, total
                )

        return PipelineHooks(
            load_chunk=load_chunk,
            save_chunk=save_chunk,
            on_progress=on_progress,
            is_cancelled=control.should_stop,
        )

    async def _digest_channel(
        self, job: DigestJob, control: _JobControl, stats: dict[str, Any]
    ) -> None:
        assert job.channel_id is not None  # a channel job is queued on its channel
        async with self._pool.acquire() as connection:
            channel = await channel_queries.channel_by_id(connection, job.channel_id)
        if channel is None:
            raise ValueError(f"channel {job.channel_id} no longer exists")
        spec = WindowSpec.from_options(job.options)
        window, stored = await self._load_window(channel, spec)
        stats["messages"] = stored.message_count
        if not window.messages:
            empty = "no messages in the window" if spec.catch_up else "no new messages"
            await self._finish_without_digest(job, JobStatus.SUCCEEDED, empty, stats)
            return
        if control.should_stop():
            raise Cancelled()
        extractor = self._extractor_factory()
        chunk_tokens = int((job.options or {}).get("chunk_tokens", self._config.chunk_tokens))
        # An LLM extractor knows how much chunk its map model's context holds.
        max_chunk_tokens: Callable[[], int] | None = getattr(extractor, "max_chunk_tokens", None)
        if max_chunk_tokens is not None:
            chunk_tokens = min(chunk_tokens, max_chunk_tokens())
        key = window_key(extractor.fingerprint(), chunk_tokens, stored.keys)
        if spec.catch_up and await self._serve_identical(job, key, stats):
            return
        result = await run_pipeline(
            window, extractor,
            chunk_tokens=chunk_tokens,
            min_overlap=self._config.min_overlap,
            concurrency=self._config.map_concurrency,
            hooks=self._hooks(job.id, extractor, control),
        )  # fmt: skip
        stats.update(job_stats(result, extractor, stored.message_count))
        if result.chunk_count and len(result.failed_chunks) == result.chunk_count:
            # Nothing was extracted (endpoint down, circuit open): an empty digest would hide
            # that, so the job fails and is retried with backoff; later attempts reuse nothing
            # but lose nothing either.
            raise ExtractionUnavailable(
                f"every chunk failed; first: {result.failed_chunks[0]['reason']}"
            )
        status = JobStatus.PARTIAL if result.failed_chunks else JobStatus.SUCCEEDED
        digest_flags = [
            {"code": flag.split(":", 1)[0], "message": flag}
            for flag in result.validation.output_flags
        ] + [
            {"code": "chunk_failed", "message": f"chunk {f['chunk']}: {f['reason']}"}
            for f in result.failed_chunks
        ]
        rejections = [
            {**r.as_json(), "stage": "map"} for r in result.map_rejections
        ] + [{**r.as_json(), "stage": "reduce"} for r in result.validation.rejections]
        async with self._pool.acquire() as connection:
            await job_queries.update_progress(
                connection, job.id, self.worker_id, "store", result.chunk_count, result.chunk_count
            )
            await store_digest(
                connection, job_id=job.id, worker_id=self.worker_id,
                channel_id=channel.id, extractor=extractor.name,
                validation=result.validation, window=stored, digest_flags=digest_flags,
                rejections=rejections, status=status, stats=stats,
                warnings=[w.as_json() for w in result.warnings],
                uncovered=result.failed_message_ids,
                # Only a complete digest stands for its input (a catch-up may be served from it).
                window_key=None if result.failed_chunks else key,
            )  # fmt: skip

    async def _serve_identical(self, job: DigestJob, key: str, stats: dict[str, Any]) -> bool:
        """A catch-up window whose messages, revisions and extraction settings a stored digest
        already read completely is served from that digest (the chunk cache would make the map
        free anyway; this skips the reduce too)."""
        async with self._pool.acquire() as connection:
            existing = await digest_queries.digest_by_window_key(connection, key)
            if existing is None:
                return False
            stats["served_from_digest"] = existing
            finished = await job_queries.finish_job(
                connection, job.id, self.worker_id, status=JobStatus.SUCCEEDED, digest_id=existing,
                message=f"same messages as digest {existing}: served from it",
                stats=stats, warnings=[],
            )  # fmt: skip
        if finished is None:
            raise LostLease(f"job {job.id} is no longer held by {self.worker_id}")
        return True


async def _cancel(task: asyncio.Task[None]) -> None:
    """Cancel `task` unless it is done, and wait until it is."""
    if not task.done():
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


class ExtractionUnavailable(RuntimeError):
    """No chunk of the window could be extracted; the job is retried later."""
