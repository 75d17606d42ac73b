"""The channel digest job: load the window, run the pipeline with the chunk-result cache, store.

The steps:
1. load the channel's window (the messages no digest covers yet, or a catch-up's [since, until));
   an empty one ends the job SUCCEEDED with "no new messages" and no extraction;
2. a catch-up window whose messages, revisions and extraction settings a stored digest already
   read completely is served from that digest;
   A coverage job whose backlog exceeds the cap splits it into slice jobs instead and ends
   (runner/digests/split.py); a slice job's window is its slice;
3. otherwise thread the window's messages not threaded yet into conversations
   (runner/conversations/store.py, written with the digest) and order the window conversation by
   conversation so chunks hold threads; the pipeline maps the chunks (each result cached by its
   key, so a reclaimed job pays only for the chunks not finished yet) and reduces them; `runner/digests/store.py` writes the
   digest, its coverage and the job's end in one transaction.
A chunk the LLM could not extract (errors after retries, an open circuit, unusable output twice)
is read by the offline rules instead: the job ends PARTIAL with a CHUNKS_EXTRACTED_OFFLINE warning
and a `chunk_offline` flag per chunk, and its messages count as covered. Only a window none of
whose chunks anything could extract is retried later: an empty digest would hide that.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import asyncpg

from db import channels as channel_queries
from db import digests as digest_queries
from db.jobs import JobKind, JobStatus
from db.models import ChannelWithServer, DigestJob
from runner.conversations.store import read_threading_input
from runner.conversations.threads import order_window, thread_messages
from runner.core.cancel import Cancelled
from runner.core.contract import ChunkSummary
from runner.core.extractor import Extractor
from runner.core.job_options import ChannelDigestOptions
from runner.core.progress import JobPhase
from runner.core.window import StoredWindow, Window, WindowSpec
from runner.digests.periods import tell_periods
from runner.digests.pipeline import PipelineHooks, run_pipeline
from runner.digests.split import split_backlog, threaded_context_only
from runner.digests.stats import job_stats
from runner.digests.store import load_window, store_digest
from runner.digests.window import window_key
from runner.entities.digest import analyze_digest
from runner.jobs.base import JobContext, report_progress
from runner.jobs.outcomes import Finished, Outcome, RetryLater, Stored
from runner.memory.store import known_items_of, read_tracked_items
from runner.metrics import CHUNK_CACHE, PhaseClock


@dataclass(frozen=True)
class ChannelJobRunner:
    """Runs channel jobs with one extractor factory (a fresh extractor per job) and the
    pipeline's settings."""

    extractor_factory: Callable[[], Extractor]
    chunk_tokens: int = 6000
    min_overlap: float = 0.5
    map_concurrency: int = 1
    max_window_messages: int = 100_000

    async def run(self, job: DigestJob, context: JobContext) -> Outcome:
        clock = PhaseClock(JobKind.CHANNEL)
        clock.enter(JobPhase.READING)  # the claim recorded it on the job
        try:
            return await self._run(job, context, clock)
        finally:
            clock.stop()

    async def _run(self, job: DigestJob, context: JobContext, clock: PhaseClock) -> Outcome:
        stats = context.stats
        assert job.channel_id is not None  # a channel job is queued on its channel
        async with context.pool.acquire() as connection:
            channel = await channel_queries.channel_by_id(connection, job.channel_id)
        if channel is None:
            raise ValueError(f"channel {job.channel_id} no longer exists")
        options = ChannelDigestOptions.parse(job.options)
        if not options.catch_up and options.slice is None:
            # A backlog over the cap becomes slices other workers take (runner/digests/split.py).
            async with context.pool.acquire() as connection:
                split = await split_backlog(
                    connection, job, context.worker_id, options, self.max_window_messages, stats
                )
            if split is not None:
                return Stored(split.status)
        bounds = None if options.slice is None else (options.slice.first, options.slice.last)
        spec = WindowSpec(options.since, options.until, bounds)
        window, stored = await self._load_window(context.pool, channel, spec)
        stats["messages"] = stored.message_count
        if not window.messages:
            empty = "no messages in the window" if spec.catch_up else "no new messages"
            return Finished(JobStatus.SUCCEEDED, message=empty)
        if context.should_stop():
            raise Cancelled()
        extractor = self.extractor_factory()
        chunk_tokens = self.chunk_tokens if options.chunk_tokens is None else options.chunk_tokens
        # An LLM extractor knows how much chunk its map model's context holds.
        if (max_chunk_tokens := extractor.max_chunk_tokens()) is not None:
            chunk_tokens = min(chunk_tokens, max_chunk_tokens)
        key = window_key(extractor.fingerprint(), chunk_tokens, stored.keys)
        if spec.catch_up:
            served = await self._serve_identical(context, key)
            if served is not None:
                return served
        async with context.pool.acquire() as connection:
            thread_input = await read_threading_input(connection, channel.id, window, stored)
            if options.slice is not None:
                thread_input = threaded_context_only(thread_input, stored)
            # The channel's open items, so the map step links to them instead of repeating
            # them (an extractor that takes no known items is not given them).
            tracked = (
                known_items_of(await read_tracked_items(connection, channel.id))
                if extractor.uses_known_items and not spec.catch_up
                else []
            )
        clock.enter(JobPhase.THREADING)
        async with context.pool.acquire() as connection:
            await report_progress(connection, job.id, context.worker_id, JobPhase.THREADING)
        # The link model is CPU-bound (about 15 s for 100,000 messages): off the event loop,
        # so the job's heartbeat keeps its lease meanwhile.
        threading = await asyncio.to_thread(
            thread_messages, thread_input.messages, thread_input.stored
        )
        window = order_window(window, thread_input.messages, threading)
        stats["conversations"] = sum(1 for c in threading.conversations if c.continues is None)
        result = await run_pipeline(
            window,
            extractor,
            chunk_tokens=chunk_tokens,
            min_overlap=self.min_overlap,
            concurrency=self.map_concurrency,
            hooks=_hooks(job.id, extractor, context, clock),
            tracked_items=tracked,
        )
        stats.update(job_stats(result, extractor, stored.message_count))
        if result.chunk_count and len(result.failed_chunks) == result.chunk_count:
            # Nothing was extracted: later attempts reuse nothing but lose nothing either.
            raise RetryLater(
                "ExtractionUnavailable",
                f"every chunk failed; first: {result.failed_chunks[0]['reason']}",
            )
        complete = not (result.failed_chunks or result.fallback_chunks)
        status = JobStatus.SUCCEEDED if complete else JobStatus.PARTIAL
        digest_flags = (
            [
                {"code": flag.split(":", 1)[0], "message": flag}
                for flag in result.validation.output_flags
            ]
            + [
                {"code": "chunk_failed", "message": f"chunk {f['chunk']}: {f['reason']}"}
                for f in result.failed_chunks
            ]
            + [
                {
                    "code": "chunk_offline",
                    "message": f"chunk {f['chunk']}: extracted by the offline rules ({f['reason']})",
                }
                for f in result.fallback_chunks
            ]
        )
        rejections = [{**r.as_json(), "stage": "map"} for r in result.map_rejections] + [
            {**r.as_json(), "stage": "reduce"} for r in result.validation.rejections
        ]
        # Entity finding is pure Python over every message: off the event loop, like threading.
        entities = await asyncio.to_thread(
            analyze_digest, window.messages, result.validation.output
        )
        # Extractive and pure like entity finding: a long backlog is told day by day (or by
        # the period that keeps it readable), whatever the extractor.
        told = await asyncio.to_thread(tell_periods, window, self.min_overlap)
        rejections += [{**r.as_json(), "stage": "periods"} for r in told.rejections]
        clock.enter(JobPhase.STORE)
        async with context.pool.acquire() as connection:
            await report_progress(
                connection,
                job.id,
                context.worker_id,
                JobPhase.STORE,
                result.chunk_count,
                result.chunk_count,
            )
            await store_digest(
                connection,
                job_id=job.id,
                worker_id=context.worker_id,
                channel_id=channel.id,
                extractor=extractor.name,
                validation=result.validation,
                window=stored,
                digest_flags=digest_flags,
                rejections=rejections,
                status=status,
                stats=stats,
                warnings=[w.as_json() for w in result.warnings],
                uncovered=result.failed_message_ids,
                # Only a complete digest stands for its input (a catch-up may be served from it),
                # not one the offline rules filled in for the model.
                window_key=key if complete else None,
                threads=(threading, thread_input.internal_ids),
                entities=entities,
                periods=told.periods,
                read=window.by_id(),
            )
        return Stored(status)

    async def _load_window(
        self, pool: asyncpg.Pool, channel: ChannelWithServer, spec: WindowSpec
    ) -> tuple[Window, StoredWindow]:
        async with pool.acquire() as connection:
            return await load_window(connection, channel, spec, self.max_window_messages)

    async def _serve_identical(self, context: JobContext, key: str) -> Finished | None:
        """A catch-up window whose messages, revisions and extraction settings a stored digest
        already read completely is served from that digest (the chunk cache would make the map
        free anyway; this skips the reduce too)."""
        async with context.pool.acquire() as connection:
            existing = await digest_queries.digest_by_window_key(connection, key)
        if existing is None:
            return None
        context.stats["served_from_digest"] = existing
        return Finished(
            JobStatus.SUCCEEDED,
            digest_id=existing,
            message=f"same messages as digest {existing}: served from it",
        )


def _hooks(
    job_id: int, extractor: Extractor, context: JobContext, clock: PhaseClock
) -> PipelineHooks:
    """The pipeline's host: the chunk-result cache in Postgres, progress on the job, and the
    heartbeat's stop signal."""
    pool = context.pool

    async def load_chunk(key: str) -> ChunkSummary | None:
        async with pool.acquire() as connection:
            summary = await digest_queries.load_chunk_result(connection, key)
        CHUNK_CACHE.labels("miss" if summary is None else "hit").inc()
        return None if summary is None else ChunkSummary.model_validate(summary)

    async def save_chunk(key: str, summary: ChunkSummary) -> None:
        async with pool.acquire() as connection:
            await digest_queries.save_chunk_result(
                connection, key, extractor.name, summary.model_dump(mode="json")
            )

    async def on_progress(phase: JobPhase, done: int, total: int) -> None:
        clock.enter(phase)
        async with pool.acquire() as connection:
            await report_progress(connection, job_id, context.worker_id, phase, done, total)

    return PipelineHooks(
        load_chunk=load_chunk,
        save_chunk=save_chunk,
        on_progress=on_progress,
        is_cancelled=context.should_stop,
    )
