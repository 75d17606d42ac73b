"""The delivery outbox end to end on loopback (runner/delivery/outbox.py, webhook.py): a
schedule's digest queued for delivery in the transaction that stored it and delivered once,
signed; retries after a receiver outage that keep each destination's order; Retry-After
honoured; a refusal dead; and no secret in a log line."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import quote

import asyncpg
import pytest
from prometheus_client import REGISTRY

from db import deliveries as delivery_queries
from db import jobs
from db.deliveries import DELIVERIES_CHANNEL, delivery_state_counts
from db.models import DeliveryListing
from runner.delivery.contract import DestinationKind, Sender
from runner.delivery.outbox import NO_SENDER, DeliveryConfig, DeliveryLoop
from runner.delivery.store import DestinationSpec, create_destination
from runner.delivery.webhook import WebhookSender
from runner.schedules import store as schedules
from runner.schedules.tick import fire_due_schedules
from schema.types.ids import DIGEST, global_id
from server.metrics import DELIVERIES
from server.runtime import Runtime
from server.settings import Settings
from tests.support.database import add_channel, messages
from tests.support.jobs import expire_lease, sessions_listening
from tests.support.receiver import Answer, Receiver, serving
from tests.support.servers import free_port
from tests.support.worker import run_queued_jobs, trigger, wait_for

SECRET = "whsec-test-signing-key-0123456789"
URL_TOKEN = "tok-4f9a2c-private-path"


def _url(port: int) -> str:
    return f"http://127.0.0.1:{port}/hooks/{URL_TOKEN}"


def _loop(
    pool: asyncpg.Pool,
    senders: dict[DestinationKind, Sender] | None = None,
    worker_id: str = "test-worker",
    public_url: str = "",
) -> DeliveryLoop:
    return DeliveryLoop(
        pool,
        senders or {DestinationKind.WEBHOOK: WebhookSender(allow_private=True, timeout_seconds=5)},
        DeliveryConfig(
            worker_id=worker_id,
            max_attempts=4,
            lease_seconds=30,
            retry_base_seconds=0.2,
            retry_max_seconds=0.4,
            public_url=public_url,
        ),
    )


async def _destination(
    pool: asyncpg.Pool, port: int, name: str = "hook", events: tuple[str, ...] = ()
) -> int:
    spec = DestinationSpec(
        name, "webhook", {}, {"url": _url(port), "signing_secret": SECRET}, events
    )
    async with pool.acquire() as connection:
        return (await create_destination(connection, spec)).id


async def _scheduled_channel(pool: asyncpg.Pool, name: str, destination: str) -> int:
    """A channel with new messages and a schedule delivering to `destination`, due now."""
    channel_id = await add_channel(
        pool,
        name,
        messages(
            [
                ("ann", f"The {name} release ships on Friday after the freeze."),
                ("bob", f"Rollback of the {name} release needs the on-call lead's approval."),
            ]
        ),
    )
    async with pool.acquire() as connection:
        schedule = await schedules.create_schedule(
            connection, channel_id, "0 9 * * *", "UTC", deliver_to_names=[destination]
        )
        await connection.execute(
            "UPDATE schedules SET next_run_at = now() - interval '1 minute' WHERE id = $1",
            schedule.id,
        )
    return channel_id


async def _fire_and_run(pool: asyncpg.Pool, settings: Settings) -> None:
    """Fire the due schedules and run every job they queued."""
    async with pool.acquire() as connection:
        fired = await fire_due_schedules(connection, max_attempts=3)
    await run_queued_jobs(settings, len(fired))


@asynccontextmanager
async def _a_digest_queued_for(
    pool: asyncpg.Pool, settings: Settings, receiver: Receiver
) -> AsyncIterator[int]:
    """`receiver` served (its port yielded) behind destination "hook", and one digest of a
    schedule delivering to it stored, its delivery queued."""
    async with serving(receiver) as port:
        await _destination(pool, port)
        await _scheduled_channel(pool, "ops", "hook")
        await _fire_and_run(pool, settings)
        yield port


async def _deliveries(pool: asyncpg.Pool) -> list[DeliveryListing]:
    async with pool.acquire() as connection:
        ids = [r["id"] for r in await connection.fetch("SELECT id FROM deliveries ORDER BY id")]
        return sorted(await delivery_queries.deliveries_by_ids(connection, ids), key=lambda d: d.id)


async def _drain(
    loop: DeliveryLoop, pool: asyncpg.Pool, timeout: float = 20
) -> list[DeliveryListing]:
    """Run the loop's batches until no delivery is pending or delivering."""

    async def settled() -> bool:
        await loop.deliver_due()
        return all(d.state in ("delivered", "dead") for d in await _deliveries(pool))

    await wait_for(settled, timeout, "every delivery delivered or dead")
    return await _deliveries(pool)


async def test_a_schedules_digest_is_delivered_once_signed_with_its_delivery_id(
    db: asyncpg.Pool, settings: Settings
) -> None:
    receiver = Receiver(SECRET)
    async with _a_digest_queued_for(db, settings, receiver):
        (queued,) = await _deliveries(db)
        assert (queued.event, queued.state, queued.attempts) == ("digest.ready", "pending", 0)
        (delivered,) = await _drain(_loop(db), db)
    assert delivered.state == "delivered" and delivered.attempts == 1
    (got,) = receiver.received
    assert got.signature_valid
    assert got.delivery_id == str(delivered.delivery_id) == got.body["delivery_id"]
    assert got.event == "digest.ready"
    assert got.body["digest"]["id"] == delivered.digest_id
    assert got.body["markdown"].startswith("# ops")
    assert got.body["link"] is None  # no DIGESTD_PUBLIC_URL: no link
    async with db.acquire() as connection:
        # Sent, its content is not kept; delivered rows go after the retention period.
        assert await connection.fetchval("SELECT content IS NULL FROM deliveries")
        assert await delivery_queries.prune_deliveries(connection, 30, 100) == 0
        await connection.execute("UPDATE deliveries SET delivered_at = now() - interval '31 days'")
        assert await delivery_queries.prune_deliveries(connection, 30, 100) == 1


async def test_a_receiver_down_then_back_gets_every_digest_in_order(
    db: asyncpg.Pool, settings: Settings
) -> None:
    port = free_port()  # nothing listens yet: connection refused
    await _destination(db, port)
    for name in ("alpha", "beta", "gamma"):
        await _scheduled_channel(db, name, "hook")
    await _fire_and_run(db, settings)
    loop = _loop(db)
    for _ in range(2):
        await loop.deliver_due()
        await _wait_due(db)
    rows = await _deliveries(db)
    assert [r.attempts for r in rows] == [2, 0, 0], "a newer digest waited behind the oldest"
    assert rows[0].last_error and "network error" in rows[0].last_error
    receiver = Receiver(SECRET, answers=[Answer(503)])  # back, but failing once more
    async with serving(receiver, port):
        rows = await _drain(loop, db)
    assert [r.state for r in rows] == ["delivered"] * 3
    assert [r.attempts for r in rows] == [4, 1, 1]
    arrived = [r.body["digest"]["id"] for r in receiver.received]
    assert arrived == [rows[0].digest_id, rows[0].digest_id, rows[1].digest_id, rows[2].digest_id]
    assert all(r.signature_valid for r in receiver.received)


async def _wait_due(pool: asyncpg.Pool) -> None:
    async def due() -> bool:
        async with pool.acquire() as connection:
            waiting: bool = await connection.fetchval(
                "SELECT bool_and(next_attempt_at <= now()) FROM deliveries WHERE state = 'pending'"
            )
        return waiting is not False

    await wait_for(due, 5, "the retry to come due")


async def test_a_429_retry_after_is_honoured(db: asyncpg.Pool, settings: Settings) -> None:
    receiver = Receiver(SECRET, answers=[Answer(429, retry_after="2")])
    async with _a_digest_queued_for(db, settings, receiver):
        (row,) = await _drain(_loop(db), db)
    assert row.state == "delivered" and row.attempts == 2
    first, second = receiver.received
    assert first.delivery_id == second.delivery_id
    assert second.at - first.at >= 1.9  # the backoff alone would have been 0.4 s at most


async def test_a_refusal_is_dead_at_once_and_no_secret_reaches_the_logs(
    db: asyncpg.Pool, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    receiver = Receiver(SECRET, answers=[Answer(404)])
    caplog.set_level(logging.DEBUG)
    dead_attempts = {"kind": "webhook", "outcome": "dead"}
    attempts_before = REGISTRY.get_sample_value("digestd_delivery_attempts_total", dead_attempts)
    async with _a_digest_queued_for(db, settings, receiver):
        (row,) = await _drain(_loop(db), db)
    assert (row.state, row.attempts, row.last_error) == ("dead", 1, "HTTP 404")
    assert len(receiver.received) == 1
    assert SECRET not in caplog.text
    assert URL_TOKEN not in caplog.text
    assert f"delivery {row.delivery_id} (digest.ready) dead: HTTP 404" in caplog.text
    # /metrics: the attempt counted by this process, the dead letter counted by Postgres.
    attempts_after = REGISTRY.get_sample_value("digestd_delivery_attempts_total", dead_attempts)
    assert attempts_after == (attempts_before or 0) + 1
    async with db.acquire() as connection:
        DELIVERIES.counts = await delivery_state_counts(connection)
    assert REGISTRY.get_sample_value("digestd_deliveries_dead", {"kind": "webhook"}) == 1
    assert (
        REGISTRY.get_sample_value("digestd_deliveries", {"kind": "webhook", "state": "dead"}) == 1
    )


async def test_retries_end_dead_at_the_attempt_cap(db: asyncpg.Pool, settings: Settings) -> None:
    receiver = Receiver(SECRET, answers=[Answer(500)] * 10)
    async with _a_digest_queued_for(db, settings, receiver):
        (row,) = await _drain(_loop(db), db)
    assert (row.state, row.attempts) == ("dead", 4)
    assert row.last_error == "HTTP 500 (after 4 attempts)"
    assert len(receiver.received) == 4 and len(receiver.distinct_ids()) == 1


async def test_a_kind_without_a_sender_is_dead_with_the_reason(
    db: asyncpg.Pool, settings: Settings
) -> None:
    spec = DestinationSpec("team", "slack", {}, {"url": "https://hooks.slack.test/T0/B0/x"})
    async with db.acquire() as connection:
        await create_destination(connection, spec)
    await _scheduled_channel(db, "ops", "team")
    await _fire_and_run(db, settings)
    (row,) = await _drain(_loop(db, {}), db)
    assert (row.state, row.last_error) == ("dead", NO_SENDER)


async def test_job_events_reach_the_destinations_subscribed_to_them(
    db: asyncpg.Pool, settings: Settings
) -> None:
    receiver = Receiver(SECRET)
    async with serving(receiver) as port:
        await _destination(db, port, "automation", events=("job.succeeded", "job.failed"))
        await _destination(db, port, "unsubscribed")
        channel_id = await add_channel(db, "ops", messages([("ann", "Deploy at noon.")]))
        job_id = await trigger(db, channel_id)
        await run_queued_jobs(settings)
        (row,) = await _drain(_loop(db), db)
    assert (row.event, row.job_id, row.state) == ("job.succeeded", job_id, "delivered")
    (got,) = receiver.received
    assert got.body["job"]["id"] == job_id and got.body["job"]["status"] == "succeeded"


async def test_the_lease_of_a_dead_worker_runs_out_and_another_worker_delivers(
    db: asyncpg.Pool, settings: Settings
) -> None:
    """A claim whose worker vanished (no record of its attempt) is retaken after its lease."""
    receiver = Receiver(SECRET)
    async with _a_digest_queued_for(db, settings, receiver):
        async with db.acquire() as connection:
            (claimed,) = await delivery_queries.claim_deliveries(connection, "vanished", 10, 0.5)
            assert await delivery_queries.claim_deliveries(connection, "other", 10, 30) == []
        started = time.monotonic()
        (row,) = await _drain(_loop(db), db)
    assert time.monotonic() - started >= 0.3
    assert (row.state, row.attempts) == ("delivered", 2)
    assert receiver.distinct_ids() == [str(claimed.delivery_id)]


async def test_a_job_failed_by_its_last_lease_running_out_is_delivered_as_job_failed(
    db: asyncpg.Pool,
) -> None:
    """Every way a job ends failed queues job.failed: here its worker died on the last attempt."""
    channel_id = await add_channel(db, "ops", messages([("ann", "Deploy at noon.")]))
    await _destination(db, free_port(), "automation", events=("job.failed",))
    async with db.acquire() as connection:
        job, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=1
        )
        assert await jobs.claim_next_job(connection, "dies", 30) is not None
        await expire_lease(connection, job.id)
        assert await jobs.claim_next_job(connection, "survivor", 30) is None
        status = await connection.fetchval("SELECT status FROM digest_jobs WHERE id = $1", job.id)
    assert status == "failed"
    (row,) = await _deliveries(db)
    assert (row.event, row.job_id, row.state) == ("job.failed", job.id, "pending")


async def test_two_workers_draining_at_once_send_each_delivery_once_in_order(
    db: asyncpg.Pool, settings: Settings
) -> None:
    receiver = Receiver(SECRET)
    async with serving(receiver) as port:
        await _destination(db, port)
        for name in ("alpha", "beta", "gamma"):
            await _scheduled_channel(db, name, "hook")
        await _fire_and_run(db, settings)
        first, second = _loop(db, worker_id="first"), _loop(db, worker_id="second")
        for _ in range(6):
            await asyncio.gather(first.deliver_due(), second.deliver_due())
        rows = await _deliveries(db)
    assert [(r.state, r.attempts) for r in rows] == [("delivered", 1)] * 3
    assert [r.delivery_id for r in receiver.received] == [str(r.delivery_id) for r in rows]


async def test_a_queued_delivery_wakes_the_loop_long_before_its_next_poll(
    db: asyncpg.Pool, settings: Settings
) -> None:
    """The running loop LISTENs: a digest stored while it waits out a 60 s poll is sent at once
    (the test gives up after 20 s, so only the notification can have woken it)."""
    receiver = Receiver(SECRET)
    runtime = Runtime(
        settings.model_copy(
            update={"digestd_delivery_poll_seconds": 60.0, "digestd_delivery_allow_private": True}
        )
    )
    await runtime.open()
    stop = asyncio.Event()
    try:
        async with serving(receiver) as port, db.acquire() as connection:
            await _destination(db, port)
            await _scheduled_channel(db, "ops", "hook")
            listening_before = await sessions_listening(connection, DELIVERIES_CHANNEL)
            running = asyncio.create_task(runtime.new_delivery_loop().run(stop))

            async def listening() -> bool:
                now = await sessions_listening(connection, DELIVERIES_CHANNEL)
                return now > listening_before

            await wait_for(listening, 10, "the delivery loop to LISTEN")
            # Its first pass found nothing; its next poll is a minute away.
            await _fire_and_run(db, settings)

            async def delivered() -> bool:
                return [d.state for d in await _deliveries(db)] == ["delivered"]

            await wait_for(delivered, 20, "the delivery to be sent")
            stop.set()
            await asyncio.wait_for(running, 10)
    finally:
        stop.set()
        await runtime.close()
    (got,) = receiver.received
    assert got.event == "digest.ready" and got.signature_valid


async def test_a_delivery_links_to_its_digest_in_the_console_under_the_public_url(
    db: asyncpg.Pool, settings: Settings
) -> None:
    receiver = Receiver(SECRET)
    async with _a_digest_queued_for(db, settings, receiver):
        (row,) = await _drain(_loop(db, public_url="https://digestd.example/team"), db)
    (got,) = receiver.received
    assert row.digest_id is not None
    digest_id = quote(global_id(DIGEST, row.digest_id), safe="")
    assert got.body["link"] == f"https://digestd.example/team/#/digest/{digest_id}"
