"""Job tests without sleeping: a job's clock moved (a lease that has run out, a retry backoff
that is over, as the rows would read once that time had passed: the queue compares these
columns with the database's now(), so moving them is what waiting would have done), and a mark
on the job events channel that tells a listener it has heard everything committed before it,
and who listens for new jobs."""

from __future__ import annotations

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
    """How many sessions of this server LISTEN for new jobs: a worker's listener connection runs
    nothing but its LISTEN, which pg_stat_activity shows as its last statement."""
    count = await connection.fetchval(
        "SELECT count(*) FROM pg_stat_activity WHERE query = $1", f'LISTEN "{JOBS_CHANNEL}"'
    )
    return int(count)
