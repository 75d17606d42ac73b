"""`digestd serve` supervises its in-process runner: a worker loop that dies is restarted, and
`/readyz` answers 503 with reason `runner` while it is down, 200 once it runs again."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import asyncpg
import httpx
import pytest

from runner import supervision
from runner.worker import Worker
from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.database import add_channel
from tests.support.servers import running_server
from tests.support.worker import job_row, sample_messages, trigger, wait_for


async def test_a_dead_runner_loop_is_restarted_and_readyz_says_so(
    db: asyncpg.Pool, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_run = Worker.run
    real_wait_any = supervision.wait_any
    deaths = 0
    # The supervisor's wait before each restart, held until the test has read /readyz: the
    # loop is certainly down meanwhile, however slowly the machine runs.
    restarts: list[asyncio.Event] = []

    async def dies_twice(self: Worker, stop: asyncio.Event) -> None:
        # A loop killed by an error nobody foresaw (not a database error: those are retried
        # inside the loop). The supervisor must restart it.
        nonlocal deaths
        if deaths < 2:
            deaths += 1
            raise RuntimeError("a bug in the loop")
        await real_run(self, stop)

    async def restart_when_told(
        events: Iterable[asyncio.Event], timeout: float | None, *, task: Any = None
    ) -> None:
        told = asyncio.Event()
        restarts.append(told)
        await real_wait_any((*events, told), None, task=task)

    monkeypatch.setattr(Worker, "run", dies_twice)
    monkeypatch.setattr(supervision, "wait_any", restart_when_told)
    channel_id = await add_channel(db, "team-platform", sample_messages())
    app = create_app(settings, AppOptions(run_workers=1))
    async with running_server(app) as base_url, httpx.AsyncClient(base_url=base_url) as client:
        for death in (1, 2):

            async def down(death: int = death) -> bool:
                return len(restarts) >= death

            await wait_for(down, 10, f"the runner loop to die ({death})")
            ready = await client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json() == {"status": "not_ready", "reason": "runner"}
            restarts[-1].set()

        async def up() -> bool:
            return (await client.get("/readyz")).status_code == 200

        await wait_for(up, 30, "the runner to be restarted")
        assert (await client.get("/readyz")).json()["status"] == "ready"
        job_id = await trigger(db, channel_id)

        async def finished() -> bool:
            return (await job_row(db, job_id)).status == "succeeded"

        await wait_for(finished, 60, "the restarted runner to digest")
    assert deaths == 2 and len(restarts) == 2


async def test_starting_waits_while_the_server_recovers_and_fails_fast_otherwise() -> None:
    """A server in crash recovery refuses with 57P03 for a moment: a process starting then
    waits for it; any other error is reported on the first attempt."""
    from server.runtime import while_database_starts

    calls: list[int] = []

    async def recovering_twice() -> str:
        calls.append(1)
        if len(calls) <= 2:
            raise asyncpg.CannotConnectNowError("the database system is in recovery mode")
        return "connected"

    assert await while_database_starts(recovering_twice, wait_seconds=5) == "connected"
    assert len(calls) == 3

    async def still_recovering() -> str:
        raise asyncpg.CannotConnectNowError("the database system is in recovery mode")

    with pytest.raises(asyncpg.CannotConnectNowError):
        await while_database_starts(still_recovering, wait_seconds=0.3)

    refused: list[int] = []

    async def wrong_password() -> str:
        refused.append(1)
        raise asyncpg.InvalidPasswordError("password authentication failed")

    with pytest.raises(asyncpg.InvalidPasswordError):
        await while_database_starts(wrong_password, wait_seconds=5)
    assert len(refused) == 1
