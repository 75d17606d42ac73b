"""Edited messages never break a pointer, the GraphQL view of coverage, and the migration of a
database the old code populated (its marks become coverage)."""

from __future__ import annotations

from datetime import timedelta

import asyncpg

from db.engine import create_pool
from db.migrate import available_migrations, migrate
from tests.support.database import BASE_TIME, Msg, add_channel, messages, migrate_before
from tests.support.digests import digest_once, read_ids, uncovered
from tests.support.schema import gql, with_database
from tests.support.worker import sample_messages

DIGEST = """
query($id: ID!) {
  digest(id: $id) {
    messageCount
    messageCoverage { messageCount firstMessageAt lastMessageAt catchUp since until
      leftOut { firstMessageId lastMessageId firstAt lastAt messageCount reason } }
    channel { uncoveredMessageCount messageCount }
    knowledgeItems { key text flags { code message }
      pointer { messageId charStart charEnd revision revisionText resolvedText } }
    artifacts { flags { code } pointer { messageId revision resolvedText } }
    decisions { messageIds flags { code } }
  }
}
"""

# The fields the API had before revisions: what an existing client reads.
OLD_VIEW = """
query($id: ID!) { digest(id: $id) { knowledgeItems { key text flags { code message }
  pointer { messageId charStart charEnd resolvedText } } } }
"""


async def test_edited_message_keeps_its_pointer_is_flagged_and_digested_again(
    db: asyncpg.Pool, database_url: str
) -> None:
    sample = sample_messages()
    channel_id = await add_channel(db, "team-platform", sample)
    first = await digest_once(db, database_url, channel_id, chunk_tokens=1500)
    assert first.status == "succeeded"
    digest = (await gql(db, OLD_VIEW, id=str(first.digest_id)))["digest"]
    pointed = [k for k in digest["knowledgeItems"] if k["pointer"]]
    assert pointed, "the sample yields verbatim knowledge items"
    item = pointed[0]
    pointer = item["pointer"]
    before = {m.external_id: m for m in sample}[pointer["messageId"]]

    # The message is re-imported with a new text: every old offset now points elsewhere.
    edited = Msg(before.external_id, before.author, before.ts, "[edited] " + before.text[::-1])
    await add_channel(db, "team-platform", [edited])
    # What a client of the old API saw: the pointer sliced the new text (garbage or "").
    seen = (await gql(db, OLD_VIEW, id=str(first.digest_id)))["digest"]["knowledgeItems"]
    assert next(k for k in seen if k["key"] == item["key"])["pointer"] == pointer

    after = (await gql(db, DIGEST, id=str(first.digest_id)))["digest"]
    same = next(k for k in after["knowledgeItems"] if k["key"] == item["key"])
    assert same["pointer"]["revision"] == 1
    assert same["pointer"]["resolvedText"] == pointer["resolvedText"] == same["text"]
    assert (
        same["pointer"]["revisionText"][pointer["charStart"] : pointer["charEnd"]]
        == pointer["resolvedText"]
    )
    assert "source_edited" in [flag["code"] for flag in same["flags"]]
    assert "source_edited" not in [flag["code"] for flag in item["flags"]]
    untouched = [
        k
        for k in after["knowledgeItems"]
        if before.external_id not in ([k["pointer"]["messageId"]] if k["pointer"] else [])
    ]
    assert any("source_edited" not in [f["code"] for f in k["flags"]] for k in untouched)

    message = await gql(
        db,
        "query($c: ID!) { messages(filter: {channelId: $c}, first: 100) { nodes { messageId revision normalizedText } } }",
        c=str(channel_id),
    )
    current = next(n for n in message["messages"]["nodes"] if n["messageId"] == before.external_id)
    assert current["revision"] == 2 and current["normalizedText"].startswith("[edited]")
    async with db.acquire() as connection:
        archived = await connection.fetchrow(
            "SELECT r.raw_text FROM message_revisions r JOIN messages m ON m.id = r.message_id "
            "WHERE m.external_id = $1 AND r.revision = 1",
            before.external_id,
        )
    assert archived["raw_text"] == before.text

    # The edited message, and only it, is digested again.
    assert await uncovered(db, channel_id) == [before.external_id]
    assert after["channel"]["uncoveredMessageCount"] == 1
    second = await digest_once(db, database_url, channel_id, chunk_tokens=1500)
    assert await read_ids(db, second.digest_id) == [before.external_id]
    assert await uncovered(db, channel_id) == []


async def test_message_coverage_over_graphql(db: asyncpg.Pool, database_url: str) -> None:
    from tests.support.digests import TEXTS, FailingChunks

    channel_id = await add_channel(db, "ops", messages(TEXTS))
    partial = await digest_once(db, database_url, channel_id, extractor=FailingChunks({"m20"}))
    data = (await gql(db, DIGEST, id=str(partial.digest_id)))["digest"]
    coverage = data["messageCoverage"]
    assert coverage["messageCount"] == data["messageCount"] == len(TEXTS)
    assert coverage["firstMessageAt"] == BASE_TIME.isoformat()
    assert coverage["lastMessageAt"] == (BASE_TIME + timedelta(minutes=len(TEXTS) - 1)).isoformat()
    assert coverage["catchUp"] is False and coverage["since"] is None
    # The failed chunk's messages (whole conversations: not always one stretch of time).
    ranges = coverage["leftOut"]
    assert ranges and all(r["reason"] == "chunk_failed" and r["messageCount"] >= 1 for r in ranges)
    assert data["channel"]["uncoveredMessageCount"] == sum(r["messageCount"] for r in ranges)

    trigger = """mutation($c: ID!, $o: DigestOptions) { triggerDigest(channelId: $c, options: $o) {
      ... on DigestJob { id options } ... on InvalidInputError { message code reason } } }"""
    bad = await gql(
        db,
        trigger,
        c=str(channel_id),
        o={"since": "2024-05-02T00:00:00Z", "until": "2024-05-01T00:00:00Z"},
    )
    assert (
        bad["triggerDigest"]["code"] == "BAD_USER_INPUT"
        and bad["triggerDigest"]["reason"] == "invalid_window"
    )
    far = await gql(db, trigger, c=str(channel_id), o={"since": "9999-12-31T00:00:00-14:00"})
    assert "between 1970 and 2200" in far["triggerDigest"]["message"]
    job = await gql(db, trigger, c=str(channel_id), o={"since": "2024-05-01T11:10:00+02:00"})
    assert job["triggerDigest"]["options"] == {"since": "2024-05-01T09:10:00+00:00"}


OLD_MARK = 6


async def test_migration_turns_the_old_mark_into_coverage(
    old_database: tuple[str, asyncpg.Connection], database_url: str
) -> None:
    name, connection = old_database
    await migrate_before(connection, 3)
    # The old code's rows: ten messages, a digest of the first six, the mark on the sixth.
    channel = await connection.fetchval("INSERT INTO channels (name) VALUES ('ops') RETURNING id")
    ids = {}
    for i in range(1, 11):
        ids[i] = await connection.fetchval(
            "INSERT INTO messages (channel_id, external_id, author, ts, raw_text, normalized_text) "
            "VALUES ($1, $2, 'a', $3, $4, $4) RETURNING id",
            channel,
            f"m{i}",
            BASE_TIME + timedelta(minutes=i),
            f"text number {i} of the channel",
        )
    digest = await connection.fetchval(
        "INSERT INTO digests (channel_id, title, overview, signal_quality, first_message_id, "
        "last_message_id, message_count, extractor) VALUES ($1, 't', 'o', 'high', $2, $3, 6, "
        "'offline') RETURNING id",
        channel,
        ids[1],
        ids[OLD_MARK],
    )
    await connection.execute(
        "INSERT INTO knowledge_items (digest_id, channel_id, position, item_key, kind, title, "
        "message_id, char_start, char_end, match_kind, quote) "
        "VALUES ($1, $2, 0, 'k1', 'fact', 'x', $3, 0, 4, 'exact', 'text')",
        digest,
        channel,
        ids[2],
    )
    await connection.execute(
        "UPDATE channels SET last_digested_message_id = $2 WHERE id = $1", channel, ids[OLD_MARK]
    )
    # A backfill imported after that digest, older than the mark: the old window never read it.
    await connection.execute(
        "INSERT INTO messages (channel_id, external_id, author, ts, raw_text, normalized_text, "
        "created_at) VALUES ($1, 'late', 'a', $2, 'late text', 'late text', now() + interval '1 s')",
        channel,
        BASE_TIME,
    )

    assert await migrate(connection) == [m.name for m in available_migrations() if m.version > 2]
    rows = await connection.fetch(
        "SELECT external_id, revision, covered_revision, covered_by_digest_id FROM messages "
        "WHERE channel_id = $1 ORDER BY ts, id",
        channel,
    )
    covered = {r["external_id"] for r in rows if r["covered_revision"] == r["revision"]}
    assert covered == {f"m{i}" for i in range(1, OLD_MARK + 1)}
    assert all(r["covered_by_digest_id"] == digest for r in rows if r["external_id"] in covered)
    assert all(r["revision"] == 1 for r in rows)
    assert await connection.fetchval("SELECT message_revision FROM knowledge_items") == 1
    assert (
        await connection.fetchval(
            "SELECT count(*) FROM digest_messages WHERE digest_id = $1", digest
        )
        == OLD_MARK
    )

    # The next digest reads exactly what the old mark had not covered, backfill included.
    pool = await create_pool(with_database(database_url, name))
    try:
        job = await digest_once(pool, database_url, channel)
        assert job.status == "succeeded", job.error
        assert await read_ids(pool, job.digest_id) == ["late"] + [
            f"m{i}" for i in range(OLD_MARK + 1, 11)
        ]
    finally:
        await pool.close()
