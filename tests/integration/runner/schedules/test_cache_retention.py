"""The caches shrink (runner/schedules/tick.py): the workers' tick deletes the document digests
and chunk results unused for longer than the retention period, oldest use first, and keeps those
written or served from the cache within it. A job whose digest was pruned keeps its end state,
and the same request digests again. Real PostgreSQL, the real worker and the real tick."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg

from db import digests as digest_queries
from db import jobs
from db.documents import store_document
from db.models import DigestJob
from runner.documents.ingest import ingest_text
from runner.documents.job import DocumentJobRunner
from runner.documents.policy import DigestConfig, DigestPolicy
from runner.extract.offline import OfflineExtractor
from runner.schedules.tick import ScheduleTicker, prune_caches
from runner.triggers import trigger_document_digest
from runner.worker import Worker, WorkerConfig
from tests.support.documents import DOCUMENT_TEXT

CONFIG = DigestConfig(policy=DigestPolicy.ALWAYS)


async def _digest(pool: asyncpg.Pool, worker: Worker, document_id: int, query: str) -> DigestJob:
    async with pool.acquire() as connection:
        job, _ = await trigger_document_digest(
            connection, document_id, query, config=CONFIG, max_attempts=3
        )
    assert await worker.run_once()
    async with pool.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
    assert done is not None and done.document_digest_id is not None, done
    return done


async def _age(pool: asyncpg.Pool, table: str, column: str, key: object, days: int) -> None:
    async with pool.acquire() as connection:
        await connection.execute(
            f"UPDATE {table} SET last_used_at = now() - make_interval(days => $2) "
            f"WHERE {column} = $1",
            key,
            days,
        )


async def test_the_tick_prunes_cache_entries_unused_for_the_retention_period(
    db: asyncpg.Pool, database_url: str
) -> None:
    runner = DocumentJobRunner(config=CONFIG)
    worker = Worker(db, database_url, WorkerConfig(), OfflineExtractor, documents=runner)
    text = f"{DOCUMENT_TEXT}\n\nHandbook edition {uuid.uuid4().hex}."
    async with db.acquire() as connection:
        row, _ = await store_document(connection, ingest_text(text).as_record())
    stale = await _digest(db, worker, row.id, "How are load tests run?")
    served = await _digest(db, worker, row.id, "Who reviews a release?")
    fresh = await _digest(db, worker, row.id, "What does the handbook cover?")
    await _age(db, "document_digests", "id", stale.document_digest_id, 40)
    await _age(db, "document_digests", "id", served.document_digest_id, 40)
    # Served from the cache today: that is a use, so the old digest stays.
    again = await _digest(db, worker, row.id, "Who reviews a release?")
    assert again.stats["cache_hit"] is True
    assert again.document_digest_id == served.document_digest_id

    old_chunk, used_chunk = f"test:{uuid.uuid4().hex}", f"test:{uuid.uuid4().hex}"
    async with db.acquire() as connection:
        for key in (old_chunk, used_chunk):
            await digest_queries.save_chunk_result(connection, key, "offline", {"items": []})
    await _age(db, "chunk_results", "cache_key", old_chunk, 40)
    await _age(db, "chunk_results", "cache_key", used_chunk, 40)
    async with db.acquire() as connection:  # a digest reads it: a use
        assert await digest_queries.load_chunk_result(connection, used_chunk) == {"items": []}

    # The tick as the workers run it, with a 30-day retention.
    ticker = ScheduleTicker(db, tick_seconds=0.1, max_attempts=3, cache_retention_days=30)
    stop = asyncio.Event()
    task = asyncio.create_task(ticker.run(stop))
    try:
        async with asyncio.timeout(20):
            while True:
                async with db.acquire() as connection:
                    left = await connection.fetchval(
                        "SELECT count(*) FROM document_digests WHERE id = $1",
                        stale.document_digest_id,
                    )
                if left == 0:
                    break
                await asyncio.sleep(0.05)
    finally:
        stop.set()
        await task

    async with db.acquire() as connection:
        kept = await connection.fetch(
            "SELECT id FROM document_digests WHERE document_id = $1", row.id
        )
        assert {r["id"] for r in kept} == {served.document_digest_id, fresh.document_digest_id}
        assert await digest_queries.load_chunk_result(connection, old_chunk) is None
        assert await digest_queries.load_chunk_result(connection, used_chunk) == {"items": []}
        pruned_job = await jobs.job_by_id(connection, stale.id)
        # A second pass within the same period finds none of this test's entries.
        await prune_caches(connection, 30)
        assert (
            len(
                await connection.fetch(
                    "SELECT id FROM document_digests WHERE document_id = $1", row.id
                )
            )
            == 2
        )
    assert pruned_job is not None and pruned_job.status == "succeeded"
    assert pruned_job.document_digest_id is None  # the job stays; its digest is gone

    # The same request is digested again, not served from a cache that no longer holds it.
    redone = await _digest(db, worker, row.id, "How are load tests run?")
    assert redone.stats["cache_hit"] is False
