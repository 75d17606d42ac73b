"""Channel items: items with an identity across digests and a cited lifecycle.

The pure rules (runner/memory/plan.py) on hand-made windows; the map step given the
channel's tracked items; then a channel digested in two successive windows with the offline
extractor (a question of day 1 answered on day 2 with the answer's pointer, a task done by a
"merged" PR link, a decision replaced), and the API's lists: open questions, action items by
status and owner, decisions by status, everything still open in one field, and knowledge items
filtered on whether they are current."""

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
from runner.memory.items import ItemKind, NewItem, TrackedItem, item_key
from runner.memory.plan import plan_items
from runner.memory.window import MemoryMessage
from schema import build_schema
from schema.context import ApiConfig, Context, Role
from schema.types.ids import CHANNEL, DIGEST, global_id
from tests.support.database import Msg, add_channel, row_id
from tests.support.digests import digest_once
from tests.support.items import DAY1, DAY1_ROWS, DAY2, DAY2_ROWS
from tests.support.schema import gql


def _message(
    mid: str,
    author: str,
    minutes: int,
    text: str,
    conversation: int | None = 7,
    start: datetime = DAY2,
) -> MemoryMessage:
    return MemoryMessage(mid, author, start + timedelta(minutes=minutes), text, conversation)


QUESTION = TrackedItem(
    1,
    ItemKind.QUESTION,
    "How do I make the backup script skip the cache directory?",
    "ann",
    7,
    ("q1",),
    DAY1,
)


def test_a_question_is_answered_across_digests_with_the_answers_pointer() -> None:
    answer = "ann: add --exclude=cache to the rsync line. That skips it."
    window = [
        _message("a0", "ann", 0, "still stuck on that one?"),  # the asker: no answer
        _message("a1", "dee", 1, "what do you mean?"),  # a question back: no answer
        _message("a2", "bob", 2, answer),
    ]
    plan = plan_items([QUESTION], [], window)
    (change,) = plan.changes
    assert (change.item, change.from_status, change.to_status) == (1, "open", "answered")
    assert change.evidence.message_ids == ("a2",) and change.evidence.at == window[2].ts
    assert change.evidence.pointer is not None
    message_id, start, end, quote = change.evidence.pointer
    assert message_id == "a2" and answer[start:end] == quote and "--exclude=cache" in quote


def test_an_answer_in_another_conversation_does_not_answer_it() -> None:
    window = [_message("a2", "bob", 2, "add --exclude=cache to the rsync line", conversation=8)]
    assert plan_items([QUESTION], [], window).changes == []


def test_thanks_a_word_to_someone_else_or_a_speakers_continuation_is_no_answer() -> None:
    window = [
        _message("a1", "bob", 1, "ann, thanks for all your help with the backup cache"),
        _message("a2", "dee", 2, "eve: the backup cache is fine on my side"),  # to someone else
        _message("a3", "eve", 3, "dee: good, then the cache stays"),
        _message("a4", "bob", 4, "ann: and try the backup script with the cache flag too"),
    ]
    assert plan_items([QUESTION], [], window).changes == []


def test_a_question_put_to_someone_is_answered_by_them_only() -> None:
    put = TrackedItem(
        9,
        ItemKind.QUESTION,
        "Do you see the new drive in fdisk?",
        "zen",
        7,
        ("q5",),
        DAY1,
        "vee: ok so do you see the new drive in fdisk?",
    )
    other = [_message("a1", "stevie", 1, "zen, well the drive shows up in fdisk for me")]
    assert plan_items([put], [], other).changes == []
    asked = [_message("a2", "vee", 2, "zen: yes, the drive is listed as /dev/sdb in fdisk")]
    (change,) = plan_items([put], [], asked).changes
    assert change.evidence.message_ids == ("a2",)


def test_the_asker_withdrawing_drops_the_question() -> None:
    window = [_message("a1", "ann", 3, "never mind, figured it out")]
    (change,) = plan_items([QUESTION], [], window).changes
    assert change.to_status == "dropped" and change.evidence.pointer is not None


def test_an_action_item_is_done_when_its_owner_says_merged_in_its_conversation() -> None:
    task = TrackedItem(
        2,
        ItemKind.ACTION_ITEM,
        "update the deploy docs for the backup flow",
        "cid",
        7,
        ("t1",),
        DAY1,
    )
    window = [
        _message("b1", "cid", 1, "the docs are not merged yet"),  # negated
        _message("b2", "cid", 2, "is it merged?"),  # a question
        _message("b3", "cid", 3, "ok, merged: https://github.com/acme/ops/pull/12"),
    ]
    (change,) = plan_items([task], [], window).changes
    assert change.to_status == "done" and change.evidence.message_ids == ("b3",)
    # A "fixed" inside a name is no "fixed".
    named = [_message("b4", "cid", 4, "the error: storage.mount-fixed auth_admin_keep_always")]
    assert plan_items([task], [], named).changes == []
    elsewhere = [_message("c1", "eve", 1, "fixed my bike today", conversation=9)]
    assert plan_items([task], [], elsewhere).changes == []


def test_a_done_word_deep_in_the_owners_message_is_no_completion_report() -> None:
    task = TrackedItem(
        4,
        ItemKind.ACTION_ITEM,
        "paste the default.pa file for the headphones",
        "gus",
        7,
        ("t2",),
        DAY1,
    )
    # Said by the owner, in the task's conversation, but about something else.
    aside = [
        _message(
            "e1",
            "gus",
            1,
            "ray: correct, you can set that somewhere, done this over a year ago, give us a minute",
        )
    ]
    assert plan_items([task], [], aside).changes == []
    watched = [
        _message("e2", "gus", 2, "ray: all software is installed, I just finished watching the dvd")
    ]
    assert plan_items([task], [], watched).changes == []
    pasted = [_message("e4", "gus", 2, "Reading package lists... Done")]
    assert plan_items([task], [], pasted).changes == []
    report = [_message("e3", "gus", 3, "ray: ok done, it is on the pastebin")]
    (change,) = plan_items([task], [], report).changes
    assert change.to_status == "done" and change.evidence.message_ids == ("e3",)


def test_a_reply_that_is_only_an_addressee_and_a_shrug_answers_nothing() -> None:
    window = [_message("a1", "bob", 1, "ann: nvm :)")]
    assert plan_items([QUESTION], [], window).changes == []


def test_a_question_back_without_a_question_mark_is_no_answer() -> None:
    window = [
        _message("a1", "bob", 1, "ann: are u running the backup script from cron"),
        _message("a2", "dee", 2, "ann, what version of rsync does the backup script use"),
    ]
    assert plan_items([QUESTION], [], window).changes == []


def test_a_later_decision_replacing_one_in_force_supersedes_it() -> None:
    old = TrackedItem(
        3, ItemKind.DECISION, "We will host the wiki on the old VPS", None, 7, ("d1",), DAY1
    )
    window = [_message("d2", "bob", 5, "we will host the wiki on github pages instead of the VPS")]
    new = NewItem(
        ItemKind.DECISION,
        0,
        "We will host the wiki on GitHub pages instead of the VPS",
        None,
        ("d2",),
    )
    plan = plan_items([old], [new], window)
    assert [c.new for c in plan.created] == [new] and plan.links == []
    (change,) = plan.changes
    assert (change.item, change.to_status, change.related) == (3, "superseded", new)
    assert change.evidence.message_ids == ("d2",) and change.evidence.pointer is not None


def test_the_same_item_said_again_is_linked_not_duplicated() -> None:
    window = [_message("q9", "ann", 5, "how do I make the backup script skip the cache dir?")]
    again = NewItem(
        ItemKind.QUESTION, 0, "How do I make the backup script skip the cache dir?", "ann", ("q9",)
    )
    plan = plan_items([QUESTION], [again], window)
    assert plan.created == [] and [(link.new, link.tracked) for link in plan.links] == [(again, 1)]
    other_owner = NewItem(ItemKind.QUESTION, 0, again.text, "zed", ("q9",))
    assert plan_items([QUESTION], [other_owner], window).links == []


def test_a_change_without_evidence_that_validates_is_not_applied() -> None:
    # The answer came before the question was asked (a backfill): no evidence of an answer.
    early = [_message("a2", "bob", -60 * 24, "add --exclude=cache to the rsync line")]
    plan = plan_items([QUESTION], [], early)
    assert plan.changes == []
    # A knowledge item naming a tracked item it supersedes, citing nothing of the window.
    tip = TrackedItem(4, ItemKind.KNOWLEDGE, "rsync excludes", None, 7, ("k1",), DAY1)
    later = NewItem(
        ItemKind.KNOWLEDGE,
        0,
        "rsync exclude patterns",
        None,
        ("gone",),
        "K1",
        supersedes=item_key(4),
    )
    assert plan_items([tip], [later], [_message("k2", "bob", 1, "use --exclude")]).changes == []
    cited = NewItem(
        ItemKind.KNOWLEDGE, 0, "rsync exclude patterns", None, ("k2",), "K1", supersedes=item_key(4)
    )
    (change,) = plan_items([tip], [cited], [_message("k2", "bob", 1, "use --exclude")]).changes
    assert (change.item, change.to_status, change.related) == (4, "superseded", cited)


def _day(rows: list[tuple[str, str, str, str | None]], start: datetime) -> list[Msg]:
    """(id, author, text, reply_to) rows as messages one minute apart from `start`."""
    return [
        Msg(mid, author, start + timedelta(minutes=i), text, reply)
        for i, (mid, author, text, reply) in enumerate(rows)
    ]


STILL_OPEN = """
query ($channel: ID!) {
  trackedItems(filter: {channelId: $channel, open: true}) { nodes { kind status text } }
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
    nodes = (await gql(db, STILL_OPEN, channel=global_id(CHANNEL, channel)))["trackedItems"]
    assert sorted((n["kind"], n["status"]) for n in nodes["nodes"]) == [
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
