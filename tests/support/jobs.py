"""Job tests without sleeping: a job's clock moved (a lease that has run out, a retry backoff
that is over), as the rows would read once that time had passed. The queue compares these
columns with the database's now(), so moving them is what waiting would have done."""

from __future__ import annotations

import asyncpg


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
