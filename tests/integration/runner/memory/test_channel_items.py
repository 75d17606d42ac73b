"""Channel items: items with an identity across digests and a cited lifecycle, stored and read
through the API (the pure rules, on hand-made windows, are tested in tests/unit/runner/memory/).

The map step given the channel's tracked items; then a channel digested in two successive
windows with the offline extractor (a question of day 1 answered on day 2 with the answer's
pointer, a task done by a "merged" PR link, a decision replaced), and the API's lists: open
questions, action items by status and owner, decisions by status, everything still open in one
field, and knowledge items filtered on whether they are current."""

from __future__ import annotations

from datetime import datetime, timedelta

import asyncpg

from db import channel_items as item_queries
from runner.core.chunks import Chunk
from runner.core.contract import ChunkSummary
from runner.core.vocabulary import KnownItem
from runner.core.window import Window, WindowMessage
from runner.digests.pipeline import PipelineHooks, run_pipeline
from runner.extract.offline import OfflineExtractor
from runner.memory.items import item_key
from schema import build_schema
from schema.context import ApiConfig, Context, Role
from schema.types.ids import CHANNEL, DIGEST, global_id
from tests.support.database import Msg, add_channel, row_id
from tests.support.digests import digest_once
from tests.support.items import DAY1, DAY1_ROWS, DAY2, DAY2_ROWS
from tests.support.schema import gql


def _day(rows: list[tuple[str, str, str, str | None]], start: datetime) -> list[Msg]:
    """(id, author, text, reply_to) rows as messages one minute apart from `start`."""
    return [
        Msg(mid, author, start + timedelta(minutes=i), text, reply)
        for i, (mid, author, text, reply) in enumerate(rows)
    ]


STILL_OPEN = """
query ($channel: ID!) {
  trackedItems(filter: {channelId: $channel, open: true}) { nodes { kind status text } }
  current: trackedItems(filter: {channelId: $channel, current: true}) { nodes { kind status } }
}
"""
LISTS = """
query ($channel: ID!) {
  done: actionItems(filter: {channelId: $channel, status: DONE, owner: "CID"}) {
    nodes { id text history { toStatus pointer { resolvedText } } }
  }
  inForce: decisions(filter: {channelId: $channel, status: IN_FORCE}) { nodes { id text } }
  superseded: decisions(filter: {channelId: $channel, status: SUPERSEDED}) {
    nodes { text history { toStatus relatedItemId evidenceMessageIds } }
  }
  all: knowledgeItems(filter: {channelId: $channel}) { nodes { id } }
  current: knowledgeItems(filter: {channelId: $channel, current: true}) { nodes { id } }
}
"""

ITEMS = """
query ($channel: ID!) {
  openQuestions(filter: {channelId: $channel}) { nodes { id text status } }
  answered: trackedItems(filter: {channelId: $channel, kind: QUESTION}) {
    nodes {
      text status owner firstSaidAt
      history { fromStatus toStatus at reason evidenceMessageIds
                pointer { messageId resolvedText } }
      mentions { position digest { id } }
    }
  }
}
"""


async def test_a_question_of_day_one_is_answered_on_day_two(
    db: asyncpg.Pool, database_url: str
) -> None:
    channel = await add_channel(db, "ops", _day(DAY1_ROWS, DAY1))
    first = await digest_once(db, database_url, channel)
    channel_id = global_id(CHANNEL, channel)
    opened = (await gql(db, ITEMS, channel=channel_id))["openQuestions"]["nodes"]
    assert [(n["text"], n["status"]) for n in opened] == [(DAY1_ROWS[0][2], "OPEN")]

    await add_channel(db, "ops", _day(DAY2_ROWS, DAY2))
    second = await digest_once(db, database_url, channel)
    assert first.digest_id != second.digest_id
    data = await gql(db, ITEMS, channel=channel_id)
    assert data["openQuestions"]["nodes"] == []
    (item,) = data["answered"]["nodes"]
    assert item["status"] == "ANSWERED" and item["owner"] == "ann"
    opened_event, answered = item["history"]
    assert (opened_event["fromStatus"], opened_event["toStatus"]) == (None, "OPEN")
    assert opened_event["evidenceMessageIds"] == ["q1"]
    assert (answered["fromStatus"], answered["toStatus"]) == ("OPEN", "ANSWERED")
    assert answered["evidenceMessageIds"] == ["a1"]
    assert answered["at"].startswith("2024-05-02")
    assert answered["pointer"]["messageId"] == "a1"
    assert "--exclude=cache" in answered["pointer"]["resolvedText"]
    assert len(item["mentions"]) == 1  # day 2 did not repeat it as a new question
    assert item["mentions"][0]["digest"]["id"] == global_id(DIGEST, first.digest_id or 0)

    lists = await gql(db, LISTS, channel=channel_id)
    (done,) = lists["done"]["nodes"]
    assert done["text"].startswith("Update the deploy docs")
    assert "merged" in done["history"][-1]["pointer"]["resolvedText"]
    (borg,) = lists["inForce"]["nodes"]
    assert "borg" in borg["text"]
    (restic,) = lists["superseded"]["nodes"]
    assert "restic" in restic["text"]
    assert restic["history"][-1]["relatedItemId"] == borg["id"]
    assert restic["history"][-1]["evidenceMessageIds"] == ["d3"]
    assert lists["current"]["nodes"] == lists["all"]["nodes"]  # nothing superseded them
    node = await gql(
        db, "query ($id: ID!) { node(id: $id) { ... on TrackedItem { kind } } }", id=borg["id"]
    )
    assert node["node"] == {"kind": "DECISION"}


async def test_what_is_still_open_in_a_channel_is_one_query(
    db: asyncpg.Pool, database_url: str
) -> None:
    channel = await add_channel(db, "ops", _day(DAY1_ROWS, DAY1))
    await digest_once(db, database_url, channel)
    data = await gql(db, STILL_OPEN, channel=global_id(CHANNEL, channel))
    assert sorted((n["kind"], n["status"]) for n in data["trackedItems"]["nodes"]) == [
        ("ACTION_ITEM", "OPEN"),
        ("QUESTION", "OPEN"),
    ]
    # The decision is settled, not open: it is listed as in force.
    assert sorted((n["kind"], n["status"]) for n in data["current"]["nodes"]) == [
        ("ACTION_ITEM", "OPEN"),
        ("DECISION", "IN_FORCE"),
        ("QUESTION", "OPEN"),
    ]


async def test_a_status_a_kind_cannot_have_is_a_client_error(db: asyncpg.Pool) -> None:
    result = await build_schema().execute(
        "{ decisions(filter: {status: DONE}) { nodes { id } } }",
        context_value=Context(pool=db, role=Role.READER, config=ApiConfig()),
    )
    assert result.errors and "a decision is one of" in result.errors[0].message


class _RecordingOffline(OfflineExtractor):
    """The offline extractor taking known items, recording what each chunk was given."""

    uses_known_items = True

    def __init__(self) -> None:
        super().__init__()
        self.given: list[list[str]] = []
        self.keys: list[str] = []

    async def extract_chunk(self, chunk: Chunk, known_items: list[KnownItem]) -> ChunkSummary:
        self.given.append([item.key for item in known_items])
        return await super().extract_chunk(chunk, known_items)


async def test_the_map_step_is_given_the_channels_tracked_items_and_keys_its_cache_by_them() -> (
    None
):
    window = Window(
        "ops",
        tuple(
            WindowMessage(f"w{i}", "ann", DAY2 + timedelta(minutes=i), f"note {i} about the backup")
            for i in range(3)
        ),
    )
    tracked = [KnownItem(item_key(5), "question", "How do I skip the cache directory?")]
    keys: dict[str, list[str]] = {}

    async def run(items: list[KnownItem]) -> _RecordingOffline:
        extractor = _RecordingOffline()
        seen: list[str] = []

        async def load(key: str) -> ChunkSummary | None:
            seen.append(key)
            return None

        await run_pipeline(
            window,
            extractor,
            chunk_tokens=2000,
            tracked_items=items,
            hooks=PipelineHooks(load_chunk=load),
        )
        keys[str(len(items))] = seen
        return extractor

    assert (await run(tracked)).given == [[item_key(5)]]
    assert (await run([])).given == [[]]
    assert keys["1"] != keys["0"]  # a chunk's cached result is only reused for the same items


PORTS_ROWS: list[tuple[str, str, str, str | None]] = [
    ("p1", "ann", "How do I list the open ports on the server?", None),
    (
        "p2",
        "bob",
        "ann: run `sudo ss -tlnp` to list the listening ports with their processes",
        None,
    ),
    ("p3", "ann", "thanks, that worked", None),
]
KNOWLEDGE = """
query ($channel: ID!, $current: Boolean) {
  knowledgeItems(filter: {channelId: $channel, current: $current}) { nodes { title } }
  trackedItems(filter: {channelId: $channel, kind: KNOWLEDGE}) { nodes { id text status } }
}
"""


async def test_knowledge_items_filter_on_whether_their_tracked_item_is_current(
    db: asyncpg.Pool, database_url: str
) -> None:
    channel = await add_channel(db, "ops", _day(PORTS_ROWS, DAY1))
    await digest_once(db, database_url, channel)
    channel_id = global_id(CHANNEL, channel)
    data = await gql(db, KNOWLEDGE, channel=channel_id, current=True)
    titles = sorted(n["title"] for n in data["knowledgeItems"]["nodes"])
    assert "sudo ss -tlnp" in titles and len(titles) == 2
    assert {n["status"] for n in data["trackedItems"]["nodes"]} == {"CURRENT"}
    command = next(n for n in data["trackedItems"]["nodes"] if n["text"] == "sudo ss -tlnp")
    async with db.acquire() as connection:  # as a later digest superseding it would
        assert await item_queries.change_channel_item_status(
            connection, row_id(command["id"]), "current", "superseded"
        )
    current = await gql(db, KNOWLEDGE, channel=channel_id, current=True)
    assert [n["title"] for n in current["knowledgeItems"]["nodes"]] == [
        t for t in titles if t != "sudo ss -tlnp"
    ]
    stale = await gql(db, KNOWLEDGE, channel=channel_id, current=False)
    assert [n["title"] for n in stale["knowledgeItems"]["nodes"]] == ["sudo ss -tlnp"]
