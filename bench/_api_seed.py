"""The data of bench/api.py: one server, 20 channels, and N finished jobs each with its digest
(every third digest with an overview long enough to be cut into an excerpt)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from db.engine import connect
from db.migrate import migrate

BASE_TIME = datetime(2025, 1, 1, tzinfo=UTC)


async def seed(url: str, digests: int) -> list[int]:
    """One server, 20 channels, `digests` finished jobs each with its digest. Returns job ids."""
    connection = await connect(url)
    try:
        await migrate(connection)
        async with connection.transaction():
            server_id = await connection.fetchval(
                "INSERT INTO servers (name) VALUES ($1) RETURNING id", f"bench-api-{os.getpid()}"
            )
            channel_ids = [
                await connection.fetchval(
                    "INSERT INTO channels (server_id, name) VALUES ($1, $2) RETURNING id",
                    server_id,
                    f"channel-{n}",
                )
                for n in range(20)
            ]
            job_ids: list[int] = []
            for n in range(digests):
                created = BASE_TIME + timedelta(minutes=n)
                channel_id = channel_ids[n % len(channel_ids)]
                stats = {
                    "messages": 100 + n,
                    "chunks": 3,
                    "llm_calls": 4,
                    "duration_seconds": 1.25,
                    "extractor": "offline",
                }
                job_id = await connection.fetchval(
                    "INSERT INTO digest_jobs (channel_id, status, phase, chunks_done, chunks_total,"
                    " attempts, stats, created_at, started_at, finished_at, updated_at)"
                    " VALUES ($1, 'succeeded', 'store', 3, 3, 1, $2, $3, $3, $4, $4) RETURNING id",
                    channel_id,
                    stats,
                    created,
                    created + timedelta(seconds=2),
                )
                # Every third overview is long, so the excerpt rule is exercised too.
                overview = f"Digest {n}: the team discussed release {n % 7}. " * (
                    12 if n % 3 == 0 else 2
                )
                digest_id = await connection.fetchval(
                    "INSERT INTO digests (channel_id, job_id, title, overview, signal_quality,"
                    " signal_reason, message_count, window_start, window_end, extractor, created_at)"
                    " VALUES ($1, $2, $3, $4, $5, 'bench', $6, $7, $8, 'offline', $8) RETURNING id",
                    channel_id,
                    job_id,
                    f"Digest {n}",
                    overview.strip(),
                    ("high", "medium", "low")[n % 3],
                    100 + n,
                    created - timedelta(hours=1),
                    created,
                )
                await connection.execute(
                    "UPDATE digest_jobs SET digest_id = $2 WHERE id = $1", job_id, digest_id
                )
                job_ids.append(job_id)
        await connection.execute("ANALYZE")
        return job_ids
    finally:
        await connection.close()
