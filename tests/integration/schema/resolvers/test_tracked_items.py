"""What is still open in a real channel, through the API: the Gitter docker room of
../shared/data imported and digested offline, then `trackedItems(filter: {channelId, open:
true})` read as a user would. Open is unanswered questions and unfinished action items, every
one the digest reported; decisions in force are listed as such; knowledge items are never open;
the first page of a channel's items is the latest said, not one kind."""

from __future__ import annotations

import asyncpg

from runner.importers.ingest import import_path
from schema.types.ids import CHANNEL, global_id
from tests.support.digests import digest_once
from tests.support.paths import shared_data
from tests.support.schema import gql

CHANNEL_ITEMS = """
query ($c: ID!, $digest: ID!) {
  digest(id: $digest) { openQuestions { text } actionItems { text } decisions { text }
                        knowledgeItems { title } }
  open: trackedItems(filter: {channelId: $c, open: true}, first: 50) {
    totalCount nodes { kind status text }
  }
  questions: openQuestions(filter: {channelId: $c}) { totalCount }
  actions: actionItems(filter: {channelId: $c, status: OPEN}) { totalCount }
  inForce: decisions(filter: {channelId: $c, status: IN_FORCE}) { totalCount nodes { status } }
  current: trackedItems(filter: {channelId: $c, current: true}) { totalCount }
  knowledge: trackedItems(filter: {channelId: $c, kind: KNOWLEDGE}) { totalCount }
  openKnowledge: trackedItems(filter: {channelId: $c, kind: KNOWLEDGE, open: true}) {
    totalCount
  }
  settled: trackedItems(filter: {channelId: $c, open: false}) { totalCount }
  all: trackedItems(filter: {channelId: $c}, first: 50) { totalCount nodes { kind firstSaidAt } }
}
"""


async def test_open_on_a_real_channel_is_its_unanswered_questions_and_open_actions(
    db: asyncpg.Pool, database_url: str
) -> None:
    report = await import_path(db, shared_data("chat/gitter/manual_docker.txt"), channel="docker")
    channel = next(iter(report.channels.values()))
    done = await digest_once(db, database_url, channel, chunk_tokens=1500)
    assert done.status in {"succeeded", "partial"} and done.digest_id is not None
    data = await gql(
        db, CHANNEL_ITEMS, c=global_id(CHANNEL, channel), digest=global_id("Digest", done.digest_id)
    )
    digest = data["digest"]
    assert digest["openQuestions"] and digest["knowledgeItems"]

    open_items = data["open"]
    kinds = {(n["kind"], n["status"]) for n in open_items["nodes"]}
    assert kinds <= {("QUESTION", "OPEN"), ("ACTION_ITEM", "OPEN")}
    assert ("QUESTION", "OPEN") in kinds
    # Every question and action item the digest reported reaches the channel's open items
    # (one digest: nothing later answered them), and the count is exact.
    open_texts = {n["text"] for n in open_items["nodes"]}
    reported = [q["text"] for q in digest["openQuestions"]] + [
        a["text"] for a in digest["actionItems"]
    ]
    assert len(reported) <= 50 and set(reported) == open_texts
    assert open_items["totalCount"] == len(open_items["nodes"]) == len(reported)
    assert (
        open_items["totalCount"]
        == data["questions"]["totalCount"] + (data["actions"]["totalCount"])
    )

    # Knowledge items are never open; decisions in force are listed as in force.
    assert data["knowledge"]["totalCount"] == len(digest["knowledgeItems"])
    assert data["openKnowledge"]["totalCount"] == 0
    assert data["inForce"]["totalCount"] == len(digest["decisions"])
    assert {n["status"] for n in data["inForce"]["nodes"]} <= {"IN_FORCE"}
    assert data["current"]["totalCount"] == data["all"]["totalCount"]  # nothing changed yet
    assert data["settled"]["totalCount"] == data["all"]["totalCount"] - len(reported)

    # Newest first is the latest said: the first page mixes the kinds a channel talks in,
    # rather than being filled by the last section a digest stored.
    said = [n["firstSaidAt"] for n in data["all"]["nodes"]]
    assert said == sorted(said, reverse=True)
    assert len({n["kind"] for n in data["all"]["nodes"]}) > 1
