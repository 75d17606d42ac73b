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

import httpx

from runner.delivery.contract import (
    Delivered,
    DeliveryContent,
    Destination,
    Rejected,
    RetryLater,
    SendOutcome,
)
from runner.delivery.markup import discord_units
from runner.delivery.replies import (
    common_outcome,
    error_code,
    for_later_part,
    json_object,
    retry_after_header,
    seconds_of,
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

DISCORD_CONTENT_CHARS = 2_000
SUPPRESS_EMBEDS = 1 << 2
SERVICE = "discord"


def discord_parts(content: DeliveryContent, limit: int = DISCORD_CONTENT_CHARS) -> list[str]:
    return split_units(discord_units(content.markdown, content.link), limit) or ["(empty digest)"]


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


class DiscordSender:
    """Posts a delivery to a Discord webhook (the destination's secret `url`)."""

    def __init__(
        self,
        client: httpx.AsyncClient | None = None,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        allow_private: bool = False,
        resolver: Resolver | None = None,
        part_chars: int = DISCORD_CONTENT_CHARS,
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
        target = replace(target, url=target.url.copy_merge_params({"wait": "true"}))
        parts = discord_parts(content, self._part_chars)
        if self._client is not None:
            return await self._post_parts(self._client, target, parts)
        async with new_client(self._timeout_seconds) as client:
            return await self._post_parts(client, target, parts)

    async def _post_parts(
        self, client: httpx.AsyncClient, target: Target, parts: list[str]
    ) -> SendOutcome:
        status = 200
        for index, text in enumerate(parts):
            reply = await post_json(client, target, discord_payload(text), SERVICE)
            if isinstance(reply, RetryLater):
                return for_later_part(reply, index, len(parts))
            if (outcome := discord_outcome(reply)) is not None:
                return for_later_part(outcome, index, len(parts))
            status = reply.status
        return Delivered(status=status, parts=len(parts))
