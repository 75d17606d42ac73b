"""The webhook sender's pure parts and its address guard (runner/delivery/webhook.py): the
signature a receiver verifies and a replay it refuses, Retry-After in seconds or as a date,
what each status means, the backoff's bounds, and destinations the guard refuses before any
connection."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime

import httpx
import pytest

from runner.delivery.contract import (
    Delivered,
    DeliveryContent,
    DeliveryEvent,
    Destination,
    DestinationKind,
    Rejected,
    RetryLater,
)
from runner.delivery.outbox import (
    LAZY_SENDERS,
    MAX_RETRY_AFTER_SECONDS,
    DeliveryConfig,
    load_senders,
    retry_delay,
)
from runner.delivery.webhook import (
    WebhookSender,
    outcome_of,
    parse_retry_after,
    signature,
    verify_signature,
)
from server.settings import Settings

BODY = b'{"event":"digest.ready"}'


def test_a_signature_verifies_and_a_replay_or_a_changed_body_does_not() -> None:
    signed = signature("key", "1700000000", BODY)
    assert signed.startswith("sha256=") and len(signed) == 7 + 64
    assert verify_signature("key", "1700000000", BODY, signed, now=1700000100)
    assert not verify_signature("key", "1700000000", BODY, signed, now=1700000301)
    assert not verify_signature("key", "1700000000", BODY + b" ", signed, now=1700000000)
    assert not verify_signature("other", "1700000000", BODY, signed, now=1700000000)
    assert not verify_signature("key", "soon", BODY, signed, now=1700000000)


def test_retry_after_is_read_in_seconds_or_as_an_http_date() -> None:
    now = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after("Sun, 29 Nov 2026 12:01:30 GMT", now=now) == 90.0
    assert parse_retry_after("Sun, 29 Nov 2026 11:00:00 GMT", now=now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (200, Delivered(status=200)),
        (204, Delivered(status=204)),
        (408, RetryLater("HTTP 408")),
        (429, RetryLater("HTTP 429", 30.0)),
        (503, RetryLater("HTTP 503", 30.0)),
        (400, Rejected("HTTP 400")),
        (301, Rejected("HTTP 301")),
        (410, Rejected("HTTP 410")),
    ],
)
def test_each_status_is_delivered_retried_or_refused(status: int, expected: object) -> None:
    headers = {"Retry-After": "30"} if status in (429, 503) else {}
    assert outcome_of(httpx.Response(status, headers=headers)) == expected


def test_the_backoff_grows_is_capped_and_yields_to_a_later_retry_after() -> None:
    for attempts in range(1, 12):
        delay = retry_delay(attempts, None, 10, 3600)
        ceiling = min(3600, 10 * 2 ** (attempts - 1))
        assert ceiling / 2 <= delay <= ceiling
    assert retry_delay(1, 120, 10, 3600) == 120
    assert retry_delay(1, 10**9, 10, 3600) == MAX_RETRY_AFTER_SECONDS


def _content() -> DeliveryContent:
    return DeliveryContent("d-1", DeliveryEvent.DIGEST_READY, "t", "m", {"x": 1})


def _to(url: str) -> Destination:
    return Destination(1, "hook", DestinationKind.WEBHOOK, {}, {"url": url, "signing_secret": "k"})


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:9/private", "http://10.0.0.7/x", "http://169.254.169.254/latest"],
)
async def test_private_addresses_are_refused_without_the_setting(url: str) -> None:
    outcome = await WebhookSender().send(_content(), _to(url))
    assert outcome == Rejected("the destination address is not allowed")


async def test_a_metadata_address_is_refused_even_with_private_addresses_allowed() -> None:
    sender = WebhookSender(allow_private=True)
    outcome = await sender.send(_content(), _to("http://169.254.169.254/latest"))
    assert outcome == Rejected("the destination address is not allowed")


async def test_a_name_that_resolves_to_loopback_is_refused_and_not_named() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    outcome = await WebhookSender(resolver=resolver).send(
        _content(), _to("https://secret-host.example/hook")
    )
    assert isinstance(outcome, Rejected) and "secret-host" not in outcome.reason


def test_the_registry_has_the_webhook_sender_and_each_other_kind_whose_module_exists() -> None:
    webhook = WebhookSender()
    senders = load_senders(webhook)
    assert senders[DestinationKind.WEBHOOK] is webhook
    for kind, (module, class_name) in LAZY_SENDERS.items():
        assert (kind in senders) == (importlib.util.find_spec(module) is not None)
        if kind in senders:
            assert type(senders[kind]).__name__ == class_name


def test_the_default_retries_outlast_a_receiver_down_for_an_hour() -> None:
    """The shortest the defaults keep a delivery alive: every backoff at its jittered minimum."""
    config = DeliveryConfig(worker_id="w")
    settings = Settings()
    assert config.max_attempts == settings.digestd_delivery_max_attempts
    shortest = sum(
        min(config.retry_max_seconds, config.retry_base_seconds * 2 ** (attempts - 1)) / 2
        for attempts in range(1, config.max_attempts)
    )
    assert shortest > 3600
