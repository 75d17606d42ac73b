"""Slack and Discord destinations obey the outbound address policy of the generic webhook: a URL
whose host resolves to a metadata, link-local, private or loopback address is refused before any
request (loopback and private only unless DIGESTD_DELIVERY_ALLOW_PRIVATE; metadata and link-local
always), and the outbox records the delivery dead with "address is not allowed"."""

from __future__ import annotations

import logging

import asyncpg
import httpx
import pytest

from runner.delivery.contract import (
    Destination,
    DestinationKind,
    Rejected,
    Sender,
)
from runner.delivery.discord import DiscordSender
from runner.delivery.outbox import load_senders
from runner.delivery.slack import SlackSender
from runner.delivery.store import DestinationSpec
from runner.delivery.webhook import WebhookSender
from tests.support.chat_webhooks import discord_webhook, slack_webhook
from tests.support.deliveries import digest_content, one_pass_over
from tests.support.servers import resolving_to

SLACK_URL = "https://hooks.slack.example/services/T000/B000/xoxb-secret-token"
DISCORD_URL = "https://discord.example/api/webhooks/1234/discord-secret-token"


class _RecordingClient:
    """A real httpx client that records every request it is asked to send."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.client = httpx.AsyncClient(event_hooks={"request": [self._record]})

    async def _record(self, request: httpx.Request) -> None:
        self.requests.append(request)


@pytest.mark.parametrize("address", ["169.254.169.254", "10.0.0.1", "127.0.0.1", "fe80::1"])
@pytest.mark.parametrize("kind", [DestinationKind.SLACK, DestinationKind.DISCORD])
async def test_a_chat_webhook_resolving_to_a_forbidden_address_is_refused_unsent(
    address: str, kind: DestinationKind
) -> None:
    asked, resolve = resolving_to(address)
    recording = _RecordingClient()
    async with recording.client:
        sender: Sender
        if kind is DestinationKind.SLACK:
            sender = SlackSender(recording.client, resolver=resolve)
            url = SLACK_URL
        else:
            sender = DiscordSender(recording.client, resolver=resolve)
            url = DISCORD_URL
        outcome = await sender.send(
            digest_content(), Destination(1, "team", kind, secrets={"url": url})
        )
    assert outcome == Rejected(f"{kind.value} webhook address is not allowed")
    assert "secret" not in outcome.reason and "example" not in outcome.reason
    assert asked == [httpx.URL(url).host]
    assert recording.requests == []


async def test_metadata_and_link_local_are_refused_even_when_private_is_allowed() -> None:
    for address in ("169.254.169.254", "fe80::1", "fd00:ec2::254"):
        _, resolve = resolving_to(address)
        sender = SlackSender(allow_private=True, resolver=resolve)
        outcome = await sender.send(
            digest_content(),
            Destination(1, "team", DestinationKind.SLACK, secrets={"url": SLACK_URL}),
        )
        assert outcome == Rejected("slack webhook address is not allowed"), address


async def test_a_local_receiver_is_reached_only_when_private_addresses_are_allowed() -> None:
    async with slack_webhook() as slack, discord_webhook() as discord:
        for kind, url in (
            (DestinationKind.SLACK, slack.url),
            (DestinationKind.DISCORD, discord.url),
        ):
            senders = load_senders(WebhookSender())
            refused = await senders[kind].send(
                digest_content(), Destination(1, "t", kind, secrets={"url": url})
            )
            assert refused == Rejected(f"{kind.value} webhook address is not allowed")
            allowed = load_senders(WebhookSender(), allow_private=True)
            sent = await allowed[kind].send(
                digest_content(), Destination(1, "t", kind, secrets={"url": url})
            )
            assert not isinstance(sent, Rejected)
        assert len(slack.received) == 1 and len(discord.received) == 1


async def test_the_outbox_marks_a_slack_destination_on_a_forbidden_address_dead(
    db: asyncpg.Pool,
) -> None:
    urls = {
        "metadata": "https://169.254.169.254/services/T000/B000/xoxb-secret-token",
        "private": "https://10.0.0.1/services/T000/B000/xoxb-secret-token",
    }
    specs = [DestinationSpec(name, "slack", {}, {"url": url}) for name, url in urls.items()]
    assert (
        await one_pass_over(db, specs) == [("dead", 1, "slack webhook address is not allowed")] * 2
    )


async def test_no_chat_webhook_url_reaches_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with slack_webhook() as slack, discord_webhook() as discord:
        for kind, url in (
            (DestinationKind.SLACK, slack.url),
            (DestinationKind.DISCORD, discord.url),
        ):
            sender = load_senders(WebhookSender(), allow_private=True)[kind]
            sent = await sender.send(
                digest_content(), Destination(1, "t", kind, secrets={"url": url})
            )
            assert not isinstance(sent, Rejected)
        tokens = (slack.token, discord.token)
    assert len(slack.received) == 1 and len(discord.received) == 1
    assert not any(token in caplog.text for token in tokens)
