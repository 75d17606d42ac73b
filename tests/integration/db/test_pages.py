"""Keyset pagination: every row that existed when paging began is seen exactly once, whatever
is inserted meanwhile; cursors are opaque and checked; page size is capped."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import asyncpg
import pytest

from db import pages
from db.pages import InvalidCursor, KeysetCursor
from tests.support.database import BASE_TIME, Msg, add_channel, messages


async def _insert_digests(pool: asyncpg.Pool, channel_id: int, count: int) -> None:
    async with pool.acquire() as connection:
        await connection.executemany(
            "INSERT INTO digests (channel_id, title, overview, signal_quality, message_count, extractor)"
            " VALUES ($1, $2, '', 'low', 0, 'offline')",
            [(channel_id, f"digest {i}") for i in range(count)],
        )


async def _read_all(
    pool: asyncpg.Pool,
    spec: pages.ListSpec[Any],
    filters: dict[str, Any],
    first: int,
    between_pages: Callable[[], Awaitable[None]] | None = None,
) -> list[int]:
    seen: list[int] = []
    after = None
    while True:
        async with pool.acquire() as connection:
            page = await pages.fetch_page(connection, spec, filters, first=first, after=after)
        seen.extend(row.id for row in page.rows)
        if between_pages:
            await between_pages()
        if not page.has_next_page:
            return seen
        after = page.cursor_of(page.rows[-1])


async def test_digest_pages_survive_concurrent_inserts(db: asyncpg.Pool) -> None:
    channel_id = await add_channel(db, "busy", messages([("a", "x")]))
    await _insert_digests(db, channel_id, 57)
    async with db.acquire() as connection:
        existing = {r["id"] for r in await connection.fetch("SELECT id FROM digests")}

    async def insert_more() -> None:
        await _insert_digests(db, channel_id, 3)

    seen = await _read_all(db, pages.DIGESTS, {"channel_id": channel_id}, 10, insert_more)
    assert len(seen) == len(set(seen)), "a row was returned twice"
    assert existing <= set(seen), "a row that existed before paging was skipped"


async def test_message_pages_in_time_order_with_inserts_interleaved(db: asyncpg.Pool) -> None:
    items = messages([("a", f"message {i}") for i in range(45)])
    channel_id = await add_channel(db, "log", items)
    counter = iter(range(1000))

    async def backfill() -> None:
        # Messages whose timestamps fall inside pages already read and ahead of the cursor.
        n = next(counter)
        late = [Msg(f"late{n}", "z", BASE_TIME + timedelta(minutes=n * 7, seconds=30), "late")]
        await add_channel(db, "log", late)

    seen = await _read_all(db, pages.MESSAGES, {"channel_id": channel_id}, 7, backfill)
    async with db.acquire() as connection:
        original = await connection.fetch(
            "SELECT id FROM messages WHERE channel_id = $1 AND external_id LIKE 'm%'", channel_id
        )
    assert len(seen) == len(set(seen))
    assert {r["id"] for r in original} <= set(seen)


async def test_first_is_capped_and_cursors_are_checked(db: asyncpg.Pool) -> None:
    async with db.acquire() as connection:
        with pytest.raises(ValueError, match="between 1 and 100"):
            await pages.fetch_page(connection, pages.DIGESTS, {}, first=101, after=None)
        with pytest.raises(ValueError):
            await pages.fetch_page(connection, pages.DIGESTS, {}, first=0, after=None)
        with pytest.raises(InvalidCursor):
            await pages.fetch_page(connection, pages.DIGESTS, {}, first=5, after="not-a-cursor")
        other = KeysetCursor("messages", BASE_TIME, 1).encode()
        with pytest.raises(InvalidCursor, match="belongs to messages"):
            await pages.fetch_page(connection, pages.DIGESTS, {}, first=5, after=other)
        # The sort key must be of the list's kind: a time for digests, a count for entities.
        counted = KeysetCursor("digests", 3, 1).encode()
        with pytest.raises(InvalidCursor, match="not one this API produced"):
            await pages.fetch_page(connection, pages.DIGESTS, {}, first=5, after=counted)
        timed = KeysetCursor("entities", BASE_TIME, 1).encode()
        with pytest.raises(InvalidCursor, match="not one this API produced"):
            await pages.fetch_page(connection, pages.ENTITIES, {}, last=5, before=timed)


async def test_knowledge_search_and_filters_build_bound_sql(db: asyncpg.Pool) -> None:
    sql, params = pages.build_page_query(
        pages.KNOWLEDGE_ITEMS, {"query": "'; DROP TABLE x; --", "kind": None}, None, 20
    )
    assert "DROP" not in sql and params[0] == "'; DROP TABLE x; --"
    async with db.acquire() as connection:
        page = await pages.fetch_page(
            connection, pages.KNOWLEDGE_ITEMS, {"query": "'; DROP TABLE x; --"}, first=5, after=None
        )
    assert page.rows == []


async def test_concurrent_readers_agree(db: asyncpg.Pool) -> None:
    channel_id = await add_channel(db, "c", messages([("a", "x")]))
    await _insert_digests(db, channel_id, 30)
    results = await asyncio.gather(*(_read_all(db, pages.DIGESTS, {}, 4) for _ in range(4)))
    assert all(result == results[0] for result in results)
    assert len(results[0]) == 30
