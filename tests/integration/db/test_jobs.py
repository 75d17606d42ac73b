"""The job queue against a real Postgres: duplicate triggers, concurrent claims, leases,
retries, cancellation."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import asyncpg

from db import jobs
from db.jobs import JobStatus
from db.migrate import available_migrations, migrate
from tests.support.database import add_channel, messages, migrate_before
from tests.support.jobs import end_backoff, expire_lease


async def _channel(pool: asyncpg.Pool, name: str = "general") -> int:
    return await add_channel(pool, name, messages([("ann", "hello"), ("bob", "hi there")]))


async def test_trigger_twice_returns_the_same_job(db: asyncpg.Pool) -> None:
    channel_id = await _channel(db)
    async with db.acquire() as connection:
        first, created_first = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )
        second, created_second = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )
    assert created_first and not created_second
    assert first.id == second.id
    assert first.status == "queued"


async def test_concurrent_triggers_create_one_job(db: asyncpg.Pool) -> None:
    channel_id = await _channel(db)

    async def trigger() -> int:
        async with db.acquire() as connection:
            job, _ = await jobs.enqueue_job(
                connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
            )
            return int(job.id)

    ids = await asyncio.gather(*(trigger() for _ in range(10)))
    assert len(set(ids)) == 1
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM digest_jobs") == 1


async def test_database_refuses_a_second_active_job(db: asyncpg.Pool) -> None:
    channel_id = await _channel(db)
    async with db.acquire() as connection:
        await jobs.enqueue_job(connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3)
        try:
            await connection.execute(
                "INSERT INTO digest_jobs (kind, channel_id) VALUES ('channel', $1)", channel_id
            )
        except asyncpg.UniqueViolationError:
            pass
        else:
            raise AssertionError("the unique index must refuse a second queued job")


async def test_concurrent_claims_never_share_a_job(db: asyncpg.Pool) -> None:
    channel_ids = [await _channel(db, f"c{i}") for i in range(6)]
    async with db.acquire() as connection:
        for channel_id in channel_ids:
            await jobs.enqueue_job(connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3)

    async def claim(worker: str) -> int | None:
        async with db.acquire() as connection:
            job = await jobs.claim_next_job(connection, worker, 30)
            return None if job is None else int(job.id)

    claimed = await asyncio.gather(*(claim(f"w{i}") for i in range(10)))
    taken = [job_id for job_id in claimed if job_id is not None]
    assert len(taken) == 6
    assert len(set(taken)) == 6


async def test_expired_lease_is_reclaimed_and_old_holder_locked_out(db: asyncpg.Pool) -> None:
    channel_id = await _channel(db)
    async with db.acquire() as connection:
        job, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )
        claimed = await jobs.claim_next_job(connection, "dead-worker", 30)
        assert claimed is not None and claimed.id == job.id
        assert await jobs.claim_next_job(connection, "other", 30) is None  # the lease holds
        await expire_lease(connection, job.id)  # the dead worker stopped renewing it
        reclaimed = await jobs.claim_next_job(connection, "other", 30)
        assert reclaimed is not None and reclaimed.id == job.id
        assert reclaimed.attempts == 2
        # The dead worker can neither renew nor finish the job any more.
        assert await jobs.heartbeat(connection, job.id, "dead-worker", 30) is None
        finished = await jobs.finish_job(
            connection,
            job.id,
            "dead-worker",
            status=JobStatus.SUCCEEDED,
            digest_id=None,
            message=None,
            stats={},
            warnings=[],
        )
        assert finished is None
        assert await jobs.heartbeat(connection, job.id, "other", 30) is False


async def test_failed_job_retries_with_backoff_then_fails(db: asyncpg.Pool) -> None:
    channel_id = await _channel(db)
    async with db.acquire() as connection:
        job, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=2
        )
        await jobs.claim_next_job(connection, "w", 30)
        retried = await jobs.fail_job(connection, job.id, "w", "boom", 30, {})
        assert retried is not None and retried.status == "queued" and retried.error == "boom"
        assert retried.run_after - retried.updated_at == timedelta(seconds=30)
        assert await jobs.claim_next_job(connection, "w", 30) is None  # backoff not over
        await end_backoff(connection, job.id)
        again = await jobs.claim_next_job(connection, "w", 30)
        assert again is not None and again.attempts == 2
        final = await jobs.fail_job(connection, job.id, "w", "boom again", 30, {})
        assert final is not None and final.status == "failed"
        assert final.finished_at is not None


async def test_what_a_client_sees_of_progress_never_goes_back(db: asyncpg.Pool) -> None:
    """A job is QUEUED from its insert and READING once claimed; the chunk total is stored once
    (a later attempt's plan is scaled onto it), chunks done and the fraction only grow, a retry
    waits QUEUED without losing the bar, and success makes the fraction 1."""
    channel_id = await _channel(db)
    async with db.acquire() as connection:
        job, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )
        assert (job.phase, job.progress_fraction) == ("queued", 0.0)
        claimed = await jobs.claim_next_job(connection, "w", 30)
        assert claimed is not None and claimed.phase == "reading"
        await jobs.update_progress(connection, job.id, "w", "map", 0, 10, 0.2)
        await jobs.update_progress(connection, job.id, "w", "map", 6, 10, 0.6)
        # A stale report (a smaller fraction, fewer chunks) takes nothing back.
        await jobs.update_progress(connection, job.id, "w", "map", 4, 10, 0.4)
        row = await jobs.job_by_id(connection, job.id)
        assert row is not None
        assert (row.chunks_done, row.chunks_total, row.progress_fraction) == (6, 10, 0.6)
        retried = await jobs.fail_job(connection, job.id, "w", "boom", 0, {})
        assert retried is not None and retried.status == "queued"
        assert (retried.phase, retried.progress_fraction) == ("queued", 0.6)
        await end_backoff(connection, job.id)
        again = await jobs.claim_next_job(connection, "w", 30)
        assert again is not None and again.phase == "reading" and again.progress_fraction == 0.6
        # The second attempt plans 20 chunks (the window grew): the total stays 10, done scales.
        await jobs.update_progress(connection, job.id, "w", "map", 16, 20, 0.7)
        row = await jobs.job_by_id(connection, job.id)
        assert row is not None and (row.chunks_done, row.chunks_total) == (8, 10)
        await jobs.update_progress(connection, job.id, "w", "map", 40, 20, 2.0)  # clamped
        row = await jobs.job_by_id(connection, job.id)
        assert row is not None
        assert (row.chunks_done, row.chunks_total, row.progress_fraction) == (10, 10, 1.0)
        done = await jobs.finish_job(
            connection,
            job.id,
            "w",
            status=JobStatus.SUCCEEDED,
            message="no new messages",
            stats={},
            warnings=[],
        )
        assert done is not None and done.progress_fraction == 1.0


async def test_a_successful_job_ends_at_one_whatever_it_reported(db: asyncpg.Pool) -> None:
    channel_id = await _channel(db)
    async with db.acquire() as connection:
        job, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )
        await jobs.claim_next_job(connection, "w", 30)
        done = await jobs.finish_job(
            connection,
            job.id,
            "w",
            status=JobStatus.SUCCEEDED,
            message="no new messages",
            stats={},
            warnings=[],
        )
        assert done is not None and (done.phase, done.progress_fraction) == ("reading", 1.0)


async def test_migration_0013_gives_every_old_job_a_phase_and_a_fraction(
    old_database: tuple[str, asyncpg.Connection],
) -> None:
    """Jobs the old code wrote: no phase before the first progress report, 'preprocess' for the
    steps before the map. Each gets a phase of today's enum, and a finished job's bar is full."""
    _, connection = old_database
    await migrate_before(connection, 13)
    channel = await connection.fetchval("INSERT INTO channels (name) VALUES ('ops') RETURNING id")
    old = [  # (status, phase, started), in id order
        ("queued", None, False),  # never claimed
        ("failed", "preprocess", True),  # ended before its map
        ("succeeded", None, True),  # "no new messages": ended while reading
        ("partial", "store", True),
        ("cancelled", None, False),  # cancelled while queued
    ]
    for status, phase, started in old:
        await connection.execute(
            "INSERT INTO digest_jobs (channel_id, status, phase, started_at) "
            "VALUES ($1, $2, $3, CASE WHEN $4 THEN now() END)",
            channel,
            status,
            phase,
            started,
        )
    assert await migrate(connection) == [m.name for m in available_migrations() if m.version >= 13]
    rows = await connection.fetch("SELECT phase, progress_fraction FROM digest_jobs ORDER BY id")
    assert [(r["phase"], r["progress_fraction"]) for r in rows] == [
        ("queued", 0.0),
        ("threading", 0.0),
        ("reading", 1.0),
        ("store", 1.0),
        ("queued", 0.0),
    ]
    other = await connection.fetchval("INSERT INTO channels (name) VALUES ('dev') RETURNING id")
    new = await connection.fetchval(
        "INSERT INTO digest_jobs (channel_id) VALUES ($1) RETURNING phase", other
    )
    assert new == "queued"


async def test_cancel_queued_and_running(db: asyncpg.Pool) -> None:
    first = await _channel(db, "a")
    second = await _channel(db, "b")
    async with db.acquire() as connection:
        queued, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, first, {}, max_attempts=3
        )
        cancelled = await jobs.cancel_job(connection, queued.id)
        assert cancelled is not None and cancelled.status == "cancelled"
        running, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, second, {}, max_attempts=3
        )
        claimed = await jobs.claim_next_job(connection, "w", 30)
        assert claimed is not None and claimed.id == running.id
        flagged = await jobs.cancel_job(connection, running.id)
        assert flagged is not None and flagged.status == "running" and flagged.cancel_requested
        assert await jobs.heartbeat(connection, running.id, "w", 30) is True
        assert await jobs.cancel_job(connection, 999_999) is None


def test_retry_delay_is_capped_exponential() -> None:
    assert [jobs.retry_delay(n, 5, 60) for n in (1, 2, 3, 4, 5)] == [5, 10, 20, 40, 60]
