"""The delivery loop: every worker process claims due outbox rows, sends each through the
sender of its destination's kind, and records the outcome.

A row is claimed under a lease (state `delivering` until `lease_expires_at`), only when it is
the oldest unfinished row of its destination, so a destination receives its deliveries in the
order they were created, and a receiver that was down for an hour gets every one, in order,
when it is back. A worker killed mid-send leaves the lease to run out; another worker then
sends the same content again with the same delivery id. The guarantee is at-least-once with
an id: a receiver drops a repeat by `delivery_id` (a crash between the receiver's answer and
our commit is the only way it sees one).

The loop wakes on LISTEN digestd_deliveries (whatever queues a row due now NOTIFYs it, see
db/deliveries.py) and polls every `poll_seconds` as well, so a lost notification, or a retry
coming due, costs latency only.

Outcomes: Delivered → delivered; RetryLater → pending again after the larger of the receiver's
Retry-After and a jittered exponential backoff; Rejected, or the attempt cap → dead (visible in
the API and metrics; `retryDelivery` queues a dead row again). The content is rendered by the
first attempt and stored with the row: every attempt sends the same bytes.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from db import deliveries as delivery_queries
from db import digests as digest_queries
from db import jobs as job_queries
from db.deliveries import DELIVERIES_CHANNEL
from db.models import Delivery, DeliveryTarget
from runner.delivery.contract import (
    Delivered,
    DeliveryContent,
    DeliveryEvent,
    Destination,
    DestinationKind,
    Rejected,
    RetryLater,
    Sender,
    SendOutcome,
)
from runner.delivery.links import ConsoleLinks, delivery_link
from runner.delivery.markup import safe_link
from runner.exports.markdown import render_digest
from runner.metrics import DELIVERY_ATTEMPTS
from runner.supervision import Backoff, JobListener, describe_error, wait_any

logger = logging.getLogger(__name__)

# The senders another module provides, imported when first needed: (module, class name).
LAZY_SENDERS: dict[DestinationKind, tuple[str, str]] = {
    DestinationKind.SLACK: ("runner.delivery.slack", "SlackSender"),
    DestinationKind.DISCORD: ("runner.delivery.discord", "DiscordSender"),
    DestinationKind.EMAIL: ("runner.delivery.email", "EmailSender"),
}
# The kinds whose sender connects to a host of the destination's (a webhook URL, an SMTP host):
# they get the outbound address policy (DIGESTD_DELIVERY_ALLOW_PRIVATE) and the delivery timeout,
# as the webhook sender does.
POLICED_KINDS = frozenset({DestinationKind.SLACK, DestinationKind.DISCORD, DestinationKind.EMAIL})
NO_SENDER = "no sender for kind"
# A receiver's Retry-After is honoured up to a day; a longer one is read as a day.
MAX_RETRY_AFTER_SECONDS = 86_400.0
# Delivered rows deleted per pass at most: a short statement, whatever the backlog.
PRUNE_BATCH = 1000


@dataclass(frozen=True)
class DeliveryConfig:
    """How the loop runs (DIGESTD_DELIVERY_* settings)."""

    worker_id: str
    # With the backoff below, 12 attempts keep retrying for 1.7 to 3.4 hours: a receiver down for
    # an hour still gets every delivery when it is back.
    max_attempts: int = 12
    lease_seconds: float = 120.0
    poll_seconds: float = 2.0
    batch: int = 10
    retry_base_seconds: float = 10.0
    retry_max_seconds: float = 3600.0
    retention_days: int = 30
    # The server's public URL (DIGESTD_PUBLIC_URL): deliveries link to its console; "" for none.
    public_url: str = ""

    @property
    def links(self) -> ConsoleLinks | None:
        return ConsoleLinks(self.public_url) if self.public_url else None


def load_senders(
    webhook: Sender, *, allow_private: bool = False, timeout_seconds: float | None = None
) -> dict[DestinationKind, Sender]:
    """The sender of each kind this installation has: the webhook sender given, and each lazily
    named one whose module exists (a kind without one is delivered dead, `NO_SENDER`). The chat
    webhook and e-mail senders refuse loopback and private addresses unless `allow_private`, like
    the webhook sender."""
    senders: dict[DestinationKind, Sender] = {DestinationKind.WEBHOOK: webhook}
    for kind, (module_name, class_name) in LAZY_SENDERS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as missing:
            if missing.name != module_name:
                raise  # the module exists but one of its imports does not: a real fault
            continue
        options: dict[str, Any] = {}
        if kind in POLICED_KINDS:
            options["allow_private"] = allow_private
            if timeout_seconds is not None:
                options["timeout_seconds"] = timeout_seconds
        senders[kind] = getattr(module, class_name)(**options)
    return senders


def retry_delay(
    attempts: int, retry_after: float | None, base_seconds: float, max_seconds: float
) -> float:
    """When to try again after failed attempt number `attempts`: a jittered exponential backoff
    (capped at `max_seconds`), or the receiver's Retry-After when that is later."""
    ceiling = min(max_seconds, base_seconds * (2 ** max(0, attempts - 1)))
    backoff = random.uniform(ceiling / 2, ceiling)
    if retry_after is None:
        return backoff
    return max(backoff, min(max(retry_after, 0.0), MAX_RETRY_AFTER_SECONDS))


async def render_content(connection: asyncpg.Connection, delivery: Delivery) -> dict[str, Any]:
    """What `delivery` sends, as stored with the row: a title, Markdown and the JSON payload."""
    event = DeliveryEvent(delivery.event)
    if event is DeliveryEvent.DIGEST_READY:
        assert delivery.digest_id is not None  # the table's check
        digest = await digest_queries.digest_by_id(connection, delivery.digest_id)
        markdown = await render_digest(connection, delivery.digest_id)
        title = digest.title if digest is not None else f"digest {delivery.digest_id}"
        payload: dict[str, Any] = {
            "digest": {
                "id": delivery.digest_id,
                "job_id": delivery.job_id,
                "channel_id": digest.channel_id if digest else None,
                "title": title,
                "window_start": _iso(digest.window_start) if digest else None,
                "window_end": _iso(digest.window_end) if digest else None,
                "message_count": digest.message_count if digest else None,
            },
            "markdown": markdown,
        }
        return {"title": title, "markdown": markdown, "payload": payload}
    job = (
        await job_queries.job_by_id(connection, delivery.job_id)
        if delivery.job_id is not None
        else None
    )
    status = (
        job.status
        if job is not None
        else ("failed" if event is DeliveryEvent.JOB_FAILED else "succeeded")
    )
    kind = job.kind if job is not None else "job"
    title = f"{kind.capitalize()} job {delivery.job_id} {status}"
    markdown = f"**{title}**" + (
        f"\n\nDigest {delivery.digest_id} is ready." if delivery.digest_id else ""
    )
    payload = {
        "job": {
            "id": delivery.job_id,
            "kind": kind,
            "status": status,
            "digest_id": delivery.digest_id,
            "finished_at": _iso(job.finished_at) if job is not None else None,
        }
    }
    return {"title": title, "markdown": markdown, "payload": payload}


def _iso(value: Any) -> str | None:
    return None if value is None else str(value.isoformat())


def delivery_content(
    delivery: Delivery, stored: Mapping[str, Any], links: ConsoleLinks | None = None
) -> DeliveryContent:
    """The contract's content of `delivery` from what its first attempt stored, with the console
    link of what it announces when the public URL is known (`link` in the JSON too, else null)."""
    delivery_id = str(delivery.delivery_id)
    event = DeliveryEvent(delivery.event)
    stored_payload = dict(stored["payload"])
    link = safe_link(
        delivery_link(links, event, delivery.digest_id, delivery.job_id, stored_payload)
    )
    payload = {
        **stored_payload,
        "delivery_id": delivery_id,
        "event": delivery.event,
        "link": link,
    }
    return DeliveryContent(
        delivery_id=delivery_id,
        event=event,
        title=str(stored["title"]),
        markdown=str(stored["markdown"]),
        payload=payload,
        html=stored.get("html"),
        link=link,
    )


def destination_of(target: DeliveryTarget) -> Destination:
    return Destination(
        destination_id=target.id,
        name=target.name,
        kind=DestinationKind(target.kind),
        settings={key: str(value) for key, value in target.settings.items()},
        secrets={key: str(value) for key, value in target.secrets.items()},
    )


@dataclass
class DeliveryLoop:
    """Claims and delivers due outbox rows until stopped. Like the job loop, no error ends it:
    a database that is down costs a retry after a capped backoff. With `database_url` it also
    LISTENs for new rows (its own connection, re-opened when lost); without, it only polls."""

    pool: asyncpg.Pool
    senders: Mapping[DestinationKind, Sender]
    config: DeliveryConfig
    database_url: str | None = None
    _backoff: Backoff = field(default_factory=lambda: Backoff(0.5, 30.0))
    _wake: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, stop: asyncio.Event) -> None:
        poll = self.config.poll_seconds
        listener = (
            JobListener(self.database_url, self._wake, poll, DELIVERIES_CHANNEL)
            if self.database_url is not None
            else None
        )
        try:
            while not stop.is_set():
                # Cleared before the claim: a NOTIFY that lands while the claim runs must still
                # wake the wait below.
                self._wake.clear()
                if listener is not None:
                    await listener.ensure()
                try:
                    handled = await self.deliver_due()
                except Exception as error:  # noqa: BLE001 - a database outage costs a retry
                    delay = self._backoff.next_delay()
                    logger.warning(
                        "delivery loop failed (%s); retrying in %.1fs",
                        describe_error(error),
                        delay,
                    )
                    await wait_any((stop,), delay)
                    continue
                self._backoff.reset()
                if handled < self.config.batch:
                    await self._prune()
                    limit = listener.wait_limit(poll) if listener is not None else poll
                    await wait_any((self._wake, stop), limit)
        finally:
            if listener is not None:
                await listener.close()

    async def _prune(self) -> None:
        """Delete old delivered rows (a few at a time, when there is nothing to send)."""
        try:
            async with self.pool.acquire() as connection:
                pruned = await delivery_queries.prune_deliveries(
                    connection, self.config.retention_days, PRUNE_BATCH
                )
        except Exception as error:  # noqa: BLE001 - retried at the next idle pass
            logger.warning("delivery retention pass failed (%s)", describe_error(error))
            return
        if pruned:
            logger.info(
                "deliveries pruned: %s delivered more than %s days ago",
                pruned,
                self.config.retention_days,
            )

    async def deliver_due(self) -> int:
        """Claim one batch of due deliveries and deliver them concurrently (each is the head of
        a different destination); how many were claimed."""
        async with self.pool.acquire() as connection:
            claimed = await delivery_queries.claim_deliveries(
                connection, self.config.worker_id, self.config.batch, self.config.lease_seconds
            )
        await asyncio.gather(*(self._deliver(delivery) for delivery in claimed))
        return len(claimed)

    async def _deliver(self, delivery: Delivery) -> None:
        try:
            await self._attempt(delivery)
        except Exception as error:  # noqa: BLE001 - the lease runs out and the row is retaken
            logger.warning(
                "delivery %s: could not be attempted (%s); retried when its lease expires",
                delivery.delivery_id,
                describe_error(error),
            )

    async def _attempt(self, delivery: Delivery) -> None:
        async with self.pool.acquire() as connection:
            target = await delivery_queries.delivery_target(connection, delivery.destination_id)
            if target is None:  # deleted meanwhile: its deliveries went with it
                return
            if delivery.attempts > self.config.max_attempts:
                # Its last attempt's worker died mid-send: no attempt is left.
                await self._record(delivery, target.kind, Rejected("out of attempts"))
                return
            sender = self.senders.get(DestinationKind(target.kind))
            if sender is None:
                await self._record(delivery, target.kind, Rejected(NO_SENDER))
                return
            stored = delivery.content
            if stored is None and delivery.event == DeliveryEvent.CATCH_UP:
                # Rendered when queued; the table keeps it until delivered.
                await self._record(delivery, target.kind, Rejected("catch-up content missing"))
                return
            if stored is None:
                stored = await render_content(connection, delivery)
                await delivery_queries.set_delivery_content(connection, delivery.id, stored)
        content = delivery_content(delivery, stored, self.config.links)
        try:
            outcome: SendOutcome = await sender.send(content, destination_of(target))
        except Exception as error:  # noqa: BLE001 - a sender's fault is a retry, its text unsaid
            # The class only: an exception's text may quote a URL, which is a secret.
            outcome = RetryLater(f"sender error: {type(error).__name__}")
        await self._record(delivery, target.kind, outcome)

    async def _record(self, delivery: Delivery, kind: str, outcome: SendOutcome) -> None:
        config = self.config
        worker = config.worker_id
        async with self.pool.acquire() as connection:
            match outcome:
                case Delivered():
                    recorded = await delivery_queries.mark_delivered(
                        connection, delivery.id, worker
                    )
                    label = "delivered"
                case RetryLater() if delivery.attempts < config.max_attempts:
                    delay = retry_delay(
                        delivery.attempts,
                        outcome.retry_after_seconds,
                        config.retry_base_seconds,
                        config.retry_max_seconds,
                    )
                    recorded = await delivery_queries.mark_retry(
                        connection, delivery.id, worker, outcome.reason, delay
                    )
                    label = "retry"
                case RetryLater():
                    reason = f"{outcome.reason} (after {delivery.attempts} attempts)"
                    recorded = await delivery_queries.mark_dead(
                        connection, delivery.id, worker, reason
                    )
                    label = "dead"
                case Rejected():
                    recorded = await delivery_queries.mark_dead(
                        connection, delivery.id, worker, outcome.reason
                    )
                    label = "dead"
        DELIVERY_ATTEMPTS.labels(kind, label).inc()
        if recorded is None:
            logger.warning("delivery %s: lease lost; another worker has it", delivery.delivery_id)
        elif label == "dead":
            logger.warning(
                "delivery %s (%s) dead: %s",
                delivery.delivery_id,
                delivery.event,
                recorded.last_error,
            )
        else:
            logger.info(
                "delivery %s (%s) %s after attempt %s",
                delivery.delivery_id,
                delivery.event,
                label,
                delivery.attempts,
            )
