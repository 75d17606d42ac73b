"""A daily schedule delivers its digest everywhere, once, after an outage: a real channel
(a DiscordChatExporter export from ../shared/data) stored, a "0 9 * * *" schedule created
through the API with deliverTo a Slack-like, a Discord-like and an SMTP destination, fired by
the schedule tick, digested offline by a worker, and delivered by the delivery loop while the
Slack-like endpoint answers 503 and then 429 with Retry-After and the SMTP server is not yet
up. When they are back, each receiver has the digest exactly once and the API lists every
delivery as delivered with its attempts."""

from __future__ import annotations

import time
from typing import Any

import asyncpg

from runner.delivery.contract import DestinationKind, Sender
from runner.delivery.discord import DiscordSender
from runner.delivery.email import EmailSender, message_id
from runner.delivery.markup import discord_units, slack_units
from runner.delivery.outbox import DeliveryConfig, DeliveryLoop
from runner.delivery.slack import SlackSender
from runner.exports.markdown import render_digest
from runner.schedules.tick import fire_due_schedules
from schema.context import Role
from schema.types.ids import CHANNEL, decode_global_id, global_id
from server.settings import Settings
from tests.support.chat_webhooks import discord_webhook, slack_webhook
from tests.support.database import Msg, add_channel
from tests.support.offline import parse_discord_csv
from tests.support.paths import shared_data
from tests.support.schema import gql_as
from tests.support.servers import free_port
from tests.support.smtp import smtp_server
from tests.support.worker import run_queued_jobs, wait_for

CREATE = """
mutation($input: CreateDestinationInput!) {
  createDestination(input: $input) {
    __typename ... on Destination { id name }
    ... on InvalidInputError { message reason }
  }
}"""
SCHEDULE = """
mutation($channel: ID!, $to: [String!]) {
  createSchedule(channelId: $channel, cron: "0 9 * * *", deliverTo: $to) {
    __typename ... on Schedule { id deliverTo { name } }
    ... on InvalidInputError { message reason }
  }
}"""
DELIVERIES = """
{
  deliveries {
    edges { node { deliveryId event state attempts lastError digestId destination { name } } }
  }
}"""
SENDER = "digest-bot@example.org"
RECIPIENT = "team@example.org"


def _destination(name: str, kind: str, settings: dict[str, str], url: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "settings": [{"key": key, "value": value} for key, value in settings.items()],
        "secrets": [{"key": "url", "value": url}] if url else [],
    }


def _loop(pool: asyncpg.Pool) -> DeliveryLoop:
    senders: dict[DestinationKind, Sender] = {
        DestinationKind.SLACK: SlackSender(allow_private=True, timeout_seconds=5),
        DestinationKind.DISCORD: DiscordSender(allow_private=True, timeout_seconds=5),
        DestinationKind.EMAIL: EmailSender(allow_private=True, timeout_seconds=5),
    }
    return DeliveryLoop(
        pool,
        senders,
        DeliveryConfig(
            worker_id="everywhere",
            max_attempts=8,
            lease_seconds=30,
            retry_base_seconds=0.2,
            retry_max_seconds=0.4,
        ),
    )


async def _listed(pool: asyncpg.Pool) -> dict[str, dict[str, Any]]:
    """The deliveries the API lists, by destination name."""
    edges = (await gql_as(Role.ADMIN, pool, DELIVERIES))["deliveries"]["edges"]
    return {edge["node"]["destination"]["name"]: edge["node"] for edge in edges}


def _lines(texts: list[str]) -> list[str]:
    return [line.rstrip() for text in texts for line in text.split("\n") if line.strip()]


async def test_a_daily_schedule_reaches_slack_discord_and_email_once_after_an_outage(
    db: asyncpg.Pool, settings: Settings
) -> None:
    started = time.monotonic()
    window = parse_discord_csv(shared_data("chat/discord/komodo_cc-general_48.csv"))
    items = [Msg(m.message_id, m.author, m.ts, m.normalized_text) for m in window.messages]
    channel_id = await add_channel(db, "cc-general", items)
    smtp_port = free_port()  # nothing listens there yet: the mail server is down
    async with slack_webhook() as slack, discord_webhook() as discord:
        slack.fail_next(503, "service_unavailable")
        slack.fail_next(503, "service_unavailable")
        slack.fail_next(429, "rate_limited", {"Retry-After": "1"})
        mail = {
            "host": "127.0.0.1",
            "port": str(smtp_port),
            "starttls": "false",
            "sender": SENDER,
            "recipients": RECIPIENT,
        }
        for spec in (
            _destination("slack-team", "SLACK", {}, slack.url),
            _destination("discord-team", "DISCORD", {}, discord.url),
            _destination("mail-team", "EMAIL", mail),
        ):
            created = (await gql_as(Role.ADMIN, db, CREATE, input=spec))["createDestination"]
            assert created["__typename"] == "Destination", created
        names = ["slack-team", "discord-team", "mail-team"]
        made = (
            await gql_as(Role.ADMIN, db, SCHEDULE, channel=global_id(CHANNEL, channel_id), to=names)
        )["createSchedule"]
        assert made["__typename"] == "Schedule", made
        assert sorted(d["name"] for d in made["deliverTo"]) == sorted(names)

        # 09:00 comes: the database clock passes the schedule's next run, and the tick fires it.
        async with db.acquire() as connection:
            await connection.execute("UPDATE schedules SET next_run_at = now() - interval '1 s'")
            assert len(await fire_due_schedules(connection, max_attempts=3)) == 1
            assert await fire_due_schedules(connection, max_attempts=3) == []
        await run_queued_jobs(settings)
        queued = await _listed(db)
        assert sorted(queued) == sorted(names)
        assert {(row["event"], row["state"]) for row in queued.values()} == {
            ("DIGEST_READY", "PENDING")
        }
        (digest_global_id,) = {row["digestId"] for row in queued.values()}
        _, digest_id = decode_global_id(digest_global_id)

        loop = _loop(db)

        async def outage_seen() -> bool:
            await loop.deliver_due()
            rows = await _listed(db)
            return min(int(rows[name]["attempts"]) for name in ("mail-team", "slack-team")) >= 2

        await wait_for(outage_seen, 15, "the outage to cost the mail and Slack attempts")
        during = await _listed(db)
        assert during["discord-team"]["state"] == "DELIVERED"
        assert during["mail-team"]["state"] == "PENDING"
        assert during["mail-team"]["lastError"] == "smtp connection failed"
        assert during["slack-team"]["state"] in ("PENDING", "DELIVERING")
        assert slack.received == []

        with smtp_server(None, port=smtp_port) as inbox:

            async def settled() -> bool:
                await loop.deliver_due()
                return all(row["state"] == "DELIVERED" for row in (await _listed(db)).values())

            await wait_for(settled, 20, "every delivery delivered")
            for _ in range(3):  # nothing left to send: another pass sends nothing again
                assert await loop.deliver_due() == 0
        slack_texts, discord_texts = slack.texts, discord.contents
    async with db.acquire() as connection:
        markdown = await render_digest(connection, digest_id)

    delivered = await _listed(db)
    assert {name: row["state"] for name, row in delivered.items()} == dict.fromkeys(
        names, "DELIVERED"
    )
    # Slack: 503, 503, 429 (Retry-After: 1), then taken; the mail server was down twice or more.
    assert delivered["slack-team"]["attempts"] == 4
    assert delivered["discord-team"]["attempts"] == 1
    assert delivered["mail-team"]["attempts"] >= 3
    assert all(row["lastError"] is None for row in delivered.values())

    # Each receiver has the digest once: Slack and Discord every part of it, in order, once.
    assert _lines(slack_texts) == _lines(slack_units(markdown))
    assert _lines(discord_texts) == _lines(discord_units(markdown))
    (mail_message,) = inbox.received
    assert mail_message.recipients == [RECIPIENT]
    assert mail_message.message["Message-ID"] == message_id(
        delivered["mail-team"]["deliveryId"], SENDER
    )
    plain = mail_message.message.get_body(("plain",))
    assert plain is not None
    # Line for line (the message's transfer encoding may drop a line's trailing spaces).
    assert _lines(plain.get_content().splitlines()) == [
        line.rstrip() for line in _lines([markdown])
    ]
    assert time.monotonic() - started < 30
