"""Job tests without sleeping: a job's clock moved (a lease that has run out, a retry backoff
that is over, as the rows would read once that time had passed: the queue compares these
columns with the database's now(), so moving them is what waiting would have done), a mark
on the job events channel that tells a listener it has heard everything committed before it,
who listens for new jobs, and a record of every state a job's row passes through."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from db.jobs import JOB_EVENTS_CHANNEL, JOBS_CHANNEL


async def expire_lease(connection: asyncpg.Connection, job_id: int) -> None:
    """The running job's lease ran out a second ago (its worker stopped renewing it)."""
    moved = await connection.fetchval(
        "UPDATE digest_jobs SET lease_expires_at = now() - interval '1 second' "
        "WHERE id = $1 AND status = 'running' RETURNING id",
        job_id,
    )
    assert moved == job_id, f"job {job_id} is not running: it holds no lease"


async def end_backoff(connection: asyncpg.Connection, job_id: int) -> None:
    """The queued job's retry backoff is over: it is due now."""
    moved = await connection.fetchval(
        "UPDATE digest_jobs SET run_after = now() WHERE id = $1 AND status = 'queued' RETURNING id",
        job_id,
    )
    assert moved == job_id, f"job {job_id} is not queued: it has no backoff"


# A job id no job has (ids start at 1): a listener tells this marker from a job's event.
EVENTS_MARK = 0


async def mark_job_events(connection: asyncpg.Connection) -> None:
    """Send EVENTS_MARK on the job events channel, committed at once. PostgreSQL delivers
    notifications in the order their transactions committed, so once a listener hears the mark,
    it has heard every job event committed before it, and none committed after it."""
    await connection.execute("SELECT pg_notify($1, $2)", JOB_EVENTS_CHANNEL, str(EVENTS_MARK))


async def sessions_listening_for_jobs(connection: asyncpg.Connection) -> int:
    """How many sessions of this server LISTEN for new jobs."""
    return await sessions_listening(connection, JOBS_CHANNEL)


async def sessions_listening(connection: asyncpg.Connection, channel: str) -> int:
    """How many sessions of this server LISTEN on `channel`: a loop's listener connection runs
    nothing but its LISTEN, which pg_stat_activity shows as its last statement."""
    count = await connection.fetchval(
        "SELECT count(*) FROM pg_stat_activity WHERE query = $1", f'LISTEN "{channel}"'
    )
    return int(count)


_RECORD = """
CREATE TABLE test_job_states (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id bigint, status text, phase text, chunks_done integer, chunks_total integer,
    progress_fraction double precision, started_at timestamptz, at timestamptz
);
CREATE FUNCTION test_record_job_state() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO test_job_states (job_id, status, phase, chunks_done, chunks_total,
                                 progress_fraction, started_at, at)
    VALUES (NEW.id, NEW.status, NEW.phase, NEW.chunks_done, NEW.chunks_total,
            NEW.progress_fraction, NEW.started_at, clock_timestamp());
    RETURN NULL;
END $$;
CREATE TRIGGER test_record_job_state AFTER INSERT OR UPDATE ON digest_jobs
    FOR EACH ROW EXECUTE FUNCTION test_record_job_state();
"""
_STOP_RECORDING = """
DROP TRIGGER IF EXISTS test_record_job_state ON digest_jobs;
DROP FUNCTION IF EXISTS test_record_job_state();
DROP TABLE IF EXISTS test_job_states;
"""


class JobStates:
    """The states recorded while the context of `recorded_job_states` is open."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def of(self, job_id: int) -> list[asyncpg.Record]:
        """Every state job `job_id` was written in (its insert, then each update), in order."""
        async with self._pool.acquire() as connection:
            return list(
                await connection.fetch(
                    "SELECT * FROM test_job_states WHERE job_id = $1 ORDER BY seq", job_id
                )
            )


@asynccontextmanager
async def recorded_job_states(pool: asyncpg.Pool) -> AsyncIterator[JobStates]:
    """Record every row state of `digest_jobs` as it is written (a trigger copies each inserted
    or updated row), however quickly the next one follows: no poll or subscriber can miss one.
    The trigger and its table are dropped again on the way out."""
    async with pool.acquire() as connection:
        await connection.execute(_STOP_RECORDING + _RECORD)
    try:
        yield JobStates(pool)
    finally:
        async with pool.acquire() as connection:
            await connection.execute(_STOP_RECORDING)
