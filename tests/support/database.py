"""Small builders for database tests: channels with messages, without going through importers."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from db.engine import connect, embedded_database_url, stop_embedded_server
from db.ingest import ChannelKey, MessageIngestor
from db.migrate import available_migrations, migrate
from runner.grounding.normalize import normalize_text

BASE_TIME = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Msg:
    external_id: str
    author: str
    ts: datetime
    text: str
    reply_to: str | None = None
    attachments: list[dict[str, Any]] = field(default_factory=list)


def messages(
    texts: list[tuple[str, str]], *, start: datetime = BASE_TIME, prefix: str = "m"
) -> list[Msg]:
    """(author, text) pairs → messages one minute apart with ids m1, m2, ..."""
    return [
        Msg(f"{prefix}{i + 1}", author, start + timedelta(minutes=i), text)
        for i, (author, text) in enumerate(texts)
    ]


async def add_channel(
    pool: asyncpg.Pool, name: str, items: list[Msg], server: str | None = "test-server"
) -> int:
    ingestor = MessageIngestor(pool, normalize_text)
    key = ChannelKey(server=server, channel=name)
    await ingestor.add_many(key, items)
    await ingestor.flush()
    return await ingestor.channel_id(key)


def row_id(global_id: str) -> int:
    """The row id inside an API global id, base64("Type:pk"), for reading the row in SQL."""
    return int(base64.b64decode(global_id).decode().split(":", 1)[1])


@contextmanager
def own_embedded_server(home: Path, *, migrated: bool = True) -> Iterator[str]:
    """An embedded server in `home` for one test module, which its tests may crash or freeze
    without touching the session's: its URL (the schema migrated unless told not to), stopped
    at the end."""
    url = embedded_database_url(home)

    async def prepare() -> None:
        connection = await connect(url)
        try:
            await migrate(connection)
        finally:
            await connection.close()

    try:
        if migrated:
            asyncio.run(prepare())
        yield url
    finally:
        stop_embedded_server(home)


async def migrate_before(connection: asyncpg.Connection, version: int) -> None:
    """Apply the migrations older than `version` as the old code did (each recorded in
    schema_migrations), so a test can write the rows the old code wrote and then migrate."""
    await connection.execute(
        "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, "
        "applied_at timestamptz NOT NULL DEFAULT now())"
    )
    for migration in available_migrations():
        if migration.version >= version:
            break
        await connection.execute(migration.sql)
        await connection.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            migration.version,
            migration.name,
        )
