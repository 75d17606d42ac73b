"""The items a digest links against are bounded per kind, so a busy channel's knowledge items
never push its older open questions out of reach."""

from __future__ import annotations

from datetime import timedelta

import asyncpg

from db.channel_items import insert_channel_item, open_channel_items
from tests.support.database import BASE_TIME, Msg, add_channel


async def test_the_linking_set_keeps_the_newest_of_each_kind(db: asyncpg.Pool) -> None:
    channel = await add_channel(db, "busy-knowledge", [Msg("k0", "ann", BASE_TIME, "hello")])
    async with db.acquire() as connection:
        digest_id = await connection.fetchval(
            "INSERT INTO digests (channel_id, title, overview, signal_quality, message_count,"
            " extractor) VALUES ($1, 'd', '', 'low', 1, 'offline') RETURNING id",
            channel,
        )
        questions = [
            await insert_channel_item(
                connection,
                channel,
                "question",
                "open",
                f"question {i}",
                "ann",
                None,
                ["k0"],
                BASE_TIME + timedelta(minutes=i),
                digest_id,
            )
            for i in range(3)
        ]
        answered = await insert_channel_item(
            connection,
            channel,
            "question",
            "answered",
            "answered one",
            "ann",
            None,
            ["k0"],
            BASE_TIME,
            digest_id,
        )
        # Knowledge items written later, as a second digest would: the newest rows of all.
        knowledge = [
            await insert_channel_item(
                connection,
                channel,
                "knowledge",
                "current",
                f"fact {i}",
                None,
                None,
                ["k0"],
                BASE_TIME,
                digest_id,
            )
            for i in range(5)
        ]
        await connection.execute(
            "UPDATE channel_items SET created_at = created_at + interval '1 hour'"
            " WHERE id = ANY($1::bigint[])",
            knowledge,
        )
        rows = await open_channel_items(connection, channel, 2)
    ids = [row.id for row in rows]
    # The two newest of each kind that has any, newest first; the answered question never.
    assert sorted(ids) == sorted(knowledge[-2:] + questions[-2:])
    assert answered not in ids
    created = [(row.created_at, row.id) for row in rows]
    assert created == sorted(created, reverse=True)
