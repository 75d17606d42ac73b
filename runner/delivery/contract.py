"""What every delivery sender is given and what it answers: the content of one delivery (rendered
once, the same for every attempt), a destination's settings and secrets, and the outcome of one
attempt, which the outbox turns into delivered, retry later (with the receiver's Retry-After when
it gave one) or dead (a permanent refusal, or the attempt cap)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol


class DestinationKind(StrEnum):
    WEBHOOK = "webhook"  # any HTTPS receiver: JSON body, HMAC-SHA256 signature, delivery id
    SLACK = "slack"  # a Slack incoming webhook URL
    DISCORD = "discord"  # a Discord webhook URL
    EMAIL = "email"  # SMTP with STARTTLS


class DeliveryEvent(StrEnum):
    DIGEST_READY = "digest.ready"
    JOB_SUCCEEDED = "job.succeeded"
    JOB_FAILED = "job.failed"
    CATCH_UP = "catchup.ready"  # a person's catch-up, sent by hand (never subscribed to)


@dataclass(frozen=True)
class DeliveryContent:
    """One delivery's content. `delivery_id` is stable across attempts: receivers use it to drop
    a repeat. `markdown` is the digest's Markdown with stored text already escaped
    (runner.core.markdown_text); senders convert it to their own markup and never add chat text
    unescaped. `payload` is the JSON object a generic webhook posts."""

    delivery_id: str
    event: DeliveryEvent
    title: str
    markdown: str
    payload: Mapping[str, object]
    html: str | None = None
    link: str | None = None  # where the full digest can be read, when the server knows its URL


@dataclass(frozen=True)
class Destination:
    """A destination as a sender needs it: non-secret settings (`settings`, e.g. SMTP host, port,
    sender and recipients) and secrets (`secrets`, e.g. the webhook URL, the signing key, the SMTP
    password), which never leave the process in an error, a log line or the API."""

    destination_id: int
    name: str
    kind: DestinationKind
    settings: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Delivered:
    status: int | None = None  # the receiver's HTTP status, or the SMTP reply code
    parts: int = 1  # messages sent, when the content was split to fit the receiver's limits


@dataclass(frozen=True)
class RetryLater:
    reason: str  # short, ours (never the receiver's body in full, never a secret)
    retry_after_seconds: float | None = None  # the receiver's Retry-After, when it gave one


@dataclass(frozen=True)
class Rejected:
    reason: str  # a permanent refusal (a 4xx other than 408 and 429, a bad address)


SendOutcome = Delivered | RetryLater | Rejected


class Sender(Protocol):
    """One destination kind. A sender makes one attempt and never retries itself; it sends the
    parts of a split message in order and, when a later part fails, answers RetryLater so the
    outbox retries (receivers see the parts again with the same delivery id)."""

    async def send(self, content: DeliveryContent, destination: Destination) -> SendOutcome: ...
