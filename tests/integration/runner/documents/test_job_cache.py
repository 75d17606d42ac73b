"""The document digest cache (the summarization cache) on real PostgreSQL: a second job for the
same document and query is served from the stored digest with no summarizer call, unless
DIGESTD_SUMMARIZATION_CACHE_ENABLED is off, when the document is summarized again."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from db.documents import store_document
from db.models import DigestJob
from runner.documents.ingest import ingest_text
from runner.documents.job import DocumentJobRunner
from runner.documents.policy import DigestConfig, DigestPolicy
from runner.extract.offline import OfflineExtractor
from runner.worker import Worker, WorkerConfig
from tests.support.documents import DOCUMENT_TEXT, digest_stored_document


@pytest.mark.parametrize("cache_enabled", [True, False])
async def test_a_second_digest_is_served_from_the_cache_only_when_it_is_on(
    db: asyncpg.Pool, database_url: str, cache_enabled: bool
) -> None:
    config = DigestConfig(policy=DigestPolicy.ALWAYS)
    runner = DocumentJobRunner(config=config, cache_enabled=cache_enabled)
    worker = Worker(db, database_url, WorkerConfig(), OfflineExtractor, documents=runner)
    text = f"{DOCUMENT_TEXT}\n\nHandbook edition {uuid.uuid4().hex}."
    async with db.acquire() as connection:
        row, _ = await store_document(connection, ingest_text(text).as_record())

    async def digest_once() -> DigestJob:
        return await digest_stored_document(db, worker, row.id, "How are load tests run?", config)

    first = await digest_once()
    assert first.status == "succeeded" and first.stats["cache_hit"] is False, first.error
    second = await digest_once()
    assert second.status == "succeeded", second.error
    assert second.stats["cache_hit"] is cache_enabled
    assert second.document_digest_id == first.document_digest_id  # one stored digest per key
