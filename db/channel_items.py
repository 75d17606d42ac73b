"""Channel items in Postgres (0008): the open items a digest links against, and the write of
what it linked, created and changed (in the digest's store transaction, runner/digests/store.py via
runner/memory/store.py); the reads the API renders items, histories and mentions from.

The SQL is in db/queries.sql (`open_channel_items`, `insert_channel_item`, ...).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import asyncpg

from db.models import (
    ChannelItem,
    ChannelItemEventWithMessage,
    ChannelOpenItemCounts,
    CountedItemMention,
    DigestItemRow,
    as_rows,
)
from db.queries import QUERIES


async def open_channel_items(
    connection: asyncpg.Connection, channel_id: int, limit: int
) -> list[ChannelItem]:
    """The channel's items still in their first state (open, in force, current), the `limit`
    most recent of each kind, newest first."""
    return as_rows(
        ChannelItem, await connection.fetch(QUERIES["open_channel_items"], channel_id, limit)
    )


async def digest_item_rows(connection: asyncpg.Connection, digest_id: int) -> list[DigestItemRow]:
    return as_rows(DigestItemRow, await connection.fetch(QUERIES["digest_item_rows"], digest_id))


async def insert_channel_item(
    connection: asyncpg.Connection,
    channel_id: int,
    kind: str,
    status: str,
    text: str,
    owner: str | None,
    conversation_id: int | None,
    message_ids: list[str],
    said_at: datetime,
    digest_id: int,
) -> int:
    item_id = await connection.fetchval(
        QUERIES["insert_channel_item"],
        channel_id,
        kind,
        status,
        text,
        owner,
        conversation_id,
        message_ids,
        said_at,
        digest_id,
    )
    return int(item_id)


async def mention_channel_items(
    connection: asyncpg.Connection,
    digest_id: int,
    item_ids: list[int],
    row_ids: list[int],
    positions: list[int],
) -> None:
    """Record digest rows (`row_ids` at `positions`) as mentions of `item_ids`."""
    await connection.execute(
        QUERIES["mention_channel_items"], item_ids, digest_id, row_ids, positions
    )


async def change_channel_item_status(
    connection: asyncpg.Connection, item_id: int, from_status: str, to_status: str
) -> bool:
    """Move an item to `to_status` if it is still in `from_status`; whether it moved."""
    changed = await connection.fetchval(
        QUERIES["change_channel_item_status"], item_id, from_status, to_status
    )
    return changed is not None


async def insert_channel_item_events(
    connection: asyncpg.Connection, rows: Iterable[tuple[Any, ...]]
) -> None:
    """Events in the column order of `insert_channel_item_event`."""
    await connection.executemany(QUERIES["insert_channel_item_event"], rows)


async def channel_items_by_ids(connection: asyncpg.Connection, ids: list[int]) -> list[ChannelItem]:
    return as_rows(ChannelItem, await connection.fetch(QUERIES["channel_items_by_ids"], ids))


async def events_of_channel_items(
    connection: asyncpg.Connection, ids: list[int]
) -> list[ChannelItemEventWithMessage]:
    records = await connection.fetch(QUERIES["events_of_channel_items"], ids)
    return as_rows(ChannelItemEventWithMessage, records)


async def mentions_of_channel_items(
    connection: asyncpg.Connection, ids: list[int]
) -> list[CountedItemMention]:
    records = await connection.fetch(QUERIES["mentions_of_channel_items"], ids)
    return as_rows(CountedItemMention, records)


async def open_item_counts_of_channels(
    connection: asyncpg.Connection, channel_ids: list[int]
) -> list[ChannelOpenItemCounts]:
    """Open questions, open action items and decisions in force of each channel having any, in
    one statement."""
    records = await connection.fetch(QUERIES["open_item_counts_of_channels"], channel_ids)
    return as_rows(ChannelOpenItemCounts, records)
