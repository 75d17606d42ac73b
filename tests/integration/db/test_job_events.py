"""Job events: every change of a job a subscriber watches notifies `digestd_job_events` with the
job's id when it commits, and nothing else does; the process's one LISTEN connection (the hub)
fans them out (tests/integration/server/test_job_event_hub.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from db import jobs
from db.engine import connect
from tests.support.database import add_channel, messages
from tests.support.jobs import EVENTS_MARK, expire_lease, mark_job_events


class Heard:
    """The payloads of one LISTEN connection, in order."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.ids: list[int] = []
        self._pool = pool
        self._marked = asyncio.Event()

    def __call__(self, connection: object, pid: int, channel: str, payload: str) -> None:
        if int(payload) == EVENTS_MARK:
            self._marked.set()
        else:
            self.ids.append(int(payload))

    async def settle(self) -> list[int]:
        """The ids heard since the last call: every event committed before this call and none
        after it, since the mark sent here arrives after the former (commit order)."""
        self._marked.clear()
        async with self._pool.acquire() as connection:
            await mark_job_events(connection)
        await asyncio.wait_for(self._marked.wait(), 30)  # a guard: the mark comes at once
        heard, self.ids = self.ids, []
        return heard


@pytest.fixture
async def heard(db: asyncpg.Pool, database_url: str) -> AsyncIterator[Heard]:
    listener = await connect(database_url)
    heard = Heard(db)
    await listener.add_listener(jobs.JOB_EVENTS_CHANNEL, heard)
    yield heard
    await listener.close()


async def _queued(pool: asyncpg.Pool, name: str, max_attempts: int = 3) -> int:
    channel_id = await add_channel(pool, name, messages([("ann", "hello"), ("bob", "hi there")]))
    async with pool.acquire() as connection:
        job, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=max_attempts
        )
    return int(job.id)


async def test_each_change_of_a_job_notifies_its_id(db: asyncpg.Pool, heard: Heard) -> None:
    job_id = await _queued(db, "general", max_attempts=2)
    async with db.acquire() as c:
        assert await heard.settle() == []  # the enqueue wakes workers only
        claimed = await jobs.claim_next_job(c, "w1", 30)
        assert claimed is not None and claimed.id == job_id and claimed.status == "running"
        assert await heard.settle() == [job_id]
        await jobs.update_progress(c, job_id, "w1", "map", 1, 3, 0.3)
        assert await heard.settle() == [job_id]
        await jobs.update_progress(
            c, job_id, "someone-else", "map", 2, 3, 0.6
        )  # not its job: no change
        assert await jobs.heartbeat(c, job_id, "w1", 30) is False  # a lease renewal is no event
        assert await heard.settle() == []
        failed = await jobs.fail_job(c, job_id, "w1", "boom", 0, {})
        assert failed is not None and failed.status == "queued"  # a retry
        assert await heard.settle() == [job_id]
        assert await jobs.claim_next_job(c, "w2", 30) is not None
        released = await jobs.release_job(c, job_id, "w2")
        assert released is not None and released.status == "queued"
        assert await heard.settle() == [job_id, job_id]
        assert await jobs.claim_next_job(c, "w3", 30) is not None
        assert await heard.settle() == [job_id]
        async with c.transaction():  # as the worker stores a digest: the end commits with it
            finished = await jobs.finish_job(
                c,
                job_id,
                "w3",
                status=jobs.JobStatus.SUCCEEDED,
                message="done",
                stats={},
                warnings=[],
            )
            assert finished is not None and finished.status == "succeeded"
            assert await heard.settle() == []  # not before the commit
        assert await heard.settle() == [job_id]


async def test_nothing_is_heard_from_a_rolled_back_change(db: asyncpg.Pool, heard: Heard) -> None:
    job_id = await _queued(db, "general")
    async with db.acquire() as c:
        await jobs.claim_next_job(c, "w1", 30)
        assert await heard.settle() == [job_id]
        transaction = c.transaction()
        await transaction.start()
        await jobs.finish_job(
            c, job_id, "w1", status=jobs.JobStatus.SUCCEEDED, message=None, stats={}, warnings=[]
        )
        await transaction.rollback()
        assert await heard.settle() == []


async def test_cancel_and_lease_expiry_notify(db: asyncpg.Pool, heard: Heard) -> None:
    queued = await _queued(db, "queued")
    async with db.acquire() as c:
        cancelled = await jobs.cancel_job(c, queued)
        assert cancelled is not None and cancelled.status == "cancelled"
        assert await heard.settle() == [queued]
        expiring = await _queued(db, "expiring", max_attempts=1)
        claimed = await jobs.claim_next_job(c, "w1", 30)
        assert claimed is not None and claimed.id == expiring
        assert await heard.settle() == [expiring]
        # The worker died: its lease ran out on the last attempt.
        await expire_lease(c, expiring)
        assert await jobs.claim_next_job(c, "w2", 30) is None
        failed = await jobs.job_by_id(c, expiring)
        assert failed is not None and failed.status == "failed"
        assert await heard.settle() == [expiring]
