"""A real channel's digest delivered to the local Slack and Discord receivers: a DiscordChatExporter
export (../shared/data) stored, digested by a worker with the offline extractor, rendered by
runner.exports.markdown, then posted; every line of it arrives, in order, in messages within
each service's limit, with no mention and no footnote cut in two."""

from __future__ import annotations

import asyncpg

from runner.delivery.contract import (
    Delivered,
    DeliveryContent,
    DeliveryEvent,
    Destination,
    DestinationKind,
)
from runner.delivery.discord import DISCORD_CONTENT_CHARS, DiscordSender
from runner.delivery.markup import discord_units, slack_units
from runner.delivery.slack import SLACK_PART_CHARS, SlackSender
from runner.exports.markdown import render_digest
from tests.support.chat_webhooks import discord_webhook, slack_webhook
from tests.support.database import Msg, add_channel
from tests.support.digests import digest_once
from tests.support.offline import parse_discord_csv
from tests.support.paths import shared_data


def _lines(texts: list[str]) -> list[str]:
    return [line for text in texts for line in text.split("\n") if line.strip()]


async def test_a_real_digest_arrives_whole_on_slack_and_discord(
    db: asyncpg.Pool, database_url: str
) -> None:
    window = parse_discord_csv(shared_data("chat/discord/komodo_cc-general_48.csv"))
    items = [Msg(m.message_id, m.author, m.ts, m.normalized_text) for m in window.messages]
    channel = await add_channel(db, "cc-general", items)
    done = await digest_once(db, database_url, channel)
    assert done.status == "succeeded" and done.digest_id is not None
    async with db.acquire() as connection:
        markdown = await render_digest(connection, done.digest_id)
    assert len(markdown) > 2 * DISCORD_CONTENT_CHARS and "[^1]:" in markdown
    content = DeliveryContent(
        delivery_id=f"digest-{done.digest_id}",
        event=DeliveryEvent.DIGEST_READY,
        title="cc-general digest",
        markdown=markdown,
        payload={},
    )
    async with discord_webhook() as discord, slack_webhook() as slack:
        to_discord = await DiscordSender(allow_private=True).send(
            content, Destination(1, "d", DestinationKind.DISCORD, secrets={"url": discord.url})
        )
        to_slack = await SlackSender(allow_private=True).send(
            content, Destination(2, "s", DestinationKind.SLACK, secrets={"url": slack.url})
        )
    assert isinstance(to_discord, Delivered) and to_discord.parts == len(discord.contents) > 1
    assert all(len(text) <= DISCORD_CONTENT_CHARS for text in discord.contents)
    assert isinstance(to_slack, Delivered) and to_slack.parts == len(slack.texts)
    assert all(len(text) <= SLACK_PART_CHARS for text in slack.texts)
    # Joined back, the messages are the whole digest, line for line: no footnote or item cut.
    assert _lines(discord.contents) == _lines(discord_units(markdown))
    assert _lines(slack.texts) == _lines(slack_units(markdown))
    footnotes = [line for line in _lines(discord.contents) if line.startswith("\\[")]
    assert len(footnotes) == markdown.count("\n[^")
    assert not any("@everyone" in text or "@here" in text for text in discord.contents)
