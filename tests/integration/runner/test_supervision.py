"""`digestd serve` supervises its in-process runner: a worker loop that dies is restarted, and
`/readyz` answers 503 with reason `runner` while it is down, 200 once it runs again."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import httpx
import pytest

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
    deaths = 0

    async def dies_twice(self: Worker, stop: asyncio.Event) -> None:
        # A loop killed by an error nobody foresaw (not a database error: those are retried
        # inside the loop). The supervisor must restart it.
        nonlocal deaths
        if deaths < 2:
            deaths += 1
            await asyncio.sleep(0.3)
            raise RuntimeError("a bug in the loop")
        await real_run(self, stop)

    monkeypatch.setattr(Worker, "run", dies_twice)
    channel_id = await add_channel(db, "team-platform", sample_messages())
    app = create_app(settings, AppOptions(run_workers=1))
    seen: list[tuple[int, Any]] = []
    async with running_server(app) as base_url, httpx.AsyncClient(base_url=base_url) as client:

        async def readiness(status: int) -> bool:
            response = await client.get("/readyz")
            seen.append((response.status_code, response.json()))
            return response.status_code == status

        await wait_for(lambda: readiness(503), 10, "/readyz to report the dead runner")
        assert seen[-1][1] == {"status": "not_ready", "reason": "runner"}
        await wait_for(lambda: readiness(200), 30, "the runner to be restarted")
        assert seen[-1][1]["status"] == "ready"
        job_id = await trigger(db, channel_id)

        async def finished() -> bool:
            return (await job_row(db, job_id)).status == "succeeded"

        await wait_for(finished, 60, "the restarted runner to digest")
    assert deaths == 2


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
