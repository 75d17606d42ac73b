"""The schedule tick: the workers fire each due schedule exactly once, by the database's clock.

Every process that runs workers (`digestd worker`, `digestd serve` with its in-process runner)
runs one `ScheduleTicker` beside its job loops. Each tick is one transaction: lock the
schedules due by now() (FOR UPDATE SKIP LOCKED), queue an ordinary channel digest for each
through `runner.triggers` (an already queued or running digest of the channel is joined, not
doubled) unless the channel has no new message since its last digest (then the run is recorded
`skipped` and no job is queued), record the run and move the schedule to its first slot after
now() that is at least the minimum interval after the slot it fired (a schedule stored before
the minimum, or under a lower one, fires no more often). After it, the tick prunes old runs
that queued nothing (`ScheduleLimits.run_retention_days`), and the caches' entries unused for
longer than `cache_retention_days` (document digests, chunk results), so neither table only
grows. Any number of
tickers on any number of machines can run: a schedule one of them holds is skipped by the
others, and after its commit the schedule is no longer due, so a slot fires once; a schedule
whose slots passed while no worker ran is due once and moves past all of them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from db import digests as digest_queries
from db import documents as document_queries
from db import schedules as schedule_queries
from runner.schedules.cron import CronSchedule, InvalidSchedule, earliest_next_slot
from runner.schedules.store import ScheduleLimits
from runner.supervision import Backoff, describe_error, wait_any
from runner.triggers import TriggerRefused, trigger_channel_digest

logger = logging.getLogger(__name__)

# Schedules fired per transaction; a full batch is followed by the next one at once.
TICK_BATCH = 100
# Old runs deleted per tick at most: the retention pass is a short statement, whatever the backlog.
PRUNE_BATCH = 1000
# Days a document digest or chunk result may go unused (DIGESTD_DOC_CACHE_RETENTION_DAYS).
DEFAULT_CACHE_RETENTION_DAYS = 30.0


@dataclass(frozen=True)
class Fired:
    """One firing: the schedule, the slot it was due for, and the job it queued or joined (None:
    skipped, the channel had no new message)."""

    schedule_id: int
    slot: datetime
    job_id: int | None
    job_created: bool
    next_run_at: datetime


def process_name() -> str:
    """Who fired a run, as `schedule_runs.fired_by` records it: host and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


async def fire_due_schedules(
    connection: asyncpg.Connection,
    *,
    max_attempts: int,
    limits: ScheduleLimits = ScheduleLimits(),
    fired_by: str | None = None,
    limit: int = TICK_BATCH,
) -> list[Fired]:
    """Fire the schedules due now (at most `limit`), in one transaction; the runs record
    `fired_by` (default: this process)."""
    fired_by = fired_by or process_name()
    fired: list[Fired] = []
    async with connection.transaction():
        for due in await schedule_queries.due_schedules(connection, limit):
            try:
                next_run_at = earliest_next_slot(
                    CronSchedule(due.cron, due.timezone),
                    due.next_run_at,
                    due.database_now,
                    limits.min_interval,
                )
            except InvalidSchedule as invalid:
                logger.warning("schedule %s paused: %s", due.id, invalid)
                await schedule_queries.pause_unfireable_schedule(connection, due.id)
                continue
            try:
                # A savepoint: a schedule that cannot fire stays due and costs the others nothing.
                async with connection.transaction():
                    job_id, created = None, False
                    if await schedule_queries.channel_has_new_messages(connection, due.channel_id):
                        job, created = await trigger_channel_digest(
                            connection, due.channel_id, max_attempts=max_attempts
                        )
                        job_id = job.id
                    await schedule_queries.record_schedule_run(
                        connection, due.id, due.next_run_at, next_run_at, job_id, created, fired_by
                    )
            except (asyncpg.PostgresError, TriggerRefused) as error:
                logger.warning(
                    "schedule %s could not fire (%s); it stays due", due.id, describe_error(error)
                )
                continue
            fired.append(Fired(due.id, due.next_run_at, job_id, created, next_run_at))
    return fired


async def prune_schedule_runs(connection: asyncpg.Connection, retention_days: int) -> int:
    """Delete the runs older than `retention_days` that queued nothing (at most PRUNE_BATCH a
    call); how many."""
    return await schedule_queries.prune_schedule_runs(connection, retention_days, PRUNE_BATCH)


@dataclass(frozen=True)
class CachePruned:
    """What one retention pass of the caches deleted."""

    document_digests: int
    chunk_results: int


async def prune_caches(connection: asyncpg.Connection, retention_days: float) -> CachePruned:
    """Delete the document digests and chunk results unused for more than `retention_days` (at
    most PRUNE_BATCH of each a call, so a backlog drains over a few ticks)."""
    return CachePruned(
        await document_queries.prune_document_digests(connection, retention_days, PRUNE_BATCH),
        await digest_queries.prune_chunk_results(connection, retention_days, PRUNE_BATCH),
    )


class ScheduleTicker:
    """A loop running `fire_due_schedules` every `tick_seconds` until stopped. Like the worker
    loop, no error ends it: a database that is down costs a retry after a capped backoff."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        tick_seconds: float,
        max_attempts: int,
        limits: ScheduleLimits = ScheduleLimits(),
        cache_retention_days: float = DEFAULT_CACHE_RETENTION_DAYS,
        reconnect_base_seconds: float = 0.5,
        reconnect_max_seconds: float = 30.0,
    ) -> None:
        self._pool = pool
        self._tick_seconds = tick_seconds
        self._max_attempts = max_attempts
        self._limits = limits
        self._cache_retention_days = cache_retention_days
        self._backoff = Backoff(reconnect_base_seconds, reconnect_max_seconds)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                async with self._pool.acquire() as connection:
                    fired = await fire_due_schedules(
                        connection, max_attempts=self._max_attempts, limits=self._limits
                    )
                    pruned = await prune_schedule_runs(connection, self._limits.run_retention_days)
                    caches = await prune_caches(connection, self._cache_retention_days)
            except Exception as error:
                delay = self._backoff.next_delay()
                logger.warning(
                    "schedule tick failed (%s); retrying in %.1fs", describe_error(error), delay
                )
                logger.debug("schedule tick failed", exc_info=True)
                await wait_any((stop,), delay)
                continue
            self._backoff.reset()
            for firing in fired:
                if firing.job_id is None:  # a quiet channel's every slot: not worth a line
                    logger.debug(
                        "schedule %s skipped %s: no new messages",
                        firing.schedule_id,
                        firing.slot.isoformat(),
                    )
                    continue
                logger.info(
                    "schedule %s fired for %s: job %s %s; next at %s",
                    firing.schedule_id,
                    firing.slot.isoformat(),
                    firing.job_id,
                    "queued" if firing.job_created else "already active",
                    firing.next_run_at.isoformat(),
                )
            if pruned:
                logger.info("schedule runs pruned: %s that queued nothing", pruned)
            if caches.document_digests or caches.chunk_results:
                logger.info(
                    "caches pruned: %s document digests and %s chunk results unused for %g days",
                    caches.document_digests,
                    caches.chunk_results,
                    self._cache_retention_days,
                )
            if len(fired) < TICK_BATCH:
                await wait_any((stop,), self._tick_seconds)
