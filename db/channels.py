"""Channels and their messages in Postgres: lookups, the messages a digest window reads, the
coverage a digest earns, and the per-channel counts the API shows.

The SQL is in db/queries.sql; which messages a window reads and which it leaves out is decided
in runner/digests/window.py (pure logic), which calls these.
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

from db.models import (
    ChannelMessageCount,
    ChannelOverview,
    ChannelUncoveredCount,
    ChannelWithServer,
    Message,
    MessageFields,
    MessageId,
    MessageRange,
    MessageText,
    RevisionText,
    SliceBound,
    WindowMessageRow,
    as_row_or_none,
    as_rows,
)
from db.queries import QUERIES


async def channel_by_id(
    connection: asyncpg.Connection, channel_id: int
) -> ChannelWithServer | None:
    record = await connection.fetchrow(QUERIES["channel_by_id"], channel_id)
    return as_row_or_none(ChannelWithServer, record)


async def channels_by_name(
    connection: asyncpg.Connection, name: str, server: str | None
) -> list[ChannelWithServer]:
    """The channels named `name` (on `server` when given)."""
    records = await connection.fetch(QUERIES["channel_by_name"], name, server)
    return as_rows(ChannelWithServer, records)


async def channels_by_ids(
    connection: asyncpg.Connection, ids: list[int]
) -> list[ChannelWithServer]:
    return as_rows(ChannelWithServer, await connection.fetch(QUERIES["channels_by_ids"], ids))


async def channels_named(
    connection: asyncpg.Connection, name: str, server_id: int | None
) -> list[ChannelWithServer]:
    """The channels called exactly `name` (on server `server_id` when given): at most two, so
    a caller can tell one answer from an ambiguous name."""
    records = await connection.fetch(QUERIES["channels_named"], name, server_id)
    return as_rows(ChannelWithServer, records)


async def messages_by_ids(connection: asyncpg.Connection, ids: list[int]) -> list[Message]:
    return as_rows(Message, await connection.fetch(QUERIES["messages_by_ids"], ids))


async def message_states(
    connection: asyncpg.Connection, ids: list[int]
) -> dict[int, tuple[int, int | None]]:
    """Messages row → (current revision, conversation). Read straight from the records, not
    into a model per row: a window has up to tens of thousands."""
    records = await connection.fetch(QUERIES["message_states"], ids)
    return {record[0]: (record[1], record[2]) for record in records}


async def message_fields_by_ids(
    connection: asyncpg.Connection, ids: list[int]
) -> list[MessageFields]:
    """Messages by internal id without their texts (see message_texts)."""
    return as_rows(MessageFields, await connection.fetch(QUERIES["message_fields_by_ids"], ids))


async def message_texts(
    connection: asyncpg.Connection, ids: list[int], normalized: bool
) -> list[MessageText]:
    """One text of each message: the normalized one, or the one as imported."""
    query = "message_normalized_texts" if normalized else "message_raw_texts"
    return as_rows(MessageText, await connection.fetch(QUERIES[query], ids))


async def messages_by_external_ids(
    connection: asyncpg.Connection, channel_id: int, external_ids: list[str]
) -> list[Message]:
    """Messages of one channel by external id."""
    records = await connection.fetch(QUERIES["messages_by_external_ids"], channel_id, external_ids)
    return as_rows(Message, records)


async def channel_overviews(connection: asyncpg.Connection) -> list[ChannelOverview]:
    """Every channel with its counts and newest digest's time, by name."""
    return as_rows(ChannelOverview, await connection.fetch(QUERIES["channel_overviews"]))


async def channel_message_counts(
    connection: asyncpg.Connection, ids: list[int]
) -> list[ChannelMessageCount]:
    """The message counts of the channels that have messages."""
    records = await connection.fetch(QUERIES["channel_message_counts"], ids)
    return as_rows(ChannelMessageCount, records)


async def channel_uncovered_counts(
    connection: asyncpg.Connection, ids: list[int]
) -> list[ChannelUncoveredCount]:
    """The uncovered counts of the channels that have messages no digest covers."""
    records = await connection.fetch(QUERIES["channel_uncovered_counts"], ids)
    return as_rows(ChannelUncoveredCount, records)


async def revision_texts(
    connection: asyncpg.Connection, message_ids: list[int], revisions: list[int]
) -> list[RevisionText]:
    """The texts of the given message revisions."""
    records = await connection.fetch(QUERIES["revision_texts"], message_ids, revisions)
    return as_rows(RevisionText, records)


async def window_messages(
    connection: asyncpg.Connection, channel_id: int, max_messages: int
) -> list[WindowMessageRow]:
    """A coverage window: the channel's uncovered messages in (ts, id) order, at most
    `max_messages`."""
    records = await connection.fetch(QUERIES["window_messages"], channel_id, max_messages)
    return as_rows(WindowMessageRow, records)


async def catch_up_messages(
    connection: asyncpg.Connection,
    channel_id: int,
    since: datetime | None,
    until: datetime | None,
    max_messages: int,
) -> list[WindowMessageRow]:
    """A catch-up window: the messages with since <= ts < until, at most `max_messages`."""
    records = await connection.fetch(
        QUERIES["catch_up_messages"], channel_id, since, until, max_messages
    )
    return as_rows(WindowMessageRow, records)


async def uncovered_after(
    connection: asyncpg.Connection, channel_id: int, ts: datetime, message_id: int
) -> MessageRange | None:
    """The range of uncovered messages after (ts, message_id): what a coverage window's cap
    left for the next digest."""
    record = await connection.fetchrow(QUERIES["uncovered_after"], channel_id, ts, message_id)
    return as_row_or_none(MessageRange, record)


async def catch_up_after(
    connection: asyncpg.Connection,
    channel_id: int,
    ts: datetime,
    message_id: int,
    until: datetime | None,
) -> MessageRange | None:
    """The range of messages after (ts, message_id) and before `until`: what a catch-up
    window's cap left out."""
    record = await connection.fetchrow(QUERIES["catch_up_after"], channel_id, ts, message_id, until)
    return as_row_or_none(MessageRange, record)


async def count_uncovered(connection: asyncpg.Connection, channel_id: int, up_to: int) -> int:
    """How many of the channel's messages no digest covers, counted up to `up_to`."""
    count: int = await connection.fetchval(QUERIES["count_uncovered"], channel_id, up_to)
    return count


async def uncovered_slice_bounds(
    connection: asyncpg.Connection, channel_id: int, slice_messages: int
) -> list[SliceBound]:
    """The messages that open or close each slice of `slice_messages` uncovered messages."""
    records = await connection.fetch(QUERIES["uncovered_slice_bounds"], channel_id, slice_messages)
    return as_rows(SliceBound, records)


async def slice_messages(
    connection: asyncpg.Connection,
    channel_id: int,
    first: tuple[datetime, int],
    last: tuple[datetime, int],
    max_messages: int,
) -> list[WindowMessageRow]:
    """A coverage slice's window: the uncovered messages from `first` through `last` (ts, id)."""
    records = await connection.fetch(
        QUERIES["slice_messages"], channel_id, *first, *last, max_messages
    )
    return as_rows(WindowMessageRow, records)


async def uncovered_in_slice_after(
    connection: asyncpg.Connection,
    channel_id: int,
    ts: datetime,
    message_id: int,
    last: tuple[datetime, int],
) -> MessageRange | None:
    """What a capped slice window left: its uncovered messages after (ts, message_id)."""
    record = await connection.fetchrow(
        QUERIES["uncovered_in_slice_after"], channel_id, ts, message_id, *last
    )
    return as_row_or_none(MessageRange, record)


# How long a store may wait for the channel's lock. Coverage slices of one channel store one
# after the other, and one 100,000-message store can hold the lock for minutes on a busy
# machine: under the pool's per-statement timeout (30 s) the waiting slice failed its attempt
# and lost its whole map. The wait stays bounded: the holder's own statements each time out.
CHANNEL_LOCK_WAIT_SECONDS = 900.0


async def lock_channel(connection: asyncpg.Connection, channel_id: int) -> None:
    """Serialize the coverage writes of one channel (inside a digest's store transaction),
    waiting up to CHANNEL_LOCK_WAIT_SECONDS for another store of the channel to commit."""
    await connection.execute(QUERIES["lock_channel"], channel_id, timeout=CHANNEL_LOCK_WAIT_SECONDS)


async def cover_messages(
    connection: asyncpg.Connection,
    channel_id: int,
    digest_id: int,
    message_ids: list[int],
    revisions: list[int],
) -> list[MessageId]:
    """Mark the messages covered by the digest where they are still at the revision it read;
    returns the ids of those edited since. Takes the channel's message lock first, as
    imports do, so the two never deadlock."""
    await connection.execute(QUERIES["lock_channel_messages"], channel_id)
    records = await connection.fetch(QUERIES["cover_messages"], digest_id, message_ids, revisions)
    return as_rows(MessageId, records)


async def thread_and_cover_messages(
    connection: asyncpg.Connection,
    channel_id: int,
    digest_id: int,
    message_ids: list[int],
    parent_ids: list[int | None],
    conversation_ids: list[int | None],
    revisions: list[int | None],
) -> list[MessageId]:
    """`thread_messages` and `cover_messages` in one statement, so each message row is rewritten
    once: a message with a conversation is threaded (unless already threaded), one with a
    revision covered where it is still at that revision. Returns the ids to cover that were
    edited since. Takes the channel's message lock first, like `cover_messages`."""
    await connection.execute(QUERIES["lock_channel_messages"], channel_id)
    records = await connection.fetch(
        QUERIES["thread_and_cover_messages"],
        digest_id,
        message_ids,
        parent_ids,
        conversation_ids,
        revisions,
    )
    return as_rows(MessageId, records)
