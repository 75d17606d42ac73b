"""Small builders for database tests: channels with messages, without going through importers."""

from __future__ import annotations

import base64

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from db.ingest import ChannelKey, MessageIngestor
from runner.normalize import normalize_text

BASE_TIME = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Msg:
    external_id: str
    author: str
    ts: datetime
    text: str
    reply_to: str | None = None
    attachments: list[dict[str, Any]] = field(default_factory=list)


def messages(texts: list[tuple[str, str]], *, start: datetime = BASE_TIME, prefix: str = "m") -> list[Msg]:
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
