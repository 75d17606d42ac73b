"""A thousand jobProgress subscriptions of one job, over real WebSockets to a live server and a
real Postgres: each change of the job is read from the database once for all of them (not once
per subscription), and every subscriber still gets every state, in order; and the caps on open
subscriptions per client address and per process."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import asyncpg
import httpx
import pytest
from websockets.asyncio.client import ClientConnection

from db import jobs
from schema.types.ids import decode_global_id
from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.servers import running_server
from tests.support.subscriptions import (
    Reads,
    queued_job,
    receive,
    socket,
    subscribe,
    wait_for,
)

CONNECTIONS = 50
PER_CONNECTION = 20  # the per-connection cap
STATE = """subscription($id: ID!) { jobProgress(id: $id) { status progress { chunksDone chunksTotal } } }"""


class Received:
    """The states each operation of each socket received, read as they come."""

    def __init__(self) -> None:
        self.states: dict[tuple[int, str], list[tuple[str, int | None]]] = {}
        self.completed: set[tuple[int, str]] = set()
        self.unexpected: list[dict[str, Any]] = []

    async def read(self, number: int, ws: ClientConnection) -> None:
        while True:
            message = await receive(ws, 120)
            key = (number, message.get("id", ""))
            if message["type"] == "complete":
                self.completed.add(key)
            elif message["type"] == "next" and "errors" not in message["payload"]:
                job = message["payload"]["data"]["jobProgress"]
                self.states.setdefault(key, []).append(
                    (job["status"], (job["progress"] or {}).get("chunksDone"))
                )
            else:
                self.unexpected.append(message)

    def all_have(self, count: int) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:
            assert not self.unexpected, self.unexpected[:3]
            return len(self.states) == CONNECTIONS * PER_CONNECTION and all(
                len(states) >= count for states in self.states.values()
            )

        return check


@pytest.fixture
def roomy(settings: Settings) -> Settings:
    """Caps high enough for the fifty connections and thousand subscriptions of one client
    this test opens."""
    return settings.model_copy(
        update={
            "digestd_max_subscriptions_per_client": 1000,
            "digestd_max_subscriptions": 1000,
            "digestd_max_websockets_per_client": 50,
        }
    )


async def test_a_thousand_subscriptions_cost_one_read_per_job_event(
    db: asyncpg.Pool, roomy: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = create_app(roomy, AppOptions(run_workers=0))
    received = Received()
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as client,
    ):
        job_id = await queued_job(db, client)
        row_id = decode_global_id(job_id)[1]
        async with AsyncExitStack() as stack:
            readers: list[asyncio.Task[None]] = []
            for number in range(CONNECTIONS):
                ws = await stack.enter_async_context(socket(base_url, init={}))
                for op in range(PER_CONNECTION):
                    await subscribe(ws, str(op), job_id, STATE)
                readers.append(asyncio.create_task(received.read(number, ws)))
            try:
                await wait_for(received.all_have(1), 120)
                reads = Reads(monkeypatch, row_id)
                # Five job events, each heard by all thousand before the next: a claim, three
                # progress steps and the end.
                expected: list[tuple[str, int | None]] = [("QUEUED", 0)]
                async with db.acquire() as connection:
                    claimed = await jobs.claim_next_job(connection, "w1", 60)
                    assert claimed is not None and claimed.id == row_id
                    expected.append(("RUNNING", 0))
                    await wait_for(received.all_have(len(expected)), 120)
                    for done in (1, 2, 3):
                        await jobs.update_progress(
                            connection, row_id, "w1", "map", done, 3, done / 3
                        )
                        expected.append(("RUNNING", done))
                        await wait_for(received.all_have(len(expected)), 120)
                    await jobs.finish_job(
                        connection,
                        row_id,
                        "w1",
                        status=jobs.JobStatus.SUCCEEDED,
                        message="done",
                        stats={},
                        warnings=[],
                    )
                    expected.append(("SUCCEEDED", 3))
                    await wait_for(received.all_have(len(expected)), 120)
                await wait_for(
                    lambda: _true(len(received.completed) == CONNECTIONS * PER_CONNECTION), 60
                )
            finally:
                for reader in readers:
                    reader.cancel()
                await asyncio.gather(*readers, return_exceptions=True)
    events = len(expected) - 1
    # One read per event (a spare for a read an event meets in flight), whatever the watchers.
    assert reads.count <= 2 * events, f"{reads.count} reads of the job for {events} events"
    assert all(states == expected for states in received.states.values()), next(
        states for states in received.states.values() if states != expected
    )


async def _true(value: bool) -> bool:
    return value


@pytest.fixture
def capped(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"digestd_max_subscriptions_per_client": 3, "digestd_max_subscriptions": 5}
    )


async def _refused(ws: ClientConnection, op_id: str, job_id: str) -> str:
    """The message of the TOO_MANY_SUBSCRIPTIONS error a subscribe gets."""
    await subscribe(ws, op_id, job_id, STATE)
    answer = await receive(ws)
    assert answer["type"] == "error" and answer["id"] == op_id, answer
    (error,) = answer["payload"]
    assert error["extensions"] == {"code": "TOO_MANY_SUBSCRIPTIONS"}, error
    return str(error["message"])


async def _admitted(ws: ClientConnection, op_id: str, job_id: str) -> None:
    await subscribe(ws, op_id, job_id, STATE)
    answer = await receive(ws)
    assert answer["type"] == "next" and answer["id"] == op_id, answer


async def test_open_subscriptions_are_capped_per_client_and_per_process(
    db: asyncpg.Pool, capped: Settings
) -> None:
    """One client may not hold more than its share however many connections it opens (50 x 20
    was the attack), nor all clients together more than the process's cap; a subscription that
    ends gives its place back."""
    app = create_app(capped, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as client,
    ):
        job_id = await queued_job(db, client)
        async with socket(base_url, init={}) as first, socket(base_url, init={}) as second:
            for op in ("1", "2", "3"):
                await _admitted(first, op, job_id)
            assert "per client address" in await _refused(first, "4", job_id)
            assert "per client address" in await _refused(second, "1", job_id)  # another connection
            async with socket(base_url, init={}, source="127.0.0.2") as other:  # another client
                await _admitted(other, "1", job_id)
                await _admitted(other, "2", job_id)
                assert "server holds" in await _refused(other, "3", job_id)
                # A completed subscription frees its place (for any client).
                await first.send(json.dumps({"id": "1", "type": "complete"}))
                await _eventually_admitted(other, job_id)
            # So does a closed connection: `other` held 3, and is gone.
            await _eventually_admitted(second, job_id)
            await second.send(json.dumps({"type": "ping"}))
            assert await receive(second) == {"type": "pong"}  # refusals never closed a connection


async def _eventually_admitted(ws: ClientConnection, job_id: str, timeout: float = 10) -> None:
    """Subscribe until admitted (the place is given back when the server has ended the other)."""
    deadline = asyncio.get_running_loop().time() + timeout
    for attempt in range(1000):
        await subscribe(ws, f"retry-{attempt}", job_id, STATE)
        answer = await receive(ws)
        if answer["type"] == "next":
            return
        assert answer["payload"][0]["extensions"]["code"] == "TOO_MANY_SUBSCRIPTIONS", answer
        assert asyncio.get_running_loop().time() < deadline, "the place was never given back"
        await asyncio.sleep(0.05)
