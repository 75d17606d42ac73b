"""DiscordSender against a local receiver that answers like a Discord webhook: a long digest
posted in order as messages of at most 2,000 characters with `?wait=true`, no mention allowed
and none written, and each of Discord's answers (200/204, 400 with its JSON code, 401, 404
unknown webhook, 429 with `retry_after`, 5xx, no answer) read as delivered, retry later or
refused, with reasons that never hold the webhook URL."""

from __future__ import annotations

import re

import pytest

from runner.delivery.contract import (
    Delivered,
    Destination,
    DestinationKind,
    Rejected,
    RetryLater,
    SendOutcome,
)
from runner.delivery.discord import DISCORD_CONTENT_CHARS, DiscordSender
from runner.delivery.markup import ZERO_WIDTH_SPACE
from tests.support.chat_webhooks import (
    Scripted,
    discord_rate_limited,
    discord_webhook,
    long_digest,
)
from tests.support.deliveries import digest_content
from tests.support.servers import free_port


def destination(url: str) -> Destination:
    return Destination(2, "community", DestinationKind.DISCORD, secrets={"url": url})


async def test_a_long_digest_arrives_in_order_in_messages_that_fit_and_ping_nobody() -> None:
    async with discord_webhook() as discord:
        outcome = await DiscordSender(allow_private=True).send(
            digest_content(long_digest()), destination(discord.url)
        )
    assert isinstance(outcome, Delivered) and outcome.status == 200
    assert outcome.parts == len(discord.contents) > 4
    assert all(len(text) <= DISCORD_CONTENT_CHARS for text in discord.contents)
    for received in discord.received:
        assert received.query == {"wait": "true"}
        assert received.payload["allowed_mentions"] == {"parse": []}
    lines = [line for text in discord.contents for line in text.split("\n") if line.strip()]
    assert lines[0] == "# ops-team \\<!channel\\> digest"
    items = [line for line in lines if line.startswith("- Item")]
    assert [line.split(":")[0] for line in items] == [f"- Item {n}" for n in range(120)]
    assert items[3] == (
        "- Item 3: rotate the \\<@U00003\\> key & tell \\*everyone\\* "
        f"@{ZERO_WIDTH_SPACE}here\\[4\\]"
    )
    assert not any(re.search(r"@(everyone|here)", line) for line in lines)
    footnotes = [line for line in lines if line.startswith("\\[")]
    assert [line[:5] for line in footnotes] == [f"\\[{n}\\]" for n in range(1, 10)]
    # Whole lines only: no footnote or item was cut between two messages.
    assert len(lines) == 2 + 120 + 9


DISCORD_ANSWERS = [
    (
        Scripted(400, {"code": 50035, "message": "Invalid Form Body", "errors": {}}),
        Rejected("discord refused the message (400 code 50035)"),
    ),
    (
        Scripted(401, {"code": 50027, "message": "Invalid Webhook Token"}),
        Rejected("discord refused the message (401 code 50027)"),
    ),
    (
        Scripted(403, {"code": 50013, "message": "Missing Permissions"}),
        Rejected("discord refused the message (403 code 50013)"),
    ),
    (discord_rate_limited(1.234), RetryLater("discord rate limited", 1.234)),
    (
        discord_rate_limited(0.5, global_limit=True),
        RetryLater("discord rate limited (global)", 0.5),
    ),
    (
        Scripted(429, "<html>cloudflare</html>", {"Retry-After": "12"}),
        RetryLater("discord rate limited", 12.0),
    ),
    (Scripted(500, {"message": "500: Internal Server Error", "code": 0}), None),
    (Scripted(502, "<html>Bad Gateway</html>"), None),
]


@pytest.mark.parametrize(
    ("reply", "expected"),
    DISCORD_ANSWERS,
    ids=[f"{a[0].status}-{i}" for i, a in enumerate(DISCORD_ANSWERS)],
)
async def test_each_discord_answer_is_read_as_discord_means_it(
    reply: Scripted, expected: SendOutcome | None
) -> None:
    async with discord_webhook() as discord:
        discord.scripted.append(reply)
        outcome = await DiscordSender(allow_private=True).send(
            digest_content("# hi"), destination(discord.url)
        )
    assert outcome == (expected or RetryLater(f"discord server error {reply.status}"))
    assert discord.received == []


async def test_the_receivers_own_checks_answer_as_discord_does() -> None:
    async with discord_webhook() as discord:
        unknown = discord.url.replace(discord.token, "deleted-token")
        gone = await DiscordSender(allow_private=True).send(
            digest_content("# hi"), destination(unknown)
        )
        # A sender that ignored the limit would get Discord's 400 for a too long message.
        too_long = await DiscordSender(allow_private=True, part_chars=2_500).send(
            digest_content("x " * 1_200), destination(discord.url)
        )
    assert gone == Rejected("discord refused the message (404 code 10015)")
    assert too_long == Rejected("discord refused the message (400 code 50035)")


async def test_a_rate_limit_after_the_first_message_is_retried_with_its_wait() -> None:
    async with discord_webhook() as discord:
        rate_limited = discord_rate_limited(2.5)
        rate_limited.after = 1
        discord.scripted.append(rate_limited)
        outcome = await DiscordSender(allow_private=True).send(
            digest_content(long_digest()), destination(discord.url)
        )
    assert isinstance(outcome, RetryLater) and outcome.retry_after_seconds == 2.5
    assert re.fullmatch(r"part 2 of \d+: discord rate limited", outcome.reason)
    assert len(discord.received) == 1


async def test_no_answer_retries_later_and_no_reason_holds_the_url() -> None:
    secret = f"http://127.0.0.1:{free_port()}/api/webhooks/1/very-secret-token"
    outcome = await DiscordSender(allow_private=True, timeout_seconds=2).send(
        digest_content("# hi"), destination(secret)
    )
    assert outcome == RetryLater("discord webhook unreachable")
    refused = await DiscordSender(allow_private=True).send(
        digest_content("# hi"),
        destination("http://discord.example/api/webhooks/1/very-secret-token"),
    )
    assert refused == Rejected("discord webhook url must be https")
