"""jobProgress over WebSocket (graphql-transport-ws) against the real app, a real Postgres and
the `websockets` client: the states of a job a worker runs up to its terminal one and
`complete`, tokens at connection_init, origins at the handshake, the admission rules, one LISTEN
connection per process, and subscribers that reach the end when the database drops it."""

from __future__ import annotations

import asyncio
import json

import asyncpg
import httpx
import pytest
from pydantic import SecretStr
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.typing import Subprotocol

from server.app import AppOptions, create_app
from server.job_events import JobEventHub
from server.settings import Settings
from tests.support.servers import running_server
from tests.support.subscriptions import (
    PROGRESS,
    PROTOCOL,
    TERMINAL,
    closed_with,
    listener_pids,
    queued_job,
    receive,
    run_worker,
    socket,
    subscribe,
    until_complete,
    wait_for,
    ws_url,
)

TOKENS = SecretStr("reader:read-secret-1,writer:write-secret-1")


async def test_a_subscriber_follows_a_job_to_its_end(db: asyncpg.Pool, settings: Settings) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as client,
    ):
        job_id = await queued_job(db, client)
        async with socket(base_url, init={}) as ws:
            await subscribe(ws, "1", job_id)
            first = await receive(ws)
            assert (
                first["type"] == "next"
                and first["payload"]["data"]["jobProgress"]["status"] == "QUEUED"
            )
            await run_worker(settings)
            later = [p["data"]["jobProgress"] for p in await until_complete(ws, "1")]
        assert later, "no state after the first one"
        assert all("errors" not in p for p in later)
        assert [s["status"] for s in later][-1] == "SUCCEEDED"
        assert all(s["status"] not in TERMINAL for s in later[:-1])
        assert later[-1]["digestId"] is not None and later[-1]["phase"] == "STORE"
        # Polling answers the same as the last state.
        polled = await client.post(
            "/graphql",
            json={
                "query": "query($id: ID!) { job(id: $id) { status digestId } }",
                "variables": {"id": job_id},
            },
        )
        assert polled.json()["data"]["job"] == {
            "status": "SUCCEEDED",
            "digestId": later[-1]["digestId"],
        }


async def test_a_finished_job_yields_its_state_and_completes(
    db: asyncpg.Pool, settings: Settings
) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as client,
    ):
        job_id = await queued_job(db, client)
        cancel = "mutation($id: ID!) { cancelJob(id: $id) { ... on DigestJob { status } } }"
        await client.post("/graphql", json={"query": cancel, "variables": {"id": job_id}})
        async with socket(base_url, init={}) as ws:
            await subscribe(ws, "c", job_id)
            states = [p["data"]["jobProgress"]["status"] for p in await until_complete(ws, "c")]
        assert states == ["CANCELLED"]


async def test_cancelling_a_queued_job_ends_its_subscription(
    db: asyncpg.Pool, settings: Settings
) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as client,
    ):
        job_id = await queued_job(db, client)
        async with socket(base_url, init={}) as ws:
            await subscribe(ws, "c", job_id)
            assert (await receive(ws))["payload"]["data"]["jobProgress"]["status"] == "QUEUED"
            cancel = "mutation($id: ID!) { cancelJob(id: $id) { ... on DigestJob { status } } }"
            await client.post("/graphql", json={"query": cancel, "variables": {"id": job_id}})
            states = [
                p["data"]["jobProgress"]["status"] for p in await until_complete(ws, "c", timeout=5)
            ]
        assert states == ["CANCELLED"]  # heard at once, not at a fallback read


async def test_subscriptions_share_one_listen_connection(
    db: asyncpg.Pool, settings: Settings
) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as client,
    ):
        first_job, second_job = (
            await queued_job(db, client, "one"),
            await queued_job(db, client, "two"),
        )
        async with socket(base_url, init={}) as a, socket(base_url, init={}) as b:
            await subscribe(a, "1", first_job)
            await subscribe(a, "2", second_job)
            await subscribe(b, "1", first_job)
            for ws in (a, a, b):
                assert (await receive(ws))["type"] == "next"
            hub: JobEventHub = app.state.job_events
            await wait_for(lambda: _true(hub.listening))
            # Exactly one backend LISTENs (once those of servers stopped before it have exited).
            await wait_for(lambda: _listening_are(db, [hub.listener_pid]))
            assert hub.connections_opened == 1 and hub.watched_jobs == 2


async def _true(value: bool) -> bool:
    return value


async def _listening_are(pool: asyncpg.Pool, pids: list[int | None]) -> bool:
    return await listener_pids(pool) == pids


async def test_subscribers_reach_the_end_when_the_listener_is_dropped(
    db: asyncpg.Pool, settings: Settings
) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as client,
    ):
        job_id = await queued_job(db, client)
        async with socket(base_url, init={}) as ws:
            await subscribe(ws, "1", job_id)
            assert (await receive(ws))["payload"]["data"]["jobProgress"]["status"] == "QUEUED"
            hub: JobEventHub = app.state.job_events
            await wait_for(lambda: _true(hub.listening))
            pid = hub.listener_pid
            assert pid in await listener_pids(db)
            async with db.acquire() as connection:
                assert await connection.fetchval("SELECT pg_terminate_backend($1)", pid)
            # Lost, then reopened (the watches re-read when it is back: nothing in between is lost).
            await wait_for(lambda: _true(hub.connections_opened == 2 and hub.listening))
            await run_worker(settings)
            states = [p["data"]["jobProgress"]["status"] for p in await until_complete(ws, "1")]
        assert states[-1] == "SUCCEEDED"
        assert hub.listener_pid not in (None, pid)
        await wait_for(lambda: _listening_are(db, [hub.listener_pid]))


async def test_errors_of_a_subscription_carry_codes(db: asyncpg.Pool, settings: Settings) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    async with running_server(app) as base_url, socket(base_url, init={}) as ws:
        for op_id, job_id, code in (
            ("unknown", "424242", "NOT_FOUND"),
            ("malformed", "01", "BAD_ID"),
        ):
            await subscribe(ws, op_id, job_id)
            answer = await receive(ws)
            assert answer["type"] == "next" and answer["payload"]["data"] is None, answer
            (error,) = answer["payload"]["errors"]
            assert error["extensions"]["code"] == code and job_id in error["message"]
            assert await receive(ws) == {"id": op_id, "type": "complete"}
        await subscribe(ws, "query", "1", query="query($id: ID!) { job(id: $id) { id } }")
        refused = await receive(ws)
        assert (
            refused["type"] == "error"
            and refused["payload"][0]["extensions"]["code"] == "BAD_REQUEST"
        )
        assert "send queries and mutations over HTTP" in refused["payload"][0]["message"]
        await subscribe(
            ws, "typo", "1", query="subscription($id: ID!) { jobProgress(id: $id) { nope } }"
        )
        invalid = await receive(ws)
        assert (
            invalid["type"] == "error"
            and invalid["payload"][0]["extensions"]["code"] == "VALIDATION"
        )
        await ws.send(
            json.dumps(
                {
                    "id": "x",
                    "type": "subscribe",
                    "payload": {
                        "query": 'subscription { jobProgress(id: "1") { id } }',
                        "variables": [1],
                    },
                }
            )
        )
        shape = await receive(ws)
        assert (
            shape["type"] == "error" and shape["payload"][0]["extensions"]["code"] == "BAD_REQUEST"
        )
        # The connection still serves after every refusal.
        await ws.send(json.dumps({"type": "ping"}))
        assert await receive(ws) == {"type": "pong"}


async def test_a_subscription_over_http_is_still_refused(
    db: asyncpg.Pool, settings: Settings
) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    async with running_server(app) as base_url, httpx.AsyncClient(base_url=base_url) as client:
        response = await client.post("/graphql", json={"query": PROGRESS, "variables": {"id": "1"}})
        error = response.json()["errors"][0]
        assert error["extensions"]["code"] == "VALIDATION" and "WebSocket" in error["message"]


async def test_bounds_of_a_connection(db: asyncpg.Pool, settings: Settings) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as client,
    ):
        job_id = await queued_job(db, client)
        async with socket(base_url, init={}) as ws:
            for number in range(20):
                await subscribe(ws, str(number), job_id)
                assert (await receive(ws))["type"] == "next"
            await subscribe(ws, "one-too-many", job_id)
            refused = await receive(ws)
            assert refused["type"] == "error" and "at most 20" in refused["payload"][0]["message"]
            assert refused["payload"][0]["extensions"]["code"] == "TOO_MANY_SUBSCRIPTIONS"
        async with socket(base_url, init={}) as ws:
            await ws.send(
                json.dumps({"id": "big", "type": "subscribe", "payload": {"query": "#" * 200_000}})
            )
            assert await closed_with(ws) == 1009
        async with socket(base_url, init={}) as ws:
            await ws.send('{"type": "ping", "payload": {"n": ' + "9" * 100 + "}}")
            assert await closed_with(ws) == 4400  # not strict, bounded JSON


@pytest.fixture
def secured(settings: Settings) -> Settings:
    return settings.model_copy(update={"digestd_api_tokens": TOKENS})


async def test_tokens_guard_the_connection(db: asyncpg.Pool, secured: Settings) -> None:
    app = create_app(secured, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as client,
    ):
        job_id = await queued_job(db, client)
        for init in ({}, {"Authorization": "Bearer wrong-secret"}, {"Authorization": 7}):
            async with socket(base_url) as ws:
                await ws.send(json.dumps({"type": "connection_init", "payload": init}))
                assert await closed_with(ws) == 4403
        async with socket(base_url) as ws:  # subscribing before connection_init
            await subscribe(ws, "1", job_id)
            assert await closed_with(ws) == 4401
        # A reader may subscribe, with its token in the payload (browsers) or in the header.
        async with socket(base_url, init={"Authorization": "Bearer read-secret-1"}) as ws:
            await subscribe(ws, "1", job_id)
            assert (await receive(ws))["payload"]["data"]["jobProgress"]["status"] == "QUEUED"
        async with socket(
            base_url, init={}, headers={"Authorization": "Bearer read-secret-1"}
        ) as ws:
            await subscribe(ws, "1", job_id)
            assert (await receive(ws))["payload"]["data"]["jobProgress"]["id"] == job_id


async def test_origins_at_the_handshake(db: asyncpg.Pool, settings: Settings) -> None:
    listed = settings.model_copy(update={"digestd_cors_origins": "https://dash.example"})
    app = create_app(listed, AppOptions(run_workers=0))
    async with running_server(app) as base_url:
        with pytest.raises(InvalidStatus) as refused:
            async with socket(base_url, origin="https://evil.example"):
                pass
        assert refused.value.response.status_code == 403
        for origin in ("https://dash.example", base_url, None):
            async with socket(base_url, init={}, origin=origin) as ws:
                await ws.send(json.dumps({"type": "ping"}))
                assert await receive(ws) == {"type": "pong"}


async def test_the_server_stops_with_subscriptions_open(
    db: asyncpg.Pool, settings: Settings
) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    started = asyncio.get_running_loop().time()
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as client,
    ):
        job_id = await queued_job(db, client)
        ws = await connect(ws_url(base_url), subprotocols=[PROTOCOL])
        await ws.send(json.dumps({"type": "connection_init"}))
        assert (await receive(ws))["type"] == "connection_ack"
        await subscribe(ws, "1", job_id)
        assert (await receive(ws))["type"] == "next"
    # The server went away under the open subscription: the client is told, the hub is closed.
    assert await closed_with(ws) in (1001, 1012)
    assert asyncio.get_running_loop().time() - started < 20
    await wait_for(lambda: _listening_are(db, []))


async def test_a_client_of_another_protocol_is_told_which_one_to_use(
    db: asyncpg.Pool, settings: Settings
) -> None:
    """The legacy protocol (subscriptions-transport-ws, subprotocol "graphql-ws") is not served.
    Its client is told so: the handshake echoes the subprotocol it offered (a browser fails a
    handshake that answers none, and its page sees only 1006), then the connection is closed with
    4406 and a reason naming graphql-transport-ws. A client offering none is told the same."""
    app = create_app(settings, AppOptions(run_workers=0))
    async with running_server(app) as base_url:
        legacy, other = Subprotocol("graphql-ws"), Subprotocol("subscriptions-transport-ws")
        for offered in ([legacy], [other, legacy], None):
            async with connect(ws_url(base_url), subprotocols=offered) as ws:
                assert ws.subprotocol == (offered[0] if offered else None), offered
                with pytest.raises(ConnectionClosed) as closed:  # at once, or at the init
                    await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
                    await receive(ws, 15)
            received = closed.value.rcvd
            assert received is not None and received.code == 4406, offered
            assert "graphql-transport-ws" in received.reason, received.reason
        # Offered beside the legacy one, graphql-transport-ws is chosen.
        async with connect(ws_url(base_url), subprotocols=[legacy, PROTOCOL]) as ws:
            assert ws.subprotocol == PROTOCOL
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert await receive(ws) == {"type": "connection_ack"}
