"""State changes as people write them, through a real digest: a channel digested on two days
with the offline extractor, where day two closes day one's action item with "staging certs
are updated, done" and supersedes its decision with "after the benchmark we're switching to
Postgres 17 instead of 16", read back through the API with the evidence of each change."""

from __future__ import annotations

from datetime import datetime, timedelta

import asyncpg

from schema.types.ids import CHANNEL, global_id
from tests.support.database import Msg, add_channel
from tests.support.digests import digest_once
from tests.support.items import DAY1, DAY2, Row
from tests.support.schema import gql

FIRST_DAY: list[Row] = [
    ("c1", "bob", "I'll renew the staging certs this afternoon.", None),
    ("p1", "dee", "Let's use Postgres 16 for the new cluster.", None),
    ("p2", "ann", "agreed, Postgres 16 it is", None),
]
SECOND_DAY: list[Row] = [
    ("c2", "bob", "staging certs are updated, done", None),
    ("p3", "dee", "after the benchmark we're switching to Postgres 17 instead of 16", None),
]
ITEMS = """
query ($channel: ID!) {
  trackedItems(filter: {channelId: $channel}) {
    nodes {
      kind status text owner
      history { fromStatus toStatus evidenceMessageIds pointer { resolvedText } }
    }
  }
}
"""


def _day(rows: list[Row], start: datetime) -> list[Msg]:
    return [
        Msg(mid, author, start + timedelta(minutes=i), text, reply)
        for i, (mid, author, text, reply) in enumerate(rows)
    ]


async def test_done_at_the_end_of_a_statement_and_a_switch_instead_of_change_state(
    db: asyncpg.Pool, database_url: str
) -> None:
    channel = await add_channel(db, "infra", _day(FIRST_DAY, DAY1))
    await digest_once(db, database_url, channel)
    channel_id = global_id(CHANNEL, channel)
    first = (await gql(db, ITEMS, channel=channel_id))["trackedItems"]["nodes"]
    assert sorted((n["kind"], n["status"]) for n in first) == [
        ("ACTION_ITEM", "OPEN"),
        ("DECISION", "IN_FORCE"),
    ]

    await add_channel(db, "infra", _day(SECOND_DAY, DAY2))
    await digest_once(db, database_url, channel)
    nodes = (await gql(db, ITEMS, channel=channel_id))["trackedItems"]["nodes"]
    (certs,) = [n for n in nodes if n["kind"] == "ACTION_ITEM" and n["owner"] == "bob"]
    assert "staging certs" in certs["text"]
    assert certs["status"] == "DONE"
    done = certs["history"][-1]
    assert (done["fromStatus"], done["toStatus"]) == ("OPEN", "DONE")
    assert done["evidenceMessageIds"] == ["c2"]
    assert "done" in done["pointer"]["resolvedText"]

    (postgres16,) = [
        n for n in nodes if n["kind"] == "DECISION" and "16" in n["text"] and "17" not in n["text"]
    ]
    assert postgres16["status"] == "SUPERSEDED"
    ended = postgres16["history"][-1]
    assert (ended["fromStatus"], ended["toStatus"]) == ("IN_FORCE", "SUPERSEDED")
    assert ended["evidenceMessageIds"] == ["p3"]
