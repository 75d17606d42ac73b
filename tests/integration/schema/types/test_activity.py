"""Channel.activity on the real PostgreSQL: a channel written on three days of a week (one of
them at 23:30 UTC, so the day is the UTC one), digested once, then written again and digested a
second time: every day of the range is listed with its messages, its conversations and the
digests that read them, quiet days as zeros; a channel with no messages has no days; and a
range outside 1..366 is the client's mistake."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg

from schema import build_schema
from schema.context import ApiConfig, Context, Role
from schema.types.ids import CHANNEL, global_id
from tests.support.database import Msg, add_channel
from tests.support.digests import digest_once
from tests.support.schema import gql

ACTIVITY = """query($id: ID!, $days: Int!) { channel(id: $id) {
  activity(days: $days) { day messageCount conversationCount digestCount } } }"""
MONDAY = datetime(2024, 4, 29, 9, 0, tzinfo=UTC)


def _day(day: datetime, count: int, prefix: str, at_hour: int = 9) -> list[Msg]:
    start = day.replace(hour=at_hour, minute=0)
    authors = ["ann", "bob"]
    return [
        Msg(
            f"{prefix}{i}",
            authors[i % 2],
            start + timedelta(minutes=i),
            f"Message {i} about the nginx reload and the deploy of {prefix}.",
        )
        for i in range(count)
    ]


async def test_activity_lists_every_day_with_its_messages_conversations_and_digests(
    db: asyncpg.Pool, database_url: str
) -> None:
    tuesday = MONDAY + timedelta(days=1)
    thursday = MONDAY + timedelta(days=3)
    first = _day(MONDAY, 4, "a") + _day(tuesday, 2, "b", at_hour=23)
    channel = await add_channel(db, "activity", first)
    assert (await digest_once(db, database_url, channel)).status == "succeeded"
    await add_channel(db, "activity", _day(thursday, 3, "c"))
    assert (await digest_once(db, database_url, channel)).status == "succeeded"

    data = await gql(db, ACTIVITY, id=global_id(CHANNEL, channel), days=5)
    days = data["channel"]["activity"]
    assert [d["day"] for d in days] == [
        "2024-04-28",
        "2024-04-29",
        "2024-04-30",
        "2024-05-01",
        "2024-05-02",
    ]
    assert [d["messageCount"] for d in days] == [0, 4, 2, 0, 3]
    # The first digest read Monday and Tuesday, the second Thursday.
    assert [d["digestCount"] for d in days] == [0, 1, 1, 0, 1]
    async with db.acquire() as connection:
        conversations = await connection.fetch(
            "SELECT (m.ts AT TIME ZONE 'UTC')::date AS day,"
            " count(DISTINCT m.conversation_id) AS n FROM messages m"
            " WHERE m.channel_id = $1 GROUP BY 1 ORDER BY 1",
            channel,
        )
    per_day = {row["day"].isoformat(): row["n"] for row in conversations}
    assert all(per_day.values()), per_day  # each day's messages were threaded
    assert [d["conversationCount"] for d in days] == [per_day.get(d["day"], 0) for d in days]

    # One day: the newest message's.
    one = await gql(db, ACTIVITY, id=global_id(CHANNEL, channel), days=1)
    assert [d["day"] for d in one["channel"]["activity"]] == ["2024-05-02"]


async def test_a_channel_without_messages_has_no_days_and_a_bad_range_is_refused(
    db: asyncpg.Pool,
) -> None:
    channel = await add_channel(db, "quiet", [])
    data = await gql(db, ACTIVITY, id=global_id(CHANNEL, channel), days=30)
    assert data["channel"]["activity"] == []
    context = Context(pool=db, role=Role.READER, config=ApiConfig())
    for days in (0, 367):
        result = await build_schema().execute(
            ACTIVITY,
            variable_values={"id": global_id(CHANNEL, channel), "days": days},
            context_value=context,
        )
        assert result.errors, days
        assert result.errors[0].extensions == {"code": "BAD_USER_INPUT", "argument": "days"}
        assert "between 1 and 366" in result.errors[0].message


async def test_the_default_range_is_thirty_days(db: asyncpg.Pool) -> None:
    channel = await add_channel(db, "default-range", _day(MONDAY, 1, "d"))
    query = "query($id: ID!) { channel(id: $id) { activity { day messageCount } } }"
    data = await gql(db, query, id=global_id(CHANNEL, channel))
    assert len(data["channel"]["activity"]) == 30
    assert data["channel"]["activity"][-1] == {"day": "2024-04-29", "messageCount": 1}
