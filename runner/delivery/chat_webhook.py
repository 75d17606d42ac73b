"""What the Slack and Discord senders share: check the webhook URL against the address policy,
split the delivery into the service's parts and post them in order on one client, stopping at
the first part the service does not take. Each service says how it splits (`parts`), what one
part's JSON is (`payload`), how its replies read (`outcome`) and, if it must, how the checked
URL is aimed (`aim`)."""

from __future__ import annotations

from typing import Any

import httpx

from runner.delivery.contract import (
    Delivered,
    DeliveryContent,
    Destination,
    Rejected,
    RetryLater,
    SendOutcome,
)
from runner.delivery.replies import for_later_part
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


class ChatWebhookSender:
    """Posts a delivery to a chat service's webhook (the destination's secret `url`)."""

    service = ""
    default_part_chars = 0

    def __init__(
        self,
        client: httpx.AsyncClient | None = None,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        allow_private: bool = False,
        resolver: Resolver | None = None,
        part_chars: int | None = None,
    ) -> None:
        self._client = client
        self._timeout_seconds = timeout_seconds
        self._part_chars = part_chars or self.default_part_chars
        # Loopback and private receivers only when DIGESTD_DELIVERY_ALLOW_PRIVATE is set.
        self._policy = address_policy(allow_private)
        self._resolver = resolver

    def parts(self, content: DeliveryContent, limit: int) -> list[str]:
        raise NotImplementedError

    def payload(self, text: str) -> dict[str, Any]:
        raise NotImplementedError

    def outcome(self, reply: Reply) -> RetryLater | Rejected | None:
        """None when the service took the part; else what to do about it."""
        raise NotImplementedError

    def aim(self, target: Target) -> Target:
        return target

    async def send(self, content: DeliveryContent, destination: Destination) -> SendOutcome:
        target = await checked_target(
            destination.secrets.get("url"), self.service, self._policy, self._resolver
        )
        if not isinstance(target, Target):
            return target
        target = self.aim(target)
        parts = self.parts(content, self._part_chars)
        if self._client is not None:
            return await self._post_parts(self._client, target, parts)
        async with new_client(self._timeout_seconds) as client:
            return await self._post_parts(client, target, parts)

    async def _post_parts(
        self, client: httpx.AsyncClient, target: Target, parts: list[str]
    ) -> SendOutcome:
        status = 200
        for index, text in enumerate(parts):
            reply = await post_json(client, target, self.payload(text), self.service)
            if isinstance(reply, RetryLater):
                return for_later_part(reply, index, len(parts))
            if (outcome := self.outcome(reply)) is not None:
                return for_later_part(outcome, index, len(parts))
            status = reply.status
        return Delivered(status=status, parts=len(parts))
