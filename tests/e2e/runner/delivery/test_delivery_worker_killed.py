"""A worker process killed with SIGKILL in the middle of a delivery: once its lease runs out,
another worker process delivers it, with the same delivery id, and the delivery is recorded
delivered once. The receiver may see the id twice (the first POST arrived before the kill):
that is the guarantee, at least once with an id, by which receivers drop a repeat."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path

import asyncpg

from runner.delivery.store import DestinationSpec, create_destination
from runner.schedules import store as schedules
from runner.schedules.tick import fire_due_schedules
from server.runtime import Runtime
from server.settings import Settings
from tests.support.database import add_channel, messages
from tests.support.processes import cli_environment, start_cli, wait_exit
from tests.support.receiver import Answer, Receiver, serving
from tests.support.worker import wait_for

SECRET = "whsec-crash-test-0123456789"
LEASE_SECONDS = 3.0


async def _queue_one_delivery(pool: asyncpg.Pool, settings: Settings, port: int) -> None:
    """A schedule's digest stored, and its delivery to the receiver queued with it."""
    url = f"http://127.0.0.1:{port}/hooks/crash"
    spec = DestinationSpec("hook", "webhook", {}, {"url": url, "signing_secret": SECRET})
    channel_id = await add_channel(pool, "ops", messages([("ann", "The deploy runs at nine.")]))
    async with pool.acquire() as connection:
        await create_destination(connection, spec)
        await schedules.create_schedule(
            connection, channel_id, "0 9 * * *", "UTC", deliver_to_names=["hook"]
        )
        await connection.execute("UPDATE schedules SET next_run_at = now() - interval '1 s'")
        assert len(await fire_due_schedules(connection, max_attempts=3)) == 1
    runtime = Runtime(settings)
    await runtime.open()
    try:
        assert await runtime.new_worker().run_once()
    finally:
        await runtime.close()


def _worker(database_url: str, home: Path, log: Path) -> subprocess.Popen[bytes]:
    environment = cli_environment(
        DATABASE_URL=database_url,
        DIGESTD_HOME=str(home),
        DIGEST_EXTRACTOR="offline",
        DIGESTD_POLL_SECONDS="0.2",
        DIGESTD_DELIVERY_POLL_SECONDS="0.2",
        DIGESTD_DELIVERY_LEASE_SECONDS=str(LEASE_SECONDS),
        DIGESTD_DELIVERY_TIMEOUT_SECONDS="30",
        DIGESTD_DELIVERY_ALLOW_PRIVATE="true",
    )
    return start_cli(["worker"], environment, log)


async def _delivery(pool: asyncpg.Pool) -> asyncpg.Record:
    async with pool.acquire() as connection:
        row: asyncpg.Record = await connection.fetchrow(
            "SELECT delivery_id, state, attempts, leased_by FROM deliveries"
        )
    return row


async def test_a_delivery_cut_by_a_killed_worker_is_completed_by_another_once(
    db: asyncpg.Pool, settings: Settings, database_url: str, tmp_path: Path
) -> None:
    # The first POST is answered only after the worker is dead; the second at once.
    receiver = Receiver(SECRET, answers=[Answer(200, delay_seconds=4)])
    log = tmp_path / "workers.log"
    async with serving(receiver) as port:
        await _queue_one_delivery(db, settings, port)
        first = _worker(database_url, tmp_path / "home", log)
        try:
            await asyncio.wait_for(receiver.arrived.wait(), 60)
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait()
        killed_at = time.monotonic()
        cut = await _delivery(db)
        assert (cut["state"], cut["attempts"]) == ("delivering", 1), log.read_text()
        second = _worker(database_url, tmp_path / "home", log)
        try:

            async def delivered() -> bool:
                return bool((await _delivery(db))["state"] == "delivered")

            await wait_for(delivered, 60, "another worker to deliver")
        finally:
            second.send_signal(signal.SIGTERM)
            assert await wait_exit(second, 30) == 0, log.read_text()[-3000:]
    done = await _delivery(db)
    assert done["attempts"] == 2
    assert done["leased_by"] is None
    # Retaken only once the dead worker's lease ran out, not while it might still be sending.
    assert receiver.received[1].at - killed_at >= LEASE_SECONDS - 1.0
    assert len(receiver.received) == 2
    assert receiver.distinct_ids() == [str(done["delivery_id"])]
    assert all(r.signature_valid for r in receiver.received)
    assert "hooks/crash" not in log.read_text()
