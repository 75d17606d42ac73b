"""Documents in Postgres: store an ingested document, queue a digest of it for a query, read
the digest cache (and prune it), and store a digest (its job's end is `jobs.finish_job`, in the same transaction).

The SQL is in db/queries.sql (`insert_document`, `insert_document_digest`, ...); this module only
shapes parameters and keeps the transactions in one place.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import asyncpg

from db.jobs import JobKind, enqueue_job
from db.models import (
    DigestJob,
    Document,
    DocumentDigest,
    StoredDocument,
    as_row,
    as_row_or_none,
    as_rows,
)
from db.queries import QUERIES

# What a document row is, as `runner.documents.CanonicalDocument.as_record()` produces it.
DocumentRecord = dict[str, Any]


async def store_document(
    connection: asyncpg.Connection, record: DocumentRecord
) -> tuple[StoredDocument, bool]:
    """Insert the document, or return the stored one with the same canonical text.
    Returns (row, created). `record["minhash"]` (signed, `fingerprint.as_signed`) finds the
    earliest stored near-duplicate, kept as the new row's `near_duplicate_of`, among the
    documents agreeing on `record["near_duplicate_min_agreements"]` positions. A stored row
    without a fingerprint (stored before 0015) gets it now, with what metadata it lacks."""
    row = await connection.fetchrow(
        QUERIES["insert_document"],
        record["source_text_hash"],
        record["canonical_text"],
        record["content_type"],
        record.get("title"),
        record.get("source_url"),
        record.get("page_spans"),
        record.get("warnings") or [],
        record.get("author"),
        record.get("publisher"),
        record.get("published_at"),
        record.get("minhash"),
        record.get("near_duplicate_min_agreements"),
    )
    assert row is not None  # either the insert or the existing row
    stored = as_row(StoredDocument, row)
    if not stored.created and stored.minhash is None and record.get("minhash"):
        filled = await connection.fetchrow(
            QUERIES["backfill_document"],
            stored.id,
            record.get("author"),
            record.get("publisher"),
            record.get("published_at"),
            record["minhash"],
            record.get("near_duplicate_min_agreements"),
        )
        if filled is not None:
            stored = as_row(StoredDocument, filled)
    return stored, stored.created


def document_record(row: Document | StoredDocument) -> DocumentRecord:
    """The `CanonicalDocument.from_record` form of a full documents row."""
    return {
        "canonical_text": row.canonical_text,
        "source_text_hash": row.source_text_hash,
        "content_type": row.content_type,
        "title": row.title,
        "page_spans": row.page_spans,
        "warnings": row.warnings or [],
        "source_url": row.source_url,
        "author": row.author,
        "publisher": row.publisher,
        "published_at": row.published_at,
        "near_duplicate_of": row.near_duplicate_of,
    }


async def trigger_document_digest(
    connection: asyncpg.Connection,
    document_id: int,
    query: str,
    query_hash: str,
    *,
    max_attempts: int,
    batch_deadline: datetime | None = None,
) -> tuple[DigestJob, bool]:
    """Queue a digest of the document for `query`, or return the queued/running job for the same
    query (with its own options). Returns (job, created). The options of a document job, queued
    by `jobs.enqueue_job`; `batch_deadline` (a batch's end, UTC) is kept as its ISO string."""
    options: dict[str, Any] = {"query": query, "query_hash": query_hash}
    if batch_deadline is not None:
        options["batch_deadline"] = batch_deadline.isoformat()
    return await enqueue_job(
        connection, JobKind.DOCUMENT, document_id, options, max_attempts=max_attempts
    )


async def cached_digest_id(connection: asyncpg.Connection, cache_key: str) -> int | None:
    """The stored digest under `cache_key`, touching its last use; None if absent."""
    digest_id: int | None = await connection.fetchval(
        QUERIES["document_digest_by_cache_key"], cache_key
    )
    return digest_id


async def prune_document_digests(
    connection: asyncpg.Connection, retention_days: float, limit: int
) -> int:
    """Delete up to `limit` document digests unused for more than `retention_days`; how many."""
    deleted: int = await connection.fetchval(
        QUERIES["prune_document_digests"], retention_days, limit
    )
    return deleted


async def insert_document_digest(
    connection: asyncpg.Connection, job_id: int | None, values: dict[str, Any]
) -> tuple[int, bool]:
    """Store one validated digest; returns (id, created). An existing row with the same cache key
    wins (a concurrent job computed the same deterministic digest)."""
    row = await connection.fetchrow(
        QUERIES["insert_document_digest"],
        values["document_id"],
        job_id,
        values["query"],
        values["query_hash"],
        values["cache_key"],
        values["payload"],
        values["summarizer"],
        values["evidence_mode"],
        values["original_tokens"],
        values["final_tokens"],
        values["tokens_estimated"],
        values["warnings"],
        values["duration_ms"],
        bool(values.get("archived", False)),
    )
    assert row is not None
    return int(row["id"]), bool(row["created"])


async def document_by_id(connection: asyncpg.Connection, document_id: int) -> Document | None:
    record = await connection.fetchrow(QUERIES["document_by_id"], document_id)
    return as_row_or_none(Document, record)


async def documents_by_ids(connection: asyncpg.Connection, ids: list[int]) -> list[Document]:
    return as_rows(Document, await connection.fetch(QUERIES["documents_by_ids"], ids))


async def document_digests_by_ids(
    connection: asyncpg.Connection, ids: list[int]
) -> list[DocumentDigest]:
    records = await connection.fetch(QUERIES["document_digests_by_ids"], ids)
    return as_rows(DocumentDigest, records)


async def latest_digests_of_documents(
    connection: asyncpg.Connection, ids: list[int], per_document: int
) -> list[DocumentDigest]:
    """The newest digests of each document (at most `per_document`), newest first."""
    records = await connection.fetch(QUERIES["latest_digests_of_documents"], ids, per_document)
    return as_rows(DocumentDigest, records)
