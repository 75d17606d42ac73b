"""Delivery to a Discord webhook: the digest as Discord Markdown (runner.delivery.markup), split
into messages of at most 2,000 characters (Discord's limit for a message's `content`), posted in
order.

Each POST carries `?wait=true`: Discord then answers once the message is saved (200 with the
message); without it, a message that is not saved returns no error. Every message allows no
mentions (`allowed_mentions: {"parse": []}`) on top of the escaping, and suppresses link
previews (flag SUPPRESS_EMBEDS). What Discord answers (discord.com/developers/docs: resources/
webhook, topics/rate-limits, topics/opcodes-and-status-codes): 200/204; 400 with a JSON
`{code, message}` (50035 invalid form body, 50006 empty message); 401, 403 and 404 (10015
unknown webhook, 50027 invalid webhook token); 429 with a JSON `{retry_after: seconds (float),
global: bool}` and the Retry-After and X-RateLimit-Reset-After headers; 5xx. 4xx other than
408 and 429 are permanent."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from runner.delivery.chat_webhook import ChatWebhookSender
from runner.delivery.contract import (
    DeliveryContent,
    Rejected,
    RetryLater,
)
from runner.delivery.links import LINK_TEXT
from runner.delivery.markup import discord_units
from runner.delivery.replies import (
    common_outcome,
    error_code,
    json_object,
    retry_after_header,
    seconds_of,
)
from runner.delivery.splitting import split_units
from runner.delivery.webhook_post import (
    Reply,
    Target,
)

DISCORD_CONTENT_CHARS = 2_000
SUPPRESS_EMBEDS = 1 << 2
SERVICE = "discord"


def discord_parts(content: DeliveryContent, limit: int = DISCORD_CONTENT_CHARS) -> list[str]:
    return split_units(
        discord_units(content.markdown, content.link, LINK_TEXT[content.event]), limit
    ) or ["(empty digest)"]


def discord_payload(text: str) -> dict[str, object]:
    return {"content": text, "allowed_mentions": {"parse": []}, "flags": SUPPRESS_EMBEDS}


def _wait_seconds(reply: Reply) -> float | None:
    """Discord's wait: the JSON `retry_after` (seconds, with a fraction), else its headers."""
    body = json_object(reply.body)
    for candidate in (
        seconds_of(body.get("retry_after")),
        seconds_of(reply.headers.get("x-ratelimit-reset-after")),
        retry_after_header(reply.headers.get("retry-after")),
    ):
        if candidate is not None:
            return candidate
    return None


def discord_outcome(reply: Reply) -> RetryLater | Rejected | None:
    """None when Discord took the message; else what to do about it."""
    if reply.status in (200, 204):
        return None
    wait = _wait_seconds(reply) if reply.status in (429, 503) else None
    if (shared := common_outcome(SERVICE, reply.status, wait)) is not None:
        if reply.status == 429 and json_object(reply.body).get("global") is True:
            return RetryLater("discord rate limited (global)", wait)
        return shared
    code = error_code(json_object(reply.body).get("code", ""))
    return Rejected(
        f"discord refused the message ({reply.status}{' code ' + code if code else ''})"
    )


class DiscordSender(ChatWebhookSender):
    """Posts a delivery to a Discord webhook (the destination's secret `url`)."""

    service = SERVICE
    default_part_chars = DISCORD_CONTENT_CHARS

    def parts(self, content: DeliveryContent, limit: int) -> list[str]:
        return discord_parts(content, limit)

    def payload(self, text: str) -> dict[str, Any]:
        return discord_payload(text)

    def outcome(self, reply: Reply) -> RetryLater | Rejected | None:
        return discord_outcome(reply)

    def aim(self, target: Target) -> Target:
        # `wait=true`: Discord answers with the message (and a 429 is seen) instead of a bare 204.
        return replace(target, url=target.url.copy_merge_params({"wait": "true"}))
