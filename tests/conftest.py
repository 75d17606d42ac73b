"""Fixtures every level shares: a real PostgreSQL (embedded via pgserver, or TEST_DATABASE_URL),
a migrated pool, clean tables per test, and settings for fast workers. Unit tests never ask for
them; integration and end-to-end tests do."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from db.engine import connect, create_pool, embedded_database_url
from db.migrate import migrate
from server.settings import Settings

TABLES = (
    "servers, channels, messages, digest_jobs, digests, topics, decisions, action_items, "
    "open_questions, links, artifacts, knowledge_items, entities, chunk_results, "
    "message_revisions, digest_messages, documents, document_digests, reports, schedules, "
    "schedule_runs, people, destinations, destination_secrets, schedule_destinations, deliveries"
)


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """TEST_DATABASE_URL (a dedicated, disposable database: tests truncate it) or an embedded
    server in a temporary directory."""
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        return url
    return embedded_database_url(tmp_path_factory.mktemp("digestd-home"))


@pytest.fixture(scope="session")
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    connection = await connect(database_url)
    try:
        await migrate(connection)
    finally:
        await connection.close()
    created = await create_pool(database_url, max_size=12)
    yield created
    await created.close()


@pytest.fixture
async def db(pool: asyncpg.Pool) -> asyncpg.Pool:
    """The pool, with every table emptied first so each test starts from nothing."""
    async with pool.acquire() as connection:
        await connection.execute(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE")
    return pool


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Settings for tests: the test database, the offline extractor, fast leases and polling."""
    return Settings(
        database_url=database_url,
        digestd_home=tmp_path / "home",
        digest_extractor="offline",
        digestd_lease_seconds=2.0,
        digestd_heartbeat_seconds=0.3,
        digestd_poll_seconds=0.2,
        digestd_retry_base_seconds=0.1,
        digestd_retry_max_seconds=0.5,
        digestd_chunk_tokens=1500,
    )
