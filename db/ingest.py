"""Bulk message ingest: COPY a batch into a temporary staging table, then one upsert into
`messages` keyed on (channel, external id); or, while a channel had no messages when this import
began writing to it, COPY straight into `messages`. Re-importing the same export changes nothing;
an edited message updates its row, keeping its previous text as an immutable revision. Memory
holds at most two batches, whatever the input size: while one batch is written, the caller parses
the next (see `MessageIngestor`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import asyncpg

from db.models import Channel, as_row
from db.queries import QUERIES

logger = logging.getLogger(__name__)

BATCH_SIZE = 5000
# While a batch is being written, `add` yields to the event loop every this many rows so the
# write progresses while the caller keeps parsing: each of its round trips, and each time the
# COPY's data fills the socket's buffer (asyncio pauses writing at 64 KB: a 5,000-row batch is
# ~1 MB, a dozen pauses), waits for the next yield. Every 32 rows rather than 256 halved the
# parser's waits for the write in flight (bench/ingest.py `parser_waited_seconds`, 100,000
# messages, 3 runs each); a yield costs 5-10 us, 2-3% of parsing 32 rows.
_YIELD_EVERY = 32

_STAGING_DDL = """
CREATE TEMP TABLE IF NOT EXISTS message_staging (
    seq bigint, channel_id bigint, external_id text, author text, ts timestamptz,
    reply_to text, raw_text text, normalized_text text, attachments jsonb
) ON COMMIT DELETE ROWS
"""

_STAGING_COLUMNS = (
    "seq",
    "channel_id",
    "external_id",
    "author",
    "ts",
    "reply_to",
    "raw_text",
    "normalized_text",
    "attachments",
)

# Last occurrence of an id in a batch wins, and new rows are inserted in the export's order
# (`seq`), so their ids keep it: minute-resolution logs (IRC, Gitter) have many messages with one
# timestamp, and the channel's (ts, id) order must be the order they were said in (threading
# reads it). Unchanged rows are not rewritten (no dead tuples, and the counts tell a re-import
# apart from new data). A changed text becomes a new revision in the
# database itself: the trigger of migration 0003 copies the old text into message_revisions and
# bumps `revision` on the rows this upsert updates, so new messages cost nothing more. A change
# of timestamp, author or attachments alone keeps the revision: it neither uncovers the message
# nor breaks a pointer.
_MERGE = """
INSERT INTO messages AS m (channel_id, external_id, author, ts, reply_to, raw_text,
                           normalized_text, attachments)
SELECT channel_id, external_id, author, ts, reply_to, raw_text, normalized_text, attachments
FROM (SELECT DISTINCT ON (channel_id, external_id) *
      FROM message_staging
      ORDER BY channel_id, external_id, seq DESC) AS latest
ORDER BY seq
ON CONFLICT ON CONSTRAINT messages_channel_external DO UPDATE
SET author = EXCLUDED.author, ts = EXCLUDED.ts, reply_to = EXCLUDED.reply_to,
    raw_text = EXCLUDED.raw_text, normalized_text = EXCLUDED.normalized_text,
    attachments = EXCLUDED.attachments
WHERE (m.author, m.ts, m.reply_to, m.raw_text, m.attachments)
      IS DISTINCT FROM (EXCLUDED.author, EXCLUDED.ts, EXCLUDED.reply_to, EXCLUDED.raw_text,
                        EXCLUDED.attachments)
RETURNING (xmax = 0) AS inserted
"""
# Imports into one channel, and a digest's coverage update (runner/digests/store.py, the same key:
# queries.sql lock_channel_messages), are serialized: both lock many message rows, in different
# orders, and could otherwise deadlock. Held to commit. Taken first, in the batch's opening round
# trip with BEGIN (`_opening`), so the direct path's emptiness check below holds until commit.
_LOCK_KEY = 1835165555
# The channels among $1 that hold a message: a channel that holds none (read under its lock) can
# take its first batch by direct COPY, since no row of the batch can conflict.
_NON_EMPTY = """
SELECT coalesce(array_agg(c), '{}') FROM unnest($1::bigint[]) AS c
WHERE EXISTS (SELECT 1 FROM messages WHERE channel_id = c)
"""
_DIRECT_COLUMNS = _STAGING_COLUMNS[1:]
# Counted in the server: one row back per batch instead of one per message.
_MERGE_COUNTED = f"""
WITH merged AS ({_MERGE.strip()})
SELECT count(*) FILTER (WHERE inserted) AS inserted, count(*) AS written FROM merged
"""


# A batch's COPY is bounded as a whole: 30 s plus 1 s per MB of text, far above what a healthy
# server needs (5,000 messages in well under a second), so only a connection that stopped
# answering without being reported lost ever reaches it. asyncpg's own `timeout=` does not do
# this: it bounds the wait for the server's reply, not the wait for the socket to take the data.
_COPY_BASE_SECONDS = 30.0
_COPY_SECONDS_PER_MB = 1.0


def _copy_timeout(rows: list[tuple[Any, ...]]) -> float:
    text_chars = sum(len(row[6]) + len(row[7]) for row in rows)  # raw_text, normalized_text
    return _COPY_BASE_SECONDS + _COPY_SECONDS_PER_MB * text_chars / 1_000_000


@contextlib.asynccontextmanager
async def _interrupted_when_lost(connection: asyncpg.Connection) -> AsyncIterator[None]:
    """Run the block until it ends or `connection` is lost, whichever comes first; a loss
    raises `ConnectionDoesNotExistError` at once.

    asyncpg (0.32) wakes a query waiting for its reply when the connection is lost, but not a
    COPY waiting for the socket to take more data: the transport paused writing
    (`pause_writing`) while the rows were flowing and never resumes once the connection is
    gone, so `copy_in` waits on its `writing_allowed` event for ever. The connection's
    termination listener does run (asyncpg calls it when it sees the loss): here it ends the
    block. Whatever asyncpg raises while the block unwinds (a transaction's exit on a closed
    connection says `cannot call Transaction.__aexit__()`) becomes that one error."""
    loop = asyncio.get_running_loop()
    lost = False
    watching = True
    try:
        async with asyncio.timeout(None) as scope:

            def on_lost(_connection: object) -> None:
                nonlocal lost
                if watching:  # asyncpg calls listeners soon after the loss, maybe too late
                    lost = True
                    scope.reschedule(loop.time())  # cancels the block where it waits

            connection.add_termination_listener(on_lost)
            try:
                yield
            finally:
                watching = False
                if not scope.expired():
                    scope.reschedule(None)
                # A lost pool connection is already detached from its proxy (which then
                # refuses every call), and asyncpg dropped its listeners.
                with contextlib.suppress(asyncpg.InterfaceError):
                    connection.remove_termination_listener(on_lost)
    except Exception as error:
        if lost or _is_gone(connection):
            raise asyncpg.ConnectionDoesNotExistError(
                "the database connection was lost while a batch was written; nothing of that "
                "batch is stored"
            ) from error
        raise


def _is_gone(connection: asyncpg.Connection) -> bool:
    try:
        return bool(connection.is_closed())
    except asyncpg.InterfaceError:  # a pool's proxy whose connection was lost and released
        return True


async def _copy_batch(
    connection: asyncpg.Connection,
    rows: list[tuple[Any, ...]],
    table: str = "message_staging",
    columns: tuple[str, ...] = _STAGING_COLUMNS,
) -> None:
    seconds = _copy_timeout(rows)
    try:
        async with asyncio.timeout(seconds):
            await connection.copy_records_to_table(table, records=rows, columns=columns)
    except TimeoutError:
        # Whatever waits on this connection next (the transaction's rollback, the pool's
        # reset) would wait on the same silent socket: close it without a word to the server.
        logger.warning(
            "COPY of a batch of %d messages did not finish in %.0fs: closing its connection",
            len(rows),
            seconds,
        )
        connection.terminate()
        raise


def _opening(channel_ids: Iterable[int], *, staging: bool) -> str:
    """BEGIN, the staging table when the batch goes through it, and the channels' import locks
    (in channel order, like every writer, so two never wait on each other), as one simple
    query: one round trip. Only integers are formatted in."""
    locks = ", ".join(
        f"pg_advisory_xact_lock({_LOCK_KEY}, {int(channel_id) % 2147483647})"
        for channel_id in sorted(set(channel_ids))
    )
    return f"BEGIN; {_STAGING_DDL.strip() + ';' if staging else ''} SELECT {locks}"


def latest_rows(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The batch as `messages` rows, as the upsert would leave them: the last occurrence of a
    (channel, external id) only, in the export's order (`seq`), without `seq`."""
    last = {(row[1], row[2]): row for row in rows}
    if len(last) == len(rows):
        return [row[1:] for row in rows]
    return [row[1:] for row in rows if last[(row[1], row[2])] is row]


@dataclass
class BatchCounts:
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    direct: bool = False  # written by direct COPY into messages


async def write_batch(
    connection: asyncpg.Connection, rows: list[tuple[Any, ...]], direct: dict[int, bool]
) -> BatchCounts:
    """Store one batch in one transaction of its own (rolled back whole on any failure).

    `direct` says, per channel id, whether this import may COPY straight into `messages`: True
    while the channel had no messages when the import's first batch for it took its lock and
    no conflict appeared since, False for the staging upsert; a channel not in it yet is looked
    up (under its lock) and recorded. A batch goes direct only when all its channels may. If a
    direct COPY meets a row already there (the same id in an earlier batch of the file, or
    another import of the channel committed meanwhile), the batch is rolled back and written
    again through staging, and its channels stay on staging for the rest of the import."""
    channel_ids = {row[1] for row in rows}
    unknown = [channel_id for channel_id in channel_ids if channel_id not in direct]
    go_direct = all(direct.get(channel_id, True) for channel_id in channel_ids)
    try:
        await connection.execute(_opening(channel_ids, staging=not go_direct))
        if unknown:
            non_empty = set(await connection.fetchval(_NON_EMPTY, sorted(unknown)))
            direct.update((channel_id, channel_id not in non_empty) for channel_id in unknown)
            if go_direct and non_empty:
                go_direct = False
                await connection.execute(_STAGING_DDL)
        if go_direct:
            latest = latest_rows(rows)
            try:
                await _copy_batch(connection, latest, "messages", _DIRECT_COLUMNS)
            except asyncpg.UniqueViolationError:
                await connection.execute("ROLLBACK")
                direct.update((channel_id, False) for channel_id in channel_ids)
                return await write_batch(connection, rows, direct)
            await connection.execute("COMMIT")
            return BatchCounts(inserted=len(latest), direct=True)
        await _copy_batch(connection, rows)
        result = await connection.fetchrow(_MERGE_COUNTED)
        await connection.execute("COMMIT")
    except BaseException:
        if not _is_gone(connection) and connection.is_in_transaction():
            with contextlib.suppress(Exception):
                await connection.execute("ROLLBACK")
        raise
    assert result is not None
    inserted, written = int(result["inserted"]), int(result["written"])
    distinct = len({(row[1], row[2]) for row in rows})
    return BatchCounts(inserted=inserted, updated=written - inserted, unchanged=distinct - written)


class IncomingMessage(Protocol):
    """What ingest needs of a parsed message (runner.importers.records.ParsedMessage fits)."""

    # Read-only members, so frozen dataclasses and models fit as well as plain objects.
    @property
    def external_id(self) -> str: ...
    @property
    def author(self) -> str: ...
    @property
    def ts(self) -> datetime: ...
    @property
    def text(self) -> str: ...
    @property
    def reply_to(self) -> str | None: ...
    @property
    def attachments(self) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class ChannelKey:
    server: str | None
    channel: str
    channel_external_id: str | None = None
    server_external_id: str | None = None


@dataclass
class IngestCounts:
    received: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    channel_ids: dict[str, int] = field(default_factory=dict)
    direct_batches: int = 0  # batches written by direct COPY (a channel's first import)


async def resolve_channel(connection: asyncpg.Connection, key: ChannelKey) -> Channel:
    """Find or create the channel (and its server) named by `key`."""
    server_id = None
    if key.server:
        server_id = await connection.fetchval(
            QUERIES["upsert_server"], key.server, key.server_external_id
        )
    record = await connection.fetchrow(
        QUERIES["upsert_channel"], server_id, key.channel, key.channel_external_id
    )
    return as_row(Channel, record)


class MessageIngestor:
    """Accumulates normalized messages per channel and flushes them in COPY batches.

    A full batch is written by a background task while `add` goes on filling the next one, so
    parsing (this process's CPU) overlaps with COPY and upsert (the database's): at most one
    write is in flight, and batches commit in the order they were filled, so the last
    occurrence of an id still wins across batches. `flush()` waits for every write and returns
    once all added rows are stored; a failed write raises from the next `add` or `flush`.

    `normalize` is passed in (runner.grounding.normalize.normalize_text) so this module stays SQL only."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        normalize: Any,
        *,
        batch_size: int = BATCH_SIZE,
    ) -> None:
        self._pool = pool
        self._normalize = normalize
        self._batch_size = batch_size
        self._rows: list[tuple[Any, ...]] = []
        self._channel_ids: dict[ChannelKey, int] = {}
        self._in_flight: asyncio.Task[None] | None = None
        # Per channel id: may this import COPY straight into messages (see `write_batch`).
        self._direct: dict[int, bool] = {}
        self.counts = IngestCounts()

    async def channel_id(self, key: ChannelKey) -> int:
        if key not in self._channel_ids:
            async with self._pool.acquire() as connection:
                channel = await resolve_channel(connection, key)
            self._channel_ids[key] = channel.id
            self.counts.channel_ids[key.channel] = channel.id
        return self._channel_ids[key]

    async def add(self, key: ChannelKey, message: IncomingMessage) -> None:
        # The hot path of every import: a dict lookup rather than a coroutine per message.
        channel_id = self._channel_ids.get(key)
        if channel_id is None:
            channel_id = await self.channel_id(key)
        rows = self._rows
        rows.append(
            (
                len(rows),
                channel_id,
                message.external_id,
                message.author,
                message.ts,
                message.reply_to,
                message.text,
                self._normalize(message.text),
                message.attachments,  # jsonb, encoded by the connection's codec
            )
        )
        self.counts.received += 1
        if len(rows) >= self._batch_size:
            await self._wait_in_flight()
            self._rows = []
            self._in_flight = asyncio.create_task(self._write(rows))
        elif self._in_flight is not None and len(rows) % _YIELD_EVERY == 0:
            await asyncio.sleep(0)

    async def add_many(self, key: ChannelKey, messages: Iterable[IncomingMessage]) -> None:
        for message in messages:
            await self.add(key, message)

    async def flush(self) -> int:
        """Write the pending batch and wait for every write; returns how many rows were
        pending in this process (the batch being filled)."""
        await self._wait_in_flight()
        rows, self._rows = self._rows, []
        if rows:
            await self._write(rows)
        return len(rows)

    async def settle(self) -> None:
        """Wait for the write in flight without writing the batch being filled: what a caller
        stopping on an error calls, so a batch already handed over is stored as it would
        have been before writes overlapped parsing."""
        await self._wait_in_flight()

    async def _wait_in_flight(self) -> None:
        task, self._in_flight = self._in_flight, None
        if task is not None:
            await task

    async def _write(self, rows: list[tuple[Any, ...]]) -> None:
        async with self._pool.acquire() as connection, _interrupted_when_lost(connection):
            result = await write_batch(connection, rows, self._direct)
        self.counts.inserted += result.inserted
        self.counts.updated += result.updated
        self.counts.unchanged += result.unchanged
        self.counts.direct_batches += result.direct
