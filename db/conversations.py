"""Conversations in Postgres: the context a digest threads its messages against, and the
write of what it threaded (in the digest's store transaction, runner/digests/store.py).

The SQL is in db/queries.sql (`messages_before`, `insert_conversations`, `thread_messages`, ...).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import asyncpg

from db.models import (
    ConversationWithState,
    MessageConversation,
    ThreadContextRow,
    as_rows,
)
from db.queries import QUERIES


async def messages_before(
    connection: asyncpg.Connection, channel_id: int, ts: datetime, message_id: int, limit: int
) -> list[ThreadContextRow]:
    """The `limit` messages of the channel just before (ts, message_id), in time order."""
    records = await connection.fetch(QUERIES["messages_before"], channel_id, ts, message_id, limit)
    return as_rows(ThreadContextRow, records)


async def message_conversations(
    connection: asyncpg.Connection, message_ids: list[int]
) -> dict[int, int | None]:
    """Messages row → its conversation (None: not threaded yet)."""
    rows = as_rows(
        MessageConversation, await connection.fetch(QUERIES["message_conversations"], message_ids)
    )
    return {row.id: row.conversation_id for row in rows}


async def conversations_by_ids(
    connection: asyncpg.Connection, ids: list[int]
) -> list[ConversationWithState]:
    return as_rows(
        ConversationWithState, await connection.fetch(QUERIES["conversations_by_ids"], ids)
    )


async def insert_conversations(
    connection: asyncpg.Connection, channel_id: int, rows: list[dict[str, Any]]
) -> list[int]:
    """New conversations in one statement (rows as `insert_conversations` reads them: each with
    its `position`, timestamps as ISO strings); their ids in position order."""
    if not rows:
        return []
    records = await connection.fetch(QUERIES["insert_conversations"], channel_id, rows)
    return [int(record["id"]) for record in records]


async def extend_conversation(
    connection: asyncpg.Connection,
    conversation_id: int,
    participants: list[str],
    message_count: int,
    first_ts: datetime,
    last_ts: datetime,
    answered: bool,
) -> None:
    await connection.execute(
        QUERIES["extend_conversation"],
        conversation_id,
        participants,
        message_count,
        first_ts,
        last_ts,
        answered,
    )


async def thread_messages(
    connection: asyncpg.Connection,
    message_ids: list[int],
    parent_ids: list[int | None],
    conversation_ids: list[int],
) -> None:
    """Each message's parent and conversation, for messages not threaded yet."""
    await connection.execute(QUERIES["thread_messages"], message_ids, parent_ids, conversation_ids)
