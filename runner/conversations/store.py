"""The channel job's threading step: read the window's messages with the context before it,
thread the ones no digest threaded yet (runner/conversations/threads.py), and write the parents and
conversations in the digest's store transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from db import channels as channel_queries
from db import conversations as conversation_queries
from runner.conversations.threads import StoredConversation, ThreadedMessage, Threading
from runner.core.window import MessageKey, StoredWindow, Window

# Messages before the window that a window's message may answer.
CONTEXT_MESSAGES = 200


@dataclass(frozen=True)
class ThreadingInput:
    messages: list[ThreadedMessage]  # context first, then the window, in time order
    internal_ids: dict[str, int]  # external id → messages row, for every message above
    stored: dict[int, StoredConversation]


async def read_threading_input(
    connection: asyncpg.Connection, channel_id: int, window: Window, stored_window: StoredWindow
) -> ThreadingInput:
    """The window's messages (with the conversation of those already threaded) and the
    `CONTEXT_MESSAGES` before it, with the stored conversations they belong to."""
    internal_ids = dict(stored_window.internal_ids)
    threaded = await conversation_queries.message_conversations(
        connection, list(internal_ids.values())
    )
    messages: list[ThreadedMessage] = []
    first = stored_window.keys[0] if stored_window.keys else None
    if first is not None:
        for row in await conversation_queries.messages_before(
            connection, channel_id, first.ts, first.message_id, CONTEXT_MESSAGES
        ):
            internal_ids[row.external_id] = row.id
            messages.append(
                ThreadedMessage(
                    row.external_id,
                    row.author,
                    row.ts,
                    row.normalized_text,
                    row.reply_to,
                    row.revision,
                    row.conversation_id,
                )
            )
    for message in window.messages:
        row_id = internal_ids[message.message_id]
        messages.append(
            ThreadedMessage(
                message.message_id,
                message.author,
                message.ts,
                message.normalized_text,
                message.reply_to,
                stored_window.revisions.get(message.message_id, 1),
                threaded.get(row_id),
            )
        )
    ids = sorted({m.conversation_id for m in messages if m.conversation_id is not None})
    rows = await conversation_queries.conversations_by_ids(connection, ids)
    stored = {
        row.id: StoredConversation(
            row.id,
            tuple(row.participants),
            row.message_count,
            row.first_ts,
            row.last_ts,
            row.answered,
        )
        for row in rows
    }
    return ThreadingInput(messages, internal_ids, stored)


async def _write_conversations(
    connection: asyncpg.Connection,
    channel_id: int,
    threading: Threading,
    internal_ids: dict[str, int],
) -> tuple[list[int], list[int | None], list[int]]:
    """Write new conversations, extend stored ones, and return each message's internal id, parent
    and conversation, to record (inside the caller's transaction). The new conversations go in one statement:
    a 50,000-message window opens thousands, and a round trip each was a visible share of
    the digest's CPU (the worker's and the server's)."""
    new_rows: list[dict[str, Any]] = []
    for conversation in threading.conversations:
        if conversation.continues is None:
            assert conversation.root_message_id is not None
            title = conversation.title
            new_rows.append(
                {
                    "position": len(new_rows),
                    "root_message_id": internal_ids[conversation.root_message_id],
                    "title": title.text if title else "",
                    "title_message_id": None if title is None else internal_ids[title.message_id],
                    "title_revision": None if title is None else title.revision,
                    "title_char_start": None if title is None else title.char_start,
                    "title_char_end": None if title is None else title.char_end,
                    "participants": list(conversation.participants),
                    "message_count": conversation.message_count,
                    "answered": conversation.answered,
                    "first_ts": conversation.first_ts.isoformat(),
                    "last_ts": conversation.last_ts.isoformat(),
                }
            )
    new_ids = iter(
        await conversation_queries.insert_conversations(connection, channel_id, new_rows)
    )
    message_ids: list[int] = []
    parent_ids: list[int | None] = []
    conversation_ids: list[int] = []
    for conversation in threading.conversations:
        if conversation.continues is None:
            conversation_id = next(new_ids)
        else:
            conversation_id = conversation.continues
            await conversation_queries.extend_conversation(
                connection,
                conversation_id,
                list(conversation.participants),
                conversation.message_count,
                conversation.first_ts,
                conversation.last_ts,
                conversation.answered,
            )
        for message_id in conversation.message_ids:
            parent = threading.parents.get(message_id)
            message_ids.append(internal_ids[message_id])
            parent_ids.append(None if parent is None else internal_ids.get(parent))
            conversation_ids.append(conversation_id)
    return message_ids, parent_ids, conversation_ids


async def store_threading(
    connection: asyncpg.Connection,
    channel_id: int,
    threading: Threading,
    internal_ids: dict[str, int],
) -> None:
    """Write new conversations, extend stored ones, and record each message's parent and
    conversation (inside the caller's transaction)."""
    message_ids, parent_ids, conversation_ids = await _write_conversations(
        connection, channel_id, threading, internal_ids
    )
    await conversation_queries.thread_messages(
        connection, message_ids, parent_ids, conversation_ids
    )


async def store_threading_and_cover(
    connection: asyncpg.Connection,
    channel_id: int,
    threading: Threading,
    internal_ids: dict[str, int],
    digest_id: int,
    cover: Sequence[MessageKey],
) -> list[int]:
    """`store_threading`, and the messages of `cover` covered by the digest where they are still
    at the revision read, in one statement: both write the same message rows, and a row
    rewritten once instead of twice halves the server's share of the store. A threaded
    message that is not to be covered (context, a failed chunk's) is threaded all the same.
    Returns the internal ids of `cover` edited since (not covered)."""
    message_ids, parent_ids, conversation_ids = await _write_conversations(
        connection, channel_id, threading, internal_ids
    )
    rows: dict[int, list[int | None]] = {
        message_id: [parent_id, conversation_id, None]
        for message_id, parent_id, conversation_id in zip(
            message_ids, parent_ids, conversation_ids, strict=True
        )
    }
    for key in cover:
        rows.setdefault(key.message_id, [None, None, None])[2] = key.revision
    missed = await channel_queries.thread_and_cover_messages(
        connection,
        channel_id,
        digest_id,
        list(rows),
        [row[0] for row in rows.values()],
        [row[1] for row in rows.values()],
        [row[2] for row in rows.values()],
    )
    return [message.id for message in missed]
