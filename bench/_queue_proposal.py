"""A proposed `claim_next_job` for db/queries.sql, measured by bench/job_queue.py `--proposal`
without editing db/ (the db/ owner decides).

Why: the shipped claim selects `(queued AND due) OR (running AND lease expired)`, which Postgres
answers with a BitmapOr over both partial indexes and then sorts *every* claimable row to take
one, so each claim costs O(backlog): with 10,000 queued jobs, thousands of rows are sorted per
claim. Here each branch is its own ordered index scan that stops at the first unlocked row
(`digest_jobs_claimable (run_after, id) WHERE status = 'queued'` serves the first), and the
expired-lease branch runs only when no queued job is due (coalesce evaluates its second
argument, an init plan, only when the first is null). UNION ALL would read more naturally, but
Postgres refuses FOR UPDATE with UNION.

One difference: a job whose worker died is reclaimed after the due queued jobs rather than in
`run_after` order with them.
"""

from __future__ import annotations

import asyncpg

from runner.worker import Worker

PROPOSED_CLAIM_NEXT_JOB = """
UPDATE digest_jobs j
SET status = 'running',
    worker_id = $1,
    attempts = j.attempts + 1,
    lease_expires_at = now() + make_interval(secs => $2),
    started_at = coalesce(j.started_at, now()),
    updated_at = now()
WHERE j.id = coalesce(
    (SELECT id FROM digest_jobs
     WHERE status = 'queued' AND run_after <= now()
     ORDER BY run_after, id
     LIMIT 1
     FOR UPDATE SKIP LOCKED),
    (SELECT id FROM digest_jobs
     WHERE status = 'running' AND lease_expires_at < now()
     ORDER BY lease_expires_at
     LIMIT 1
     FOR UPDATE SKIP LOCKED)
)
RETURNING j.*
"""


async def claim_next_job_proposed(
    connection: asyncpg.Connection, worker_id: str, lease_seconds: float
) -> asyncpg.Record | None:
    return await connection.fetchrow(PROPOSED_CLAIM_NEXT_JOB, worker_id, lease_seconds)


class ProposedClaimMixin(Worker):
    """Worker.run_once with the proposed claim query; everything else unchanged."""

    async def run_once(self) -> bool:
        async with self._pool.acquire() as connection:
            job = await claim_next_job_proposed(
                connection, self.worker_id, self._config.lease_seconds
            )
        if job is None:
            return False
        await self._process(job)
        return True
