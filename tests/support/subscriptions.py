"""WebSocket subscriptions for tests: graphql-transport-ws connections with the `websockets`
client, their messages, a queued job to follow and a worker of another runtime to run it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Origin, Subprotocol

from db import jobs
from db.models import DigestJob
from server.runtime import Runtime
from server.settings import Settings
from tests.support.database import add_channel, messages

PROTOCOL = Subprotocol("graphql-transport-ws")
PROGRESS = """subscription($id: ID!) {
  jobProgress(id: $id) { id status phase progress { chunksDone chunksTotal } digestId }
}"""
TERMINAL = {"SUCCEEDED", "PARTIAL", "FAILED", "CANCELLED"}
LISTENERS = "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN \"digestd_job_events\"'"


def ws_url(base_url: str) -> str:
    return base_url.replace("http://", "ws://") + "/graphql"


@asynccontextmanager
async def socket(
    base_url: str,
    *,
    init: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    origin: str | None = None,
    source: str | None = None,
) -> AsyncIterator[ClientConnection]:
    """A graphql-transport-ws connection, acknowledged (init None: no connection_init sent),
    from the loopback address `source` if given (127.0.0.2: another client to the server)."""
    extra: dict[str, Any] = {"local_addr": (source, 0)} if source else {}
    async with connect(
        ws_url(base_url),
        subprotocols=[PROTOCOL],
        additional_headers=headers or {},
        origin=Origin(origin) if origin is not None else None,
        open_timeout=10,
        **extra,
    ) as ws:
        assert ws.subprotocol == PROTOCOL
        if init is not None:
            await ws.send(json.dumps({"type": "connection_init", "payload": init}))
            assert await receive(ws) == {"type": "connection_ack"}
        yield ws


async def receive(ws: ClientConnection, timeout: float = 30) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), timeout))
    return message


async def subscribe(ws: ClientConnection, op_id: str, job_id: str, query: str = PROGRESS) -> None:
    await ws.send(
        json.dumps(
            {
                "id": op_id,
                "type": "subscribe",
                "payload": {"query": query, "variables": {"id": job_id}},
            }
        )
    )


async def until_complete(
    ws: ClientConnection, op_id: str, timeout: float = 60
) -> list[dict[str, Any]]:
    """The `next` payloads of one operation, up to its `complete` (which must come)."""
    payloads: list[dict[str, Any]] = []
    while True:
        message = await receive(ws, timeout)
        assert message.get("id") == op_id, message
        if message["type"] == "complete":
            return payloads
        assert message["type"] == "next", message
        payloads.append(message["payload"])


async def closed_with(ws: ClientConnection) -> int | None:
    with pytest.raises(ConnectionClosed) as closed:
        await receive(ws, 15)
    return closed.value.rcvd.code if closed.value.rcvd else None


async def queued_job(pool: asyncpg.Pool, client: httpx.AsyncClient, name: str = "general") -> str:
    channel_id = await add_channel(
        pool,
        name,
        messages([("ann", "we decided to ship on friday"), ("bob", "ok, I will write the notes")]),
    )
    trigger = (
        "mutation($id: ID!) { triggerDigest(channelId: $id) { ... on DigestJob { id status } } }"
    )
    response = await client.post(
        "/graphql",
        json={"query": trigger, "variables": {"id": str(channel_id)}},
        headers={"Authorization": "Bearer write-secret-1"},
    )
    job = response.json()["data"]["triggerDigest"]
    assert job["status"] == "QUEUED"
    return str(job["id"])


async def run_worker(settings: Settings) -> None:
    """One worker of another process's runtime takes the queued job and runs it to its end."""
    runtime = Runtime(settings)
    await runtime.open()
    try:
        assert await runtime.new_worker().run_once()
    finally:
        await runtime.close()


async def listener_pids(pool: asyncpg.Pool) -> list[int]:
    async with pool.acquire() as connection:
        return [row["pid"] for row in await connection.fetch(LISTENERS)]


async def wait_for(condition: Any, timeout: float = 30) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await condition():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.05)


class Reads:
    """Calls of db.jobs.job_by_id for one job (the one read every subscription path and the
    hub go through), counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, job_id: int) -> None:
        self.count = 0
        real: Callable[[asyncpg.Connection, int], Awaitable[DigestJob | None]] = jobs.job_by_id

        async def counted(connection: asyncpg.Connection, wanted: int) -> DigestJob | None:
            if wanted == job_id:
                self.count += 1
            return await real(connection, wanted)

        monkeypatch.setattr(jobs, "job_by_id", counted)
