"""A person's catch-up delivered as a DM: a real channel (a DiscordChatExporter export from
../shared/data) imported and digested offline, alice's handles there linked, and a message that
asks her something while pinging @everyone; `deliverCatchUp` queues her catch-up, rendered at
once, for a Slack-like and a Discord-like destination, and the delivery loop posts it: each
receiver gets it once, every cited line in order, and on Discord no mention can ping."""

from __future__ import annotations

from typing import Any

import asyncpg

from db import deliveries as delivery_queries
from runner.delivery.contract import DestinationKind, Sender
from runner.delivery.discord import DiscordSender
from runner.delivery.markup import ZERO_WIDTH_SPACE, discord_units, slack_units
from runner.delivery.outbox import DeliveryConfig, DeliveryLoop
from runner.delivery.slack import SlackSender
from runner.importers.ingest import import_path
from schema.context import Role
from schema.types.ids import CHANNEL, global_id
from tests.support.chat_webhooks import discord_webhook, slack_webhook
from tests.support.database import add_channel, messages
from tests.support.digests import digest_once
from tests.support.paths import shared_data
from tests.support.schema import gql, gql_as
from tests.support.worker import wait_for

CREATE = """
mutation($input: CreateDestinationInput!) {
  createDestination(input: $input) { __typename ... on InvalidInputError { message reason } }
}"""
LINK = """mutation($p: String!, $h: String!, $c: ID) {
  linkHandle(person: $p, handle: $h, channelId: $c) { __typename } }"""
DELIVER = """mutation($p: String!, $d: String!, $since: DateTime) {
  deliverCatchUp(person: $p, destination: $d, since: $since) {
    __typename
    ... on Delivery { id deliveryId event state attempts digestId destination { name } }
    ... on InvalidInputError { message reason }
  }
}"""
DELIVERIES = """{ deliveries { edges { node { deliveryId event state attempts } } } }"""
SINCE = "2000-01-01T00:00:00Z"
PING = "@alice can you review the bridge fix today @everyone <@123456789012345678>?"


async def _alice_in_a_real_channel(pool: asyncpg.Pool, database_url: str) -> None:
    report = await import_path(
        pool, shared_data("chat/discord/komodo_cc-general_48.csv"), channel="komodo"
    )
    channel = next(iter(report.channels.values()))
    done = await digest_once(pool, database_url, channel, chunk_tokens=1500)
    assert done.status in {"succeeded", "partial"}, done
    # On that server alice writes as "siu - Chainmakers#3920" and is addressed as "@siu".
    for handle in ("siu - Chainmakers#3920", "@siu"):
        linked = await gql(pool, LINK, p="alice", h=handle, c=global_id(CHANNEL, channel))
        assert linked["linkHandle"]["__typename"] == "Person"
    await add_channel(pool, "ops", messages([("bob", PING)]))


async def _destination(pool: asyncpg.Pool, name: str, kind: str, url: str) -> None:
    """A chat webhook destination created through the API, as an admin does."""
    spec = {"name": name, "kind": kind, "secrets": [{"key": "url", "value": url}]}
    created = (await gql_as(Role.ADMIN, pool, CREATE, input=spec))["createDestination"]
    assert created["__typename"] == "Destination", created


def _loop(pool: asyncpg.Pool) -> DeliveryLoop:
    senders: dict[DestinationKind, Sender] = {
        DestinationKind.SLACK: SlackSender(allow_private=True, timeout_seconds=5),
        DestinationKind.DISCORD: DiscordSender(allow_private=True, timeout_seconds=5),
    }
    config = DeliveryConfig(worker_id="dm", retry_base_seconds=0.1, retry_max_seconds=0.2)
    return DeliveryLoop(pool, senders, config)


async def _queue(pool: asyncpg.Pool, destination: str) -> tuple[dict[str, Any], str]:
    """deliverCatchUp for alice, and the Markdown it rendered (kept with the row until sent)."""
    queued = (await gql(pool, DELIVER, p="alice", d=destination, since=SINCE))["deliverCatchUp"]
    assert queued["__typename"] == "Delivery", queued
    async with pool.acquire() as connection:
        stored = await connection.fetchval(
            "SELECT content FROM deliveries WHERE delivery_id = $1::uuid", queued["deliveryId"]
        )
    return queued, str(stored["markdown"])


async def _drain(loop: DeliveryLoop, pool: asyncpg.Pool) -> list[dict[str, Any]]:
    async def settled() -> bool:
        await loop.deliver_due()
        async with pool.acquire() as connection:
            left: int = await connection.fetchval(
                "SELECT count(*) FROM deliveries WHERE state IN ('pending', 'delivering')"
            )
        return left == 0

    await wait_for(settled, 15, "the catch-up delivered")
    edges = (await gql(pool, DELIVERIES))["deliveries"]["edges"]
    return [edge["node"] for edge in edges]


def _lines(texts: list[str]) -> list[str]:
    return [line.rstrip() for text in texts for line in text.split("\n") if line.strip()]


async def test_alices_catch_up_reaches_a_slack_dm_once_with_its_citations(
    db: asyncpg.Pool, database_url: str
) -> None:
    await _alice_in_a_real_channel(db, database_url)
    async with slack_webhook() as slack:
        await _destination(db, "alice-dm", "SLACK", slack.url)
        unknown = (await gql(db, DELIVER, p="alice", d="nowhere"))["deliverCatchUp"]
        assert unknown["reason"] == "unknown_destination"
        queued, markdown = await _queue(db, "alice-dm")
        assert (queued["event"], queued["state"], queued["attempts"]) == ("CATCH_UP", "PENDING", 0)
        assert queued["digestId"] is None and queued["destination"] == {"name": "alice-dm"}
        (row,) = await _drain(_loop(db), db)
        texts = slack.texts
    assert (row["deliveryId"], row["state"], row["attempts"]) == (
        queued["deliveryId"],
        "DELIVERED",
        1,
    )
    # The catch-up covers the real channel and the ops one, each entry cited by footnotes.
    assert "komodo" in markdown and "ops" in markdown
    footnotes = [line for line in markdown.split("\n") if line.startswith("[^")]
    assert len(footnotes) >= 2
    # Slack got it once: every line, in order, no part twice.
    assert _lines(texts) == _lines(slack_units(markdown))
    # Every footnote arrived with its author and the quoted words (the real channel's too).
    joined = "\n".join(texts)
    for footnote in footnotes:
        author = footnote.split(":", 1)[1].split(",", 1)[0].strip()
        assert author in joined, footnote
    assert "post the raw hex value as well" in joined
    assert "review the bridge fix today" in joined
    async with db.acquire() as connection:
        # Sent, its content is not kept.
        assert await connection.fetchval("SELECT content IS NULL FROM deliveries")
        assert await delivery_queries.prune_deliveries(connection, 30, 10) == 0


async def test_alices_catch_up_on_discord_cannot_ping_anyone(
    db: asyncpg.Pool, database_url: str
) -> None:
    await _alice_in_a_real_channel(db, database_url)
    async with discord_webhook() as discord:
        await _destination(db, "alice-discord", "DISCORD", discord.url)
        queued, markdown = await _queue(db, "alice-discord")
        (row,) = await _drain(_loop(db), db)
        received = list(discord.received)
    assert (row["state"], row["attempts"]) == ("DELIVERED", 1)
    contents = [str(r.payload["content"]) for r in received]
    assert _lines(contents) == _lines(discord_units(markdown))
    # bob's question to alice is cited with its @everyone and its user mention, made inert.
    assert "everyone" in markdown and "123456789012345678" in markdown
    joined = "\n".join(contents)
    assert "@everyone" not in joined and "<@123456789012345678>" not in joined
    assert f"@{ZERO_WIDTH_SPACE}everyone" in joined
    assert all(r.payload["allowed_mentions"] == {"parse": []} for r in received)
