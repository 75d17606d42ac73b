"""A catch-up entry cites every message its item's pointers name (runner/catchup/), in the
pointers' order, each with a verbatim quote of that message, and the entries keep their
order: an action item said over three messages cites all three."""

from __future__ import annotations

from datetime import timedelta

import asyncpg

from runner.catchup.ranking import EntryKind
from runner.catchup.store import catch_up
from tests.support.database import BASE_TIME, add_channel, messages

TEXTS = [
    ("ann", "Morning all. Pat, the staging certificate expires on Friday."),
    ("bob", "Coffee first, then standup at ten."),
    ("ann", "The renewal needs the DNS token from the vault."),
    ("cid", "And the staging load balancer must be restarted after the renewal."),
    ("ann", "Pat, can you check the arm64 runners too?"),
]


async def _item(
    connection: asyncpg.Connection,
    channel_id: int,
    kind: str,
    status: str,
    text: str,
    owner: str | None,
    message_ids: list[str],
    said_minute: int,
) -> int:
    item_id: int = await connection.fetchval(
        "INSERT INTO channel_items (channel_id, kind, status, text, owner, message_ids, said_at)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        channel_id,
        kind,
        status,
        text,
        owner,
        message_ids,
        BASE_TIME + timedelta(minutes=said_minute),
    )
    return item_id


async def test_an_entry_cites_every_message_its_item_points_to_in_order(
    db: asyncpg.Pool,
) -> None:
    channel_id = await add_channel(db, "ops", messages(TEXTS))
    async with db.acquire() as connection:
        renewal = await _item(
            connection,
            channel_id,
            "action_item",
            "open",
            "Renew the staging certificate with the DNS token and restart the load balancer",
            "pat",
            ["m1", "m4", "m3"],  # the pointers' order, not the messages'
            0,
        )
        runners = await _item(
            connection,
            channel_id,
            "action_item",
            "open",
            "Check the arm64 runners",
            "pat",
            ["m5"],
            4,
        )
        data = await catch_up(connection, "pat", since=BASE_TIME - timedelta(days=1))
        texts = {
            row["external_id"]: row["normalized_text"]
            for row in await connection.fetch(
                "SELECT external_id, normalized_text FROM messages WHERE channel_id = $1",
                channel_id,
            )
        }
    (section,) = data.channels
    actions = [e for e in section.entries if e.kind == EntryKind.ACTION_ITEM]
    # The ranking is unchanged: newest first within a kind.
    assert [e.item_id for e in actions] == [runners, renewal]
    cited = actions[1].citations
    assert [c.message_id for c in cited] == ["m1", "m4", "m3"]
    assert [c.author for c in cited] == ["ann", "cid", "ann"]
    for citation in cited:
        text = texts[citation.message_id]
        assert citation.quote and citation.quote == text[citation.char_start : citation.char_end]
    # Each quote is the sentence of its own message that says the item.
    assert cited[0].quote.startswith("Pat, the staging certificate")
    assert "load balancer" in cited[1].quote
    assert "DNS token" in cited[2].quote
    assert [c.message_id for c in actions[0].citations] == ["m5"]
