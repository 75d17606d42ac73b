"""deleteChannelData and deleteDigest through the real HTTP /graphql over PostgreSQL: a reader's
or a writer's token is refused, an admin's deletes; the rows are gone from every table, another
channel keeps all of its; a running job of the channel refuses the deletion; a deleted digest's
messages are digested again by the next digest."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest
from pydantic import SecretStr

from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.api import gql
from tests.support.console import run_queued_jobs, seed_channel, trigger_digest
from tests.support.database import row_id
from tests.support.manage import (
    ADMIN,
    DELETE_CHANNEL,
    DELETE_DIGEST,
    READER,
    ROLE_TOKENS,
    WRITER,
    channel_rows,
    post,
)
from tests.support.servers import running_server

INGEST = """mutation($c: ChannelInput!, $m: [MessageInput!]!) { ingestMessages(channel: $c, messages: $m) {
  ... on IngestResult { channel { id } } } }"""
CREATE_SCHEDULE = """mutation($c: ID!) { createSchedule(channelId: $c, cron: "0 9 * * *") {
  ... on Schedule { id } } }"""
DIGESTS = """query($c: ID!) { digests(filter: {channelId: $c}, first: 10) { nodes { id } }
  channel(id: $c) { messageCount uncoveredMessageCount } }"""
OTHER_MESSAGES = [
    {"id": f"o{n}", "author": "Lena", "ts": f"2025-03-11T10:0{n}:00Z", "text": text}
    for n, text in enumerate(
        [
            "We decided to move the backups to the new bucket on Friday.",
            "Run `restic snapshots --repo s3:backups` to check the last snapshot.",
            "Who owns the restore drill this quarter?",
        ]
    )
]


@pytest.fixture
async def http(db: asyncpg.Pool, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    secured = settings.model_copy(update={"digestd_api_tokens": SecretStr(ROLE_TOKENS)})
    app = create_app(secured, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as client,
    ):
        yield client


async def _two_digested_channels(http: httpx.AsyncClient, settings: Settings) -> tuple[str, str]:
    """The sample channel and another one, each digested by a real worker."""
    channel_id, _ = await seed_channel(http, WRITER)
    other = await gql(http, INGEST, {"c": {"name": "backups"}, "m": OTHER_MESSAGES}, WRITER)
    other_id = str(other["ingestMessages"]["channel"]["id"])
    await trigger_digest(http, channel_id, WRITER)
    await trigger_digest(http, other_id, WRITER)
    await run_queued_jobs(settings)
    await gql(http, CREATE_SCHEDULE, {"c": channel_id}, WRITER)
    await gql(http, CREATE_SCHEDULE, {"c": other_id}, WRITER)
    return channel_id, other_id


async def test_only_an_admin_deletes_a_channel_and_everything_it_held_goes(
    http: httpx.AsyncClient, db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id, other_id = await _two_digested_channels(http, settings)
    before = await channel_rows(db, row_id(channel_id))
    assert all(before[t] > 0 for t in ("messages", "digests", "knowledge_items", "schedules"))
    assert before["entities"] > 0 and before["digest_messages"] > 0, before
    other_before = await channel_rows(db, row_id(other_id))

    for token, needs in ((READER, "a writer token"), (WRITER, "an admin token")):
        refused = await post(http, DELETE_CHANNEL, {"id": channel_id}, token)
        assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN", refused
        assert refused["errors"][0]["message"].endswith(needs), refused
        assert await channel_rows(db, row_id(channel_id)) == before

    deleted = (await gql(http, DELETE_CHANNEL, {"id": channel_id}, ADMIN))["deleteChannelData"]
    assert deleted == {
        "__typename": "DeletedChannel",
        "deletedId": channel_id,
        "name": "team-platform",
        "messages": before["messages"],
        "digests": 1,
        "schedules": 1,
        "jobs": 1,
    }
    assert set((await channel_rows(db, row_id(channel_id))).values()) == {0}
    assert await channel_rows(db, row_id(other_id)) == other_before
    async with db.acquire() as connection:
        # The server "acme" held only this channel: it goes too.
        assert await connection.fetchval("SELECT count(*) FROM servers") == 0
        assert await connection.fetchval("SELECT count(*) FROM channels") == 1

    again = (await gql(http, DELETE_CHANNEL, {"id": channel_id}, ADMIN))["deleteChannelData"]
    assert again["__typename"] == "NotFoundError", again


async def test_a_running_job_refuses_the_deletion_and_a_queued_one_goes_with_the_channel(
    http: httpx.AsyncClient, db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id, _ = await seed_channel(http, WRITER)
    job_id = await trigger_digest(http, channel_id, WRITER)
    async with db.acquire() as connection:  # a worker has claimed it
        await connection.execute(
            "UPDATE digest_jobs SET status = 'running', worker_id = 'w1', "
            "lease_expires_at = now() + interval '1 minute' WHERE id = $1",
            row_id(job_id),
        )
    refused = (await gql(http, DELETE_CHANNEL, {"id": channel_id}, ADMIN))["deleteChannelData"]
    assert refused["__typename"] == "InvalidInputError" and refused["reason"] == "job_running"
    assert job_id in refused["message"] and "cancelJob" in refused["message"], refused
    assert (await channel_rows(db, row_id(channel_id)))["messages"] > 0

    async with db.acquire() as connection:  # back in the queue: no worker holds it
        await connection.execute(
            "UPDATE digest_jobs SET status = 'queued', worker_id = NULL WHERE id = $1",
            row_id(job_id),
        )
    deleted = (await gql(http, DELETE_CHANNEL, {"id": channel_id}, ADMIN))["deleteChannelData"]
    assert deleted["__typename"] == "DeletedChannel" and deleted["jobs"] == 1, deleted
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM digest_jobs") == 0


async def test_deleting_a_digest_uncovers_its_messages_and_leaves_other_channels_alone(
    http: httpx.AsyncClient, db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id, other_id = await _two_digested_channels(http, settings)
    digests = await gql(http, DIGESTS, {"c": channel_id}, READER)
    digest_id = digests["digests"]["nodes"][0]["id"]
    assert digests["channel"]["uncoveredMessageCount"] == 0
    other_before = await channel_rows(db, row_id(other_id))

    for token in (READER, WRITER):
        refused = await post(http, DELETE_DIGEST, {"id": digest_id}, token)
        assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN", refused
    deleted = (await gql(http, DELETE_DIGEST, {"id": digest_id}, ADMIN))["deleteDigest"]
    count = digests["channel"]["messageCount"]
    assert deleted == {
        "__typename": "DeletedDigest",
        "deletedId": digest_id,
        "channelId": channel_id,
        "uncoveredMessages": count,
    }
    after = await channel_rows(db, row_id(channel_id))
    assert after["digests"] == after["knowledge_items"] == after["digest_messages"] == 0, after
    # Entities and channel items only this digest spoke of went with it.
    assert after["entities"] == after["channel_items"] == after["topic_profiles"] == 0, after
    assert after["messages"] == count and after["schedules"] == 1
    assert await channel_rows(db, row_id(other_id)) == other_before
    state = await gql(http, DIGESTS, {"c": channel_id}, READER)
    assert state["digests"]["nodes"] == [] and state["channel"]["uncoveredMessageCount"] == count

    # The next digest reads those messages again.
    await trigger_digest(http, channel_id, WRITER)
    await run_queued_jobs(settings)
    again = await gql(http, DIGESTS, {"c": channel_id}, READER)
    assert len(again["digests"]["nodes"]) == 1 and again["channel"]["uncoveredMessageCount"] == 0
    assert (await channel_rows(db, row_id(channel_id)))["entities"] > 0

    gone = (await gql(http, DELETE_DIGEST, {"id": digest_id}, ADMIN))["deleteDigest"]
    assert gone["__typename"] == "NotFoundError", gone
