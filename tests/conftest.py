"""Shared fixtures: a real PostgreSQL (embedded via pgserver, or TEST_DATABASE_URL), a migrated
pool, clean tables per test, settings for fast workers, and a live HTTP server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
import uvicorn

from db.engine import connect, create_pool, embedded_database_url
from db.migrate import migrate
from server.settings import Settings

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"

TABLES = (
    "servers, channels, messages, digest_jobs, digests, topics, decisions, action_items, "
    "open_questions, links, artifacts, knowledge_items, entities, chunk_results, "
    "message_revisions, digest_messages, documents, document_digests, reports, schedules, "
    "schedule_runs"
)


def shared_data(relative: str) -> Path:
    """A file under ../shared/data, or a skip when the data is not beside the checkout."""
    path = DATA_DIR / relative
    if not path.exists():
        pytest.skip(f"../shared/data/{relative} is absent (real data lives beside the repo)")
    return path


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def running_server(app: object) -> AsyncIterator[str]:
    """Serve `app` with uvicorn on a free loopback port; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")  # type: ignore[arg-type]
    )
    task = asyncio.create_task(server.serve())
    for _ in range(200):
        if server.started:
            break
        if task.done():
            task.result()
        await asyncio.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
