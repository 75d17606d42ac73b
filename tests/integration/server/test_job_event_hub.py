"""The process's job event hub against a real Postgres: one read of a job per change for all of
its watches, polling while it cannot listen, and a LISTEN connection that, when its probe finds
it dead, is replaced once (not in a loop) and goes on delivering events."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager

import asyncpg
import pytest

from db import jobs
from db.models import DigestJob
from server.job_events import JobEventHub, JobFeed, JobWatchHandle
from tests.support.database import add_channel, messages
from tests.support.subscriptions import Reads

UNREACHABLE = "postgresql://digestd@127.0.0.1:1/nowhere"


async def _queued(pool: asyncpg.Pool, name: str = "general") -> int:
    channel_id = await add_channel(pool, name, messages([("ann", "hello"), ("bob", "hi there")]))
    async with pool.acquire() as connection:
        job, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )
    return int(job.id)


async def _until(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.02)


@asynccontextmanager
async def _hub(url: str, pool: asyncpg.Pool, **options: float) -> AsyncIterator[JobEventHub]:
    hub = JobEventHub(url, pool, **options)  # type: ignore[arg-type]
    try:
        yield hub
    finally:
        await hub.close()


async def _follow(
    hub: JobEventHub, job_id: int, ready: asyncio.Event, seen: list[DigestJob]
) -> None:
    """One subscriber: every state it is given, up to a terminal one."""
    async with hub.watch(job_id) as watch:
        while True:
            row = await watch.next_state()
            assert row is not None
            seen.append(row)
            ready.set()
            if row.status in jobs.TERMINAL:
                return


async def test_a_burst_of_events_for_a_thousand_watches_costs_a_read_per_event_at_most(
    db: asyncpg.Pool, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = await _queued(db)
    reads = Reads(monkeypatch, job_id)
    async with _hub(database_url, db) as hub:
        readies = [asyncio.Event() for _ in range(1000)]
        seen: list[list[DigestJob]] = [[] for _ in readies]
        followers = [
            asyncio.create_task(_follow(hub, job_id, r, s))
            for r, s in zip(readies, seen, strict=True)
        ]
        await asyncio.wait_for(asyncio.gather(*(ready.wait() for ready in readies)), 60)
        await _until(lambda: hub.listening)
        await _until(lambda: all(len(s) >= 1 for s in seen))
        before = reads.count
        assert before <= 3  # the first read, and the one when LISTEN began
        async with db.acquire() as connection:
            assert await jobs.claim_next_job(connection, "w1", 60) is not None
            for done in range(1, 51):  # a burst: fifty commits without waiting for anyone
                await jobs.update_progress(connection, job_id, "w1", "map", done, 50, done / 50)
            await jobs.finish_job(
                connection,
                job_id,
                "w1",
                status=jobs.JobStatus.SUCCEEDED,
                message="done",
                stats={},
                warnings=[],
            )
        await asyncio.wait_for(asyncio.gather(*followers), 60)
        events = 52
        assert reads.count - before <= events, f"{reads.count - before} reads for {events} events"
        assert hub.watched_jobs == 0
    for states in seen:  # each watch: its states in order, ending with the last one
        assert states[-1].status == "succeeded" and states[-1].chunks_done == 50
        assert [s.chunks_done for s in states] == sorted(s.chunks_done for s in states)


async def test_a_watch_falls_back_to_reading_while_no_listen_is_possible(db: asyncpg.Pool) -> None:
    job_id = await _queued(db)
    async with _hub(UNREACHABLE, db, fallback_seconds=0.2) as hub:
        async with hub.watch(job_id) as watch:
            first = await asyncio.wait_for(watch.next_state(), 5)
            assert first is not None and first.status == "queued"
            async with db.acquire() as connection:
                await jobs.cancel_job(connection, job_id)
            later = await asyncio.wait_for(watch.next_state(), 5)  # no event: a fallback read
            assert later is not None and later.status == "cancelled"
            assert not hub.listening and hub.watched_jobs == 1
        assert hub.watched_jobs == 0


async def test_an_unknown_job_is_none(db: asyncpg.Pool) -> None:
    async with _hub(UNREACHABLE, db) as hub, hub.watch(424242) as watch:
        assert await asyncio.wait_for(watch.next_state(), 5) is None


async def test_a_watch_cancelled_as_its_state_arrives_is_cancelled() -> None:
    """A closed socket cancels its subscription; if a new state lands in the same tick, the
    cancellation must still end the watch (Python 3.11's wait_for dropped it, and the
    subscription then waited for ever, holding a server's shutdown with it)."""
    feed = JobFeed(7)
    handle = JobWatchHandle(feed)
    feed.watches.add(handle)
    watch = asyncio.create_task(handle.next_state())
    await asyncio.sleep(0)  # the watch is now waiting for a state
    outcome: asyncio.Future[DigestJob | None] = asyncio.get_running_loop().create_future()
    outcome.set_result(None)
    feed.publish(outcome)
    watch.cancel()
    done, _ = await asyncio.wait({watch}, timeout=5)
    assert done, "the cancelled watch never ended"
    assert watch.cancelled()


async def test_a_listener_found_dead_by_its_probe_is_replaced_once(
    db: asyncpg.Pool, database_url: str
) -> None:
    """The LISTEN backend stops answering (SIGSTOP: a dead socket, as a NAT drops it). Its probe
    fails and the connection is dropped; asyncpg calls its termination listener a tick later,
    while the next connection is opening. That late call must not mark the new connection lost
    (it did, and each new one then the next: thousands of reconnects a second)."""
    job_id = await _queued(db)
    async with AsyncExitStack() as stack:
        hub = await stack.enter_async_context(
            _hub(
                database_url, db, probe_seconds=0.2, probe_timeout_seconds=0.5, fallback_seconds=60
            )
        )
        watch = await stack.enter_async_context(hub.watch(job_id))
        first = await asyncio.wait_for(watch.next_state(), 10)
        assert first is not None and first.status == "queued"
        await _until(lambda: hub.listening)
        stopped = hub.listener_pid
        assert stopped is not None
        try:
            os.kill(stopped, signal.SIGSTOP)
        except PermissionError:
            pytest.skip("the database's backends are not this user's to signal")
        stack.push_async_callback(_release, db, stopped)
        await _until(lambda: hub.connections_opened >= 2, 30)
        replaced_at = hub.connections_opened
        # A while for a loop to show: the new connection stays, with no reconnect after it.
        await asyncio.sleep(2)
        reconnects = hub.connections_opened - replaced_at
        assert reconnects < 3, f"{reconnects} more connections opened in 2 s after the replacement"
        await _until(lambda: hub.listening)
        assert hub.listener_pid not in (None, stopped)
        # And it listens: an event arrives at once (no fallback read for a minute).
        async with db.acquire() as connection:
            await jobs.cancel_job(connection, job_id)
        later = await asyncio.wait_for(watch.next_state(), 10)
        assert later is not None and later.status == "cancelled"


async def _release(pool: asyncpg.Pool, pid: int) -> None:
    """The stopped backend goes on and is ended."""
    os.kill(pid, signal.SIGCONT)
    async with pool.acquire() as connection:
        await connection.fetchval("SELECT pg_terminate_backend($1)", pid)
