"""Delivery to a Slack incoming webhook: the digest as mrkdwn (runner.delivery.markup), split into
messages of at most 4,000 characters posted in order, and Slack's answers read as outcomes.

Why 4,000: Slack truncates a message's `text` beyond 40,000 characters
(api.slack.com/changelog/2018-04-truncating-really-long-messages), but its own guidance is that
"clients should limit messages sent to channels to 4000 characters" and split longer ones (the
RTM API's message limits), and a `section` block holds only 3,000. So the text goes in the
top-level `text` field, no blocks, 4,000 characters a message.

What an incoming webhook answers (api.slack.com/changelog/2016-05-17-changes-to-errors-for-
incoming-webhooks, and its incoming webhook docs): 200 `ok`; 400 `invalid_payload`, `no_text`,
`user_not_found`; 403 `action_prohibited`, `invalid_token`; 404 `no_service`,
`channel_not_found`; 410 `channel_is_archived`; 429 with Retry-After; 500 `rollup_error`. 4xx
other than 408 and 429 are permanent (the webhook was revoked, the channel archived: retrying
cannot help); 408, 429 and 5xx retry later."""

from __future__ import annotations

from typing import Any

from runner.delivery.chat_webhook import ChatWebhookSender
from runner.delivery.contract import (
    DeliveryContent,
    Rejected,
    RetryLater,
)
from runner.delivery.links import LINK_TEXT
from runner.delivery.markup import slack_units
from runner.delivery.replies import (
    common_outcome,
    error_code,
    retry_after_header,
)
from runner.delivery.splitting import split_units
from runner.delivery.webhook_post import (
    Reply,
)

SLACK_PART_CHARS = 4_000
SERVICE = "slack"


def slack_parts(content: DeliveryContent, limit: int = SLACK_PART_CHARS) -> list[str]:
    return split_units(
        slack_units(content.markdown, content.link, LINK_TEXT[content.event]), limit
    ) or ["(empty digest)"]


def slack_outcome(reply: Reply) -> RetryLater | Rejected | None:
    """None when Slack took the message; else what to do about it."""
    if reply.status == 200:
        return None
    wait = retry_after_header(reply.headers.get("retry-after"))
    if (shared := common_outcome(SERVICE, reply.status, wait)) is not None:
        return shared
    code = error_code(reply.body)
    return Rejected(f"slack refused the message ({reply.status}{' ' + code if code else ''})")


class SlackSender(ChatWebhookSender):
    """Posts a delivery to a Slack incoming webhook (the destination's secret `url`)."""

    service = SERVICE
    default_part_chars = SLACK_PART_CHARS

    def parts(self, content: DeliveryContent, limit: int) -> list[str]:
        return slack_parts(content, limit)

    def payload(self, text: str) -> dict[str, Any]:
        return {"text": text, "mrkdwn": True, "unfurl_links": False, "unfurl_media": False}

    def outcome(self, reply: Reply) -> RetryLater | Rejected | None:
        return slack_outcome(reply)
