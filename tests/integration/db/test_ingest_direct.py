"""A channel's first import by direct COPY into `messages`: it stores exactly what the staging
upsert stores (a real Discord export, duplicates inside the file), later imports take the upsert,
two first imports of one channel at once end with every message once, and an import stopped
mid-way loses none of what it committed."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import asyncpg

from db.ingest import ChannelKey, IncomingMessage, MessageIngestor
from runner.grounding.normalize import normalize_text
from runner.importers.detect import iter_records
from runner.importers.ingest import import_path
from runner.importers.records import ParsedMessage
from tests.support.database import messages
from tests.support.paths import shared_data

DISCORD_CSV = "chat/discord/komodo_cc-general_48.csv"
# Small batches, so the export's hundred messages are written in several.
BATCH = 20


def discord_messages() -> list[ParsedMessage]:
    return [
        record
        for record in iter_records(shared_data(DISCORD_CSV))
        if isinstance(record, ParsedMessage)
    ]


async def ingest(
    pool: asyncpg.Pool, channel: str, items: Sequence[IncomingMessage]
) -> MessageIngestor:
    ingestor = MessageIngestor(pool, normalize_text, batch_size=BATCH)
    await ingestor.add_many(ChannelKey(server="s", channel=channel), items)
    await ingestor.flush()
    return ingestor


async def ingest_through_staging(
    pool: asyncpg.Pool, channel: str, items: Sequence[IncomingMessage]
) -> MessageIngestor:
    """The same import into a channel that already holds a message (so not a first import:
    every batch goes through the staging upsert); that message is deleted afterwards."""
    seed = messages([("seed", "already here")], prefix="seed")
    await ingest(pool, channel, seed)
    ingestor = await ingest(pool, channel, items)
    async with pool.acquire() as connection:
        await connection.execute("DELETE FROM messages WHERE external_id = 'seed1'")
    return ingestor


async def stored(pool: asyncpg.Pool, channel: str) -> list[tuple[Any, ...]]:
    """Every column an import sets or the database derives, in the channel's id order (ids
    themselves differ between channels), with each message's superseded revisions."""
    async with pool.acquire() as connection:
        rows = await connection.fetch(
            """SELECT m.external_id, m.author, m.ts, m.reply_to, m.raw_text, m.normalized_text,
                      m.attachments, m.revision, m.covered_revision, m.covered_by_digest_id,
                      m.parent_id, m.conversation_id,
                      (SELECT array_agg(r.raw_text ORDER BY r.revision)
                       FROM message_revisions r WHERE r.message_id = m.id) AS revisions
               FROM messages m JOIN channels c ON c.id = m.channel_id
               WHERE c.name = $1 ORDER BY m.id""",
            channel,
        )
    return [tuple(row) for row in rows]


async def test_a_first_import_stores_what_the_upsert_stores(db: asyncpg.Pool) -> None:
    items = discord_messages()
    assert len(items) > 4 * BATCH
    direct = await ingest(db, "direct", items)
    staged = await ingest_through_staging(db, "staged", items)
    assert direct.counts.direct_batches == -(-len(items) // BATCH)  # every batch
    assert staged.counts.direct_batches == 0
    for counts in (direct.counts, staged.counts):
        assert (counts.inserted, counts.updated, counts.unchanged) == (len(items), 0, 0)
    rows = await stored(db, "direct")
    assert len(rows) == len(items)
    assert rows == await stored(db, "staged")


async def test_the_import_command_path_takes_the_direct_copy_on_a_new_channel(
    db: asyncpg.Pool,
) -> None:
    path = shared_data(DISCORD_CSV)
    first = await import_path(db, path, channel="komodo")
    again = await import_path(db, path, channel="komodo")
    assert first.inserted == first.accepted > 0
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, first.accepted)
    await ingest_through_staging(db, "staged", discord_messages())
    assert await stored(db, "komodo") == await stored(db, "staged")


async def test_duplicates_inside_the_file_end_as_the_upsert_leaves_them(db: asyncpg.Pool) -> None:
    """The same id twice in one batch keeps the last (no revision); in a later batch it edits the
    row the earlier batch stored (a revision): the direct batch meets the conflict, is rolled
    back and redone through staging, and the rest of the import stays on staging."""
    items = messages([("ann", f"line {i}") for i in range(3 * BATCH)])
    files = [{"url": "https://example.org/a.png", "name": "a.png"}]
    items[7] = replace(items[7], attachments=files)  # jsonb travels through the binary COPY
    in_batch = replace(items[3], text="line 3, corrected at once")
    later = replace(items[5], text="line 5, corrected later")
    file = [*items[:10], in_batch, *items[10 : 2 * BATCH + 5], later, *items[2 * BATCH + 5 :]]
    direct = await ingest(db, "direct", file)
    staged = await ingest_through_staging(db, "staged", file)
    assert direct.counts.direct_batches == 2  # the two batches before the conflict
    assert (direct.counts.inserted, direct.counts.updated) == (len(items), 1)
    assert (staged.counts.inserted, staged.counts.updated) == (len(items), 1)
    rows = await stored(db, "direct")
    assert rows == await stored(db, "staged")
    by_id = {row[0]: row for row in rows}
    assert (by_id["m4"][4], by_id["m4"][7], by_id["m4"][12]) == (in_batch.text, 1, None)
    assert (by_id["m6"][4], by_id["m6"][7], by_id["m6"][12]) == (later.text, 2, ["line 5"])
    assert by_id["m8"][6] == files


async def test_a_second_import_takes_the_upsert(db: asyncpg.Pool) -> None:
    items = messages([("ann", f"line {i}") for i in range(2 * BATCH)])
    first = await ingest(db, "c", items)
    edited = [*items[:10], replace(items[10], text="edited"), *items[11:]]
    second = await ingest(db, "c", edited)
    assert first.counts.direct_batches == 2
    assert second.counts.direct_batches == 0
    assert (second.counts.inserted, second.counts.updated, second.counts.unchanged) == (
        0,
        1,
        len(items) - 1,
    )
    rows = await stored(db, "c")
    assert [row[7] for row in rows].count(2) == 1  # the one edit is a revision


async def test_two_first_imports_of_one_channel_at_once(db: asyncpg.Pool) -> None:
    """Both may start on the direct path; whichever meets the other's rows falls back to the
    upsert. No error, every message once, the same rows as one import alone."""
    items = discord_messages()
    one, two = await asyncio.gather(ingest(db, "both", items), ingest(db, "both", items))
    assert one.counts.inserted + two.counts.inserted == len(items)
    for ingestor in (one, two):
        counts = ingestor.counts
        assert counts.inserted + counts.updated + counts.unchanged == len(items)
        assert counts.updated == 0
    await ingest(db, "alone", items)
    assert await stored(db, "both") == await stored(db, "alone")


async def test_an_import_stopped_mid_way_keeps_its_batches_and_a_rerun_completes(
    db: asyncpg.Pool,
) -> None:
    """A process killed after some batches committed (the batch it was filling never reaches
    the database): what was committed stays, and running the import again stores the rest
    through the upsert, ending with what one whole import stores."""
    items = discord_messages()
    stopped = MessageIngestor(db, normalize_text, batch_size=BATCH)
    await stopped.add_many(ChannelKey(server="s", channel="stopped"), items[: 3 * BATCH + 7])
    await stopped.settle()  # the writes handed over; the 7 being filled are lost with the process
    assert len(await stored(db, "stopped")) == 3 * BATCH
    rerun = await ingest(db, "stopped", items)
    assert rerun.counts.direct_batches == 0
    assert (rerun.counts.inserted, rerun.counts.unchanged) == (len(items) - 3 * BATCH, 3 * BATCH)
    await ingest(db, "whole", items)
    assert await stored(db, "stopped") == await stored(db, "whole")
