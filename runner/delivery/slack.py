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

import httpx

from runner.delivery.contract import (
    Delivered,
    DeliveryContent,
    Destination,
    Rejected,
    RetryLater,
    SendOutcome,
)
from runner.delivery.markup import slack_units
from runner.delivery.replies import (
    common_outcome,
    error_code,
    for_later_part,
    retry_after_header,
)
from runner.delivery.splitting import split_units
from runner.delivery.webhook_post import (
    DEFAULT_TIMEOUT_SECONDS,
    Reply,
    Target,
    address_policy,
    checked_target,
    new_client,
    post_json,
)
from runner.documents.fetch import Resolver

SLACK_PART_CHARS = 4_000
SERVICE = "slack"


def slack_parts(content: DeliveryContent, limit: int = SLACK_PART_CHARS) -> list[str]:
    return split_units(slack_units(content.markdown, content.link), limit) or ["(empty digest)"]


def slack_outcome(reply: Reply) -> RetryLater | Rejected | None:
    """None when Slack took the message; else what to do about it."""
    if reply.status == 200:
        return None
    wait = retry_after_header(reply.headers.get("retry-after"))
    if (shared := common_outcome(SERVICE, reply.status, wait)) is not None:
        return shared
    code = error_code(reply.body)
    return Rejected(f"slack refused the message ({reply.status}{' ' + code if code else ''})")


class SlackSender:
    """Posts a delivery to a Slack incoming webhook (the destination's secret `url`)."""

    def __init__(
        self,
        client: httpx.AsyncClient | None = None,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        allow_private: bool = False,
        resolver: Resolver | None = None,
        part_chars: int = SLACK_PART_CHARS,
    ) -> None:
        self._client = client
        self._timeout_seconds = timeout_seconds
        self._part_chars = part_chars
        # Loopback and private receivers only when DIGESTD_DELIVERY_ALLOW_PRIVATE is set.
        self._policy = address_policy(allow_private)
        self._resolver = resolver

    async def send(self, content: DeliveryContent, destination: Destination) -> SendOutcome:
        target = await checked_target(
            destination.secrets.get("url"), SERVICE, self._policy, self._resolver
        )
        if not isinstance(target, Target):
            return target
        parts = slack_parts(content, self._part_chars)
        if self._client is not None:
            return await self._post_parts(self._client, target, parts)
        async with new_client(self._timeout_seconds) as client:
            return await self._post_parts(client, target, parts)

    async def _post_parts(
        self, client: httpx.AsyncClient, target: Target, parts: list[str]
    ) -> SendOutcome:
        for index, text in enumerate(parts):
            payload = {"text": text, "mrkdwn": True, "unfurl_links": False, "unfurl_media": False}
            reply = await post_json(client, target, payload, SERVICE)
            if isinstance(reply, RetryLater):
                return for_later_part(reply, index, len(parts))
            if (outcome := slack_outcome(reply)) is not None:
                return for_later_part(outcome, index, len(parts))
        return Delivered(status=200, parts=len(parts))
