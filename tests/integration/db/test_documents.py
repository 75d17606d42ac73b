"""Migration 0002 and db/documents.py on a real Postgres: dedup by canonical text, one active job
per (document, query) beside 0001's one active job per channel, the kind/source constraint, and
the digest cache key's uniqueness."""

from __future__ import annotations

import asyncpg
import pytest

from db import documents as document_queries
from db import jobs as job_queries
from runner.documents.cache_key import query_hash
from runner.documents.ingest import ingest_text
from tests.support.database import add_channel, messages


async def test_documents_jobs_and_channels_share_the_queue(db: asyncpg.Pool) -> None:
    document = ingest_text("Postgres is the system. " * 20, title="notes")
    channel_id = await add_channel(db, "general", messages([("ann", "hello there")]))
    async with db.acquire() as connection:
        row, created = await document_queries.store_document(connection, document.as_record())
        again, created_again = await document_queries.store_document(
            connection,
            ingest_text("Postgres   is the system. " * 20).as_record(),  # same canonical text
        )
        assert created and not created_again and again.id == row.id
        assert again.title == "notes"  # the first ingest's metadata is kept

        first, new = await document_queries.trigger_document_digest(
            connection, row.id, "q one", query_hash("q one"), max_attempts=3
        )
        same, new_again = await document_queries.trigger_document_digest(
            connection, row.id, "q one", query_hash("q one"), max_attempts=3
        )
        other, other_new = await document_queries.trigger_document_digest(
            connection, row.id, "q two", query_hash("q two"), max_attempts=3
        )
        channel_job, channel_new = await job_queries.enqueue_job(
            connection, job_queries.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )
        assert new and not new_again and same.id == first.id
        assert other_new and other.id != first.id and channel_new
        assert first.kind == "document" and first.channel_id is None
        assert first.options == {"query": "q one", "query_hash": query_hash("q one")}
        assert channel_job.kind == "channel" and channel_job.document_id is None

        # The same claim query hands out both kinds, oldest first.
        claimed = [await job_queries.claim_next_job(connection, "w1", 30) for _ in range(4)]
        assert [job.id for job in claimed if job] == [first.id, other.id, channel_job.id]

        with pytest.raises(asyncpg.CheckViolationError):
            await connection.execute("INSERT INTO digest_jobs (kind) VALUES ('document')")
        with pytest.raises(asyncpg.CheckViolationError):
            await connection.execute(
                "INSERT INTO digest_jobs (kind, document_id, channel_id) VALUES ('document', $1, $2)",
                row.id,
                channel_id,
            )
        with pytest.raises(asyncpg.CheckViolationError):
            await connection.execute(
                "INSERT INTO documents (source_text_hash, canonical_text, content_type) "
                "VALUES ('md5:abc', 'x', 'text/plain')"
            )


async def test_a_cache_key_is_stored_once(db: asyncpg.Pool) -> None:
    document = ingest_text("Evidence must slice to its snippet. " * 10)
    payload = {
        "version": "1.0",
        "content_type": "digest/v1",
        "query_hash": "0" * 8,
        "summary": "s",
        "key_points": [],
        "evidence_snippets": [],
        "original_chars": 10,
        "digest_chars": 1,
        "compression_ratio": 0.1,
        "source_text_hash": document.source_text_hash,
    }
    async with db.acquire() as connection:
        row, _ = await document_queries.store_document(connection, document.as_record())
        cache_key = "digest:1.0:doc-1:abc:def:ghi"
        values = {
            "document_id": row.id,
            "query": "q",
            "query_hash": query_hash("q"),
            "cache_key": cache_key,
            "payload": payload,
            "summarizer": "offline",
            "evidence_mode": "query",
            "original_tokens": 10,
            "final_tokens": 1,
            "tokens_estimated": False,
            "warnings": [],
            "duration_ms": 1,
        }
        first, created = await document_queries.insert_document_digest(connection, None, values)
        second, created_again = await document_queries.insert_document_digest(
            connection, None, values
        )
        assert created and not created_again and first == second
        assert await document_queries.cached_digest_id(connection, cache_key) == first
        assert await document_queries.cached_digest_id(connection, "digest:other") is None
        with pytest.raises(asyncpg.CheckViolationError):
            await document_queries.insert_document_digest(
                connection,
                None,
                values | {"cache_key": "k2", "payload": payload | {"version": "2"}},
            )


async def test_a_document_stored_before_fingerprints_gets_one_when_ingested_again(
    db: asyncpg.Pool,
) -> None:
    """A row as 0015 left an older document (no fingerprint, no metadata) is filled in by the
    next ingest of the same text, and points to the earlier document it repeats; the later
    document is never pointed at by the earlier one."""
    text = " ".join(f"word{i}" for i in range(300))
    original = ingest_text(text, title="original")
    copy = ingest_text(text + " with a line added at the end", title="copy")
    async with db.acquire() as connection:
        first, _ = await document_queries.store_document(connection, original.as_record())
        second, _ = await document_queries.store_document(connection, copy.as_record())
        assert (first.near_duplicate_of, second.near_duplicate_of) == (None, first.id)
        # As before 0015: the copy has no fingerprint and no link.
        await connection.execute(
            "UPDATE documents SET minhash = NULL, near_duplicate_of = NULL WHERE id = $1",
            second.id,
        )
        record = {**copy.as_record(), "author": "Ann Lee", "title": "renamed"}
        again, created = await document_queries.store_document(connection, record)
        assert not created and again.id == second.id
        assert (again.near_duplicate_of, again.author, again.title) == (first.id, "Ann Lee", "copy")
        assert again.minhash is not None
        # A fingerprinted row is left alone: the next ingest changes nothing.
        record = {**copy.as_record(), "author": "Someone Else"}
        same, _ = await document_queries.store_document(connection, record)
        assert same.author == "Ann Lee"
