"""Bulk ingest into Postgres: idempotent re-import, edits update, duplicates in a batch."""

from __future__ import annotations

from dataclasses import replace

import asyncpg

from db.ingest import ChannelKey, MessageIngestor
from runner.grounding.normalize import normalize_text
from tests.support.database import messages


async def _ingest(pool: asyncpg.Pool, items, batch_size: int = 5000) -> MessageIngestor:  # type: ignore[no-untyped-def]
    ingestor = MessageIngestor(pool, normalize_text, batch_size=batch_size)
    await ingestor.add_many(ChannelKey(server="s", channel="c"), items)
    await ingestor.flush()
    return ingestor


async def test_reimport_is_idempotent_and_edits_update(db: asyncpg.Pool) -> None:
    items = messages([("ann", f"line {i}\r\nsecond\u200b line") for i in range(120)])
    first = await _ingest(db, items, batch_size=50)
    assert (first.counts.inserted, first.counts.updated) == (120, 0)
    second = await _ingest(db, items, batch_size=50)
    assert (second.counts.inserted, second.counts.updated, second.counts.unchanged) == (0, 0, 120)
    edited = [replace(items[5], text="edited text")] + items[6:8]
    third = await _ingest(db, edited)
    assert (third.counts.inserted, third.counts.updated, third.counts.unchanged) == (0, 1, 2)
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM messages") == 120
        row = await connection.fetchrow("SELECT * FROM messages WHERE external_id = 'm1'")
        assert row["raw_text"] == "line 0\r\nsecond\u200b line"
        assert row["normalized_text"] == "line 0\nsecond line"
        assert (
            await connection.fetchval("SELECT raw_text FROM messages WHERE external_id = 'm6'")
            == "edited text"
        )


async def test_duplicate_ids_in_one_batch_keep_the_last(db: asyncpg.Pool) -> None:
    items = messages([("ann", "first"), ("ann", "second")])
    duplicate = [items[0], replace(items[0], text="first, corrected"), items[1]]
    ingestor = await _ingest(db, duplicate)
    assert ingestor.counts.inserted == 2
    async with db.acquire() as connection:
        text = await connection.fetchval("SELECT raw_text FROM messages WHERE external_id = 'm1'")
    assert text == "first, corrected"


async def test_snowflake_ids_stay_strings(db: asyncpg.Pool) -> None:
    items = [
        replace(m, external_id=str(412323938782150658 + i))
        for i, m in enumerate(messages([("a", "x"), ("b", "y")]))
    ]
    await _ingest(db, items)
    async with db.acquire() as connection:
        ids = [
            r["external_id"]
            for r in await connection.fetch("SELECT external_id FROM messages ORDER BY id")
        ]
    assert ids == ["412323938782150658", "412323938782150659"]


async def test_messages_of_one_timestamp_keep_the_export_order(db: asyncpg.Pool) -> None:
    """Minute-resolution logs: the (ts, id) order the channel is read in is the file's order,
    whatever the ids (here they sort the other way round)."""
    said = messages([("ann", f"line {i}") for i in range(30)])
    same_minute = [replace(m, external_id=f"z{99 - i}", ts=said[0].ts) for i, m in enumerate(said)]
    await _ingest(db, same_minute, batch_size=12)
    async with db.acquire() as connection:
        texts = [
            r["raw_text"]
            for r in await connection.fetch("SELECT raw_text FROM messages ORDER BY ts, id")
        ]
    assert texts == [f"line {i}" for i in range(30)]
