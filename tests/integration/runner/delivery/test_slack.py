"""SlackSender against a local receiver that answers like a Slack incoming webhook: a long digest
posted in order as parts of at most 4,000 characters with every line, message text escaped, and
each of Slack's answers (200 ok, 400, 403, 404, 410, 429 with Retry-After, 5xx, no answer) read as
delivered, retry later or refused, with reasons that never hold the webhook URL."""

from __future__ import annotations

import httpx
import pytest

from runner.delivery.contract import (
    Delivered,
    Destination,
    DestinationKind,
    Rejected,
    RetryLater,
    SendOutcome,
)
from runner.delivery.slack import SLACK_PART_CHARS, SlackSender
from tests.support.chat_webhooks import long_digest, slack_webhook
from tests.support.deliveries import digest_content
from tests.support.servers import free_port


def destination(url: str) -> Destination:
    return Destination(1, "team", DestinationKind.SLACK, secrets={"url": url})


async def test_a_long_digest_arrives_in_order_in_parts_that_fit() -> None:
    markdown = long_digest()
    async with slack_webhook() as slack:
        outcome = await SlackSender(allow_private=True).send(
            digest_content(markdown, link="https://digestd.example/d/7"), destination(slack.url)
        )
    assert isinstance(outcome, Delivered) and outcome.status == 200
    assert outcome.parts == len(slack.texts) > 2
    assert all(len(text) <= SLACK_PART_CHARS for text in slack.texts)
    assert all(r.payload["unfurl_links"] is False for r in slack.received)
    lines = [line for text in slack.texts for line in text.split("\n") if line.strip()]
    assert lines[0] == "*ops-team &lt;!channel&gt; digest*"
    items = [line for line in lines if line.startswith("• Item")]
    assert [line.split(":")[0] for line in items] == [f"• Item {n}" for n in range(120)]
    assert items[3] == "• Item 3: rotate the &lt;@U00003&gt; key &amp; tell ∗everyone∗ @here[4]"
    footnotes = [line for line in lines if line.startswith("[")]
    assert [line[:4] for line in footnotes] == [f"[{n}] " for n in range(1, 10)]
    assert lines[-1] == "<https://digestd.example/d/7|Read the full digest>"


SLACK_ANSWERS = [
    (400, "invalid_payload", {}, Rejected("slack refused the message (400 invalid_payload)")),
    (400, "no_text", {}, Rejected("slack refused the message (400 no_text)")),
    (403, "action_prohibited", {}, Rejected("slack refused the message (403 action_prohibited)")),
    (403, "invalid_token", {}, Rejected("slack refused the message (403 invalid_token)")),
    (404, "channel_not_found", {}, Rejected("slack refused the message (404 channel_not_found)")),
    (
        410,
        "channel_is_archived",
        {},
        Rejected("slack refused the message (410 channel_is_archived)"),
    ),
    (429, "rate_limited", {"Retry-After": "30"}, RetryLater("slack rate limited", 30.0)),
    (500, "rollup_error", {}, RetryLater("slack server error 500")),
    (503, "<html>Service Unavailable</html>", {}, RetryLater("slack server error 503")),
    (401, "<html>whatever went wrong</html>", {}, Rejected("slack refused the message (401)")),
]


@pytest.mark.parametrize(
    ("status", "body", "headers", "expected"),
    SLACK_ANSWERS,
    ids=[f"{a[0]}-{a[1][:12]}" for a in SLACK_ANSWERS],
)
async def test_each_slack_answer_is_read_as_slack_means_it(
    status: int, body: str, headers: dict[str, str], expected: SendOutcome
) -> None:
    async with slack_webhook() as slack:
        slack.fail_next(status, body, headers)
        outcome = await SlackSender(allow_private=True).send(
            digest_content("# hi"), destination(slack.url)
        )
    assert outcome == expected
    assert slack.received == []


async def test_an_unknown_webhook_is_refused_without_naming_it() -> None:
    async with slack_webhook() as slack:
        wrong = slack.url.replace(slack.token, "revoked-token")
        outcome = await SlackSender(allow_private=True).send(
            digest_content("# hi"), destination(wrong)
        )
    assert outcome == Rejected("slack refused the message (404 no_service)")


async def test_a_failure_after_the_first_part_is_retried_with_its_wait() -> None:
    async with slack_webhook() as slack:
        async with httpx.AsyncClient() as client:
            sender = SlackSender(client, allow_private=True, part_chars=300)
            slack.fail_next(410, "channel_is_archived", after=1)
            archived = await sender.send(digest_content(long_digest(6)), destination(slack.url))
            slack.fail_next(429, "rate_limited", {"Retry-After": "7"}, after=2)
            limited = await sender.send(digest_content(long_digest(6)), destination(slack.url))
    # Part 1 was delivered, so even a refusal is retried: the outbox sends every part again.
    assert isinstance(archived, RetryLater) and archived.retry_after_seconds is None
    assert archived.reason.startswith("part 2 of ")
    assert archived.reason.endswith(": slack refused the message (410 channel_is_archived)")
    assert isinstance(limited, RetryLater) and limited.retry_after_seconds == 7.0
    assert limited.reason.startswith("part 3 of ")
    assert len(slack.received) == 1 + 2


async def test_no_answer_retries_later_and_no_reason_holds_the_url() -> None:
    secret_url = f"http://127.0.0.1:{free_port()}/services/T000/B000/xoxb-very-secret"
    outcome = await SlackSender(allow_private=True, timeout_seconds=2).send(
        digest_content("# hi"), destination(secret_url)
    )
    assert outcome == RetryLater("slack webhook unreachable")
    for url, reason in [
        ("http://hooks.slack.example/services/T/B/secret", "slack webhook url must be https"),
        ("", "slack destination has no webhook url"),
    ]:
        refused = await SlackSender(allow_private=True).send(
            digest_content("# hi"), destination(url)
        )
        assert refused == Rejected(reason)
        assert "secret" not in refused.reason
