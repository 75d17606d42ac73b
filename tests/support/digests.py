"""Channel digests run in the test: a worker on the test database, one digest of a channel, the ids it covered, and an extractor whose chunks fail."""

from __future__ import annotations

from typing import Any

import asyncpg

from db import jobs
from db.models import DigestJob
from runner.core.chunks import Chunk
from runner.core.contract import ChunkSummary
from runner.core.extractor import ChunkFailed, KnownItem
from runner.extract.offline import OfflineExtractor
from runner.worker import Worker, WorkerConfig

TEXTS = [
    ("alice", f"We decided to ship release {i} on Friday after the staging deploy passed.")
    if i % 3 == 0
    else ("bob", f"Action item: I will update the runbook for service {i} tomorrow.")
    for i in range(40)
]


# One real exchange a day of a multi-day channel: a technical question, its answer, the asker
# saying it worked (runner/digests/periods.py tells each day by its exchange).
DAY_EXCHANGES = [
    (
        "How do I configure the nginx reverse proxy so the websocket endpoint upgrades?",
        "You need proxy_set_header Upgrade and Connection upgrade in the location block.",
        "that fixed the websocket handshake, the nginx proxy works now",
    ),
    (
        "Why does the postgres replica lag behind the primary after the nightly vacuum?",
        "The vacuum generates a lot of WAL; raise max_wal_size and check the replication slot.",
        "raising max_wal_size fixed the replica lag on the postgres cluster",
    ),
    (
        "Which flag makes docker compose rebuild the image before starting the service?",
        "Run docker compose up --build, or docker compose build first with --no-cache.",
        "docker compose up --build rebuilt the image, the service starts now",
    ),
]


class FailingChunks(OfflineExtractor):
    """The offline extractor, failing every chunk that holds one of `poison` (an LLM outage)."""

    def __init__(self, poison: set[str]) -> None:
        super().__init__()
        self.poison = poison

    async def extract_chunk(self, chunk: Chunk, known_items: list[KnownItem]) -> ChunkSummary:
        if self.poison & set(chunk.message_ids):
            raise ChunkFailed("endpoint overloaded")
        return await super().extract_chunk(chunk, known_items)


def make_worker(
    pool: asyncpg.Pool, database_url: str, extractor: Any = None, **config: Any
) -> Worker:
    settings = {"chunk_tokens": 200, "lease_seconds": 30.0, **config}
    return Worker(
        pool,
        database_url,
        WorkerConfig(**settings),
        extractor_factory=lambda: extractor or OfflineExtractor(),
    )


async def digest_once(
    pool: asyncpg.Pool,
    database_url: str,
    channel_id: int,
    options: dict[str, Any] | None = None,
    extractor: Any = None,
    **config: Any,
) -> DigestJob:
    async with pool.acquire() as connection:
        job, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, options or {}, max_attempts=3
        )
    assert await make_worker(pool, database_url, extractor, **config).run_once()
    async with pool.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
    assert done is not None
    return done


async def read_ids(pool: asyncpg.Pool, digest_id: int | None) -> list[str]:
    """External ids of the messages a digest read, in conversation order (the id is a run's,
    which has one whenever it wrote a digest)."""
    assert digest_id is not None, "the run wrote no digest"
    async with pool.acquire() as connection:
        rows = await connection.fetch(
            "SELECT m.external_id FROM digest_messages dm JOIN messages m ON m.id = dm.message_id "
            "WHERE dm.digest_id = $1 ORDER BY m.ts, m.id",
            digest_id,
        )
    return [row["external_id"] for row in rows]


async def uncovered(pool: asyncpg.Pool, channel_id: int) -> list[str]:
    async with pool.acquire() as connection:
        rows = await connection.fetch(
            "SELECT external_id FROM messages WHERE channel_id = $1 "
            "AND covered_revision IS DISTINCT FROM revision ORDER BY ts, id",
            channel_id,
        )
    return [row["external_id"] for row in rows]
