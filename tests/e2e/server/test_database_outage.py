"""A database that goes silent or dies under a running `digestd serve` (real processes).

Frozen: every PostgreSQL process of the server's data directory is SIGSTOPped, which looks to a
client exactly like a blackholed network (connections open, nothing answers). /readyz must say
503 within seconds, a GraphQL query must answer `UNAVAILABLE` within a bound, and the log must
carry one warning line per request, no traceback.

Dead: the embedded postmaster is SIGKILLed. The serve process that finds it dead starts it again,
the job finishes with nothing lost, and when serve stops no postmaster is left behind.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
import pytest
from graphql import GraphQLError

from db.engine import embedded_database_url, stop_embedded_server
from db.outage import is_database_outage
from schema.errors import INTERNAL, UNAVAILABLE, code_of, formatted
from tests.support.api import gql, poll_job, sample_messages
from tests.support.processes import (
    cli_environment,
    postmaster_running,
    start_cli,
    wait_embedded,
    wait_exit,
)
from tests.support.servers import free_port
from tests.support.worker import wait_for

CHANNELS = "{ channels(first: 5) { nodes { id name messageCount } } }"
INGEST = """mutation($c: ChannelInput!, $m: [MessageInput!]!) {
  ingestMessages(channel: $c, messages: $m) {
    ... on IngestResult { inserted channel { id } } ... on InvalidInputError { message } } }"""
TRIGGER = """mutation($id: ID!) { triggerDigest(channelId: $id) {
  ... on DigestJob { id status } ... on NotFoundError { message } } }"""


@pytest.mark.parametrize(
    "error",
    [
        TimeoutError(),
        ConnectionRefusedError(111, "Connection refused"),
        FileNotFoundError(2, "No such file or directory"),
        asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
        asyncpg.CannotConnectNowError("the database system is starting up"),
        asyncpg.AdminShutdownError("terminating connection due to administrator command"),
        asyncpg.InterfaceError("cannot call Connection.fetch(): connection is closed"),
        RuntimeError("the job could not be saved"),  # raised from an outage, below
    ],
)
def test_a_database_outage_is_unavailable(error: Exception) -> None:
    if isinstance(error, RuntimeError):
        error.__cause__ = ConnectionResetError()
    assert is_database_outage(error)
    shown = formatted(GraphQLError("secret detail", original_error=error), "req-1")
    assert shown == {
        "message": "The database is unavailable; try again later",
        "extensions": {"code": UNAVAILABLE, "requestId": "req-1"},
    }


@pytest.mark.parametrize(
    "error",
    [
        ValueError("a bug"),
        asyncpg.UniqueViolationError("duplicate key"),
        asyncpg.InterfaceError("cannot perform operation: another operation is in progress"),
        PermissionError(13, "Permission denied"),
    ],
)
def test_other_failures_stay_server_faults(error: Exception) -> None:
    assert not is_database_outage(error)
    assert code_of(GraphQLError("secret detail", original_error=error)) == INTERNAL


def postgres_processes(home: Path) -> list[psutil.Process]:
    """The postmaster of `home`'s data directory (from postmaster.pid) and its children."""
    pid_file = home / "pgdata" / "postmaster.pid"
    postmaster = psutil.Process(int(pid_file.read_text().splitlines()[0]))
    return [postmaster, *postmaster.children(recursive=True)]


def kill_leftover_postgres(home: Path) -> None:
    """A failed test must not leave its server running."""
    pgdata = str((home / "pgdata").resolve())
    for process in psutil.process_iter(attrs=["name", "cmdline"]):
        if process.info["name"] == "postgres" and pgdata in (process.info["cmdline"] or []):
            process.kill()


def signal_all(processes: list[psutil.Process], number: signal.Signals) -> None:
    for process in processes:
        try:
            os.kill(process.pid, number)
        except ProcessLookupError:
            pass


async def start_serve(
    home: Path, log: Path, **settings: str
) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    environment = cli_environment(
        DIGESTD_HOME=str(home),
        DIGESTD_POLL_SECONDS="0.2",
        DIGESTD_SHUTDOWN_GRACE_SECONDS="3",
        **settings,
    )
    serve = start_cli(["serve", "--port", str(port)], environment, log)
    await wait_embedded(home, serve, log)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:

        async def ready() -> bool:
            assert serve.poll() is None, log.read_text()
            try:
                return (await client.get("/readyz")).status_code == 200
            except httpx.TransportError:
                return False

        await wait_for(ready, 60, "/readyz")
    return serve, port


async def stop_serve(serve: subprocess.Popen[bytes], log: Path) -> None:
    if serve.poll() is None:
        serve.send_signal(signal.SIGTERM)
    assert await wait_exit(serve, 60) == 0, log.read_text()


async def timed(request: Any) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = await request
    return response, time.monotonic() - started


async def test_a_frozen_database_answers_unavailable_within_bounds(tmp_path: Path) -> None:
    home, log = tmp_path / "home", tmp_path / "serve.log"
    # A short statement bound so the test waits seconds, not the default half minute.
    serve, port = await start_serve(home, log, DIGESTD_DB_COMMAND_TIMEOUT_SECONDS="3")
    frozen: list[psutil.Process] = []
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
            # Warm connections in the pool, as on a server that has been answering.
            await asyncio.gather(*(gql(client, CHANNELS) for _ in range(4)))
            frozen = postgres_processes(home)
            signal_all(frozen[:1], signal.SIGSTOP)  # the postmaster first: it forks no more
            frozen = postgres_processes(home)
            signal_all(frozen, signal.SIGSTOP)

            ready, ready_seconds = await timed(client.get("/readyz"))
            assert ready.status_code == 503, ready.text
            assert ready.json() == {"status": "not_ready", "reason": "database"}
            assert ready_seconds < 10, f"/readyz took {ready_seconds:.1f}s"

            answers = await asyncio.gather(
                *(timed(client.post("/graphql", json={"query": CHANNELS})) for _ in range(3))
            )
            for response, seconds in answers:
                assert response.status_code == 200, response.text
                errors = response.json()["errors"]
                assert [e["extensions"]["code"] for e in errors] == ["UNAVAILABLE"], errors
                assert errors[0]["message"] == "The database is unavailable; try again later"
                assert errors[0]["extensions"]["requestId"] == response.headers["x-request-id"]
                assert seconds < 30, f"the query took {seconds:.1f}s"

            signal_all(frozen, signal.SIGCONT)
            frozen = []

            async def ready_again() -> bool:
                return (await client.get("/readyz")).status_code == 200

            await wait_for(ready_again, 60, "/readyz after the database woke up")
            assert (await gql(client, CHANNELS))["channels"]["nodes"] == []
    finally:
        signal_all(frozen, signal.SIGCONT)
        await stop_serve(serve, log)
    text = log.read_text()
    assert "Traceback" not in text, text
    assert text.count("graphql.unavailable") >= 3, text
    assert "graphql.internal_error" not in text, text


async def test_serve_restarts_a_killed_embedded_postmaster_and_stops_it_on_exit(
    tmp_path: Path,
) -> None:
    home, log = tmp_path / "home", tmp_path / "serve.log"
    serve, port = await start_serve(home, log)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            messages = sample_messages()
            ingested = (await gql(client, INGEST, {"c": {"name": "ops"}, "m": messages}))[
                "ingestMessages"
            ]
            assert ingested["inserted"] == len(messages)

            postmaster = postgres_processes(home)[0]
            postmaster.kill()
            postmaster.wait(10)

            async def answering() -> bool:
                response = await client.post("/graphql", json={"query": CHANNELS})
                return "errors" not in response.json()

            await wait_for(answering, 60, "queries to work again after the postmaster died")
            channels = (await gql(client, CHANNELS))["channels"]["nodes"]
            assert [(c["name"], c["messageCount"]) for c in channels] == [("ops", len(messages))]

            job = (await gql(client, TRIGGER, {"id": ingested["channel"]["id"]}))["triggerDigest"]
            done = await poll_job(client, job["id"], timeout=90)
            assert done["status"] == "SUCCEEDED", done
            assert done["stats"]["messages"] == len(messages)
        await stop_serve(serve, log)
        assert not postmaster_running(home), "a postmaster was left running"
        assert not (home / "pgdata" / "postmaster.pid").exists()
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
        kill_leftover_postgres(home)


async def test_the_last_one_out_stops_the_postmaster_another_process_restarted(
    tmp_path: Path,
) -> None:
    """This process joins the embedded server, its postmaster dies, another digestd process
    (`digestd migrate`) starts it again and exits; this process, the last one out, must stop
    the postmaster running now, not look at the dead one it joined."""
    home, log = tmp_path / "home", tmp_path / "migrate.log"
    await asyncio.to_thread(embedded_database_url, home)
    try:
        processes = postgres_processes(home)
        processes[0].kill()
        _, alive = psutil.wait_procs(processes, timeout=30)  # its backends follow it
        assert not alive, alive
        migrate = start_cli(["migrate"], cli_environment(DIGESTD_HOME=str(home)), log)
        assert await wait_exit(migrate, 90) == 0, log.read_text()
        assert postmaster_running(home), (
            "migrate should leave the server to the process still using it"
        )
    finally:
        await asyncio.to_thread(stop_embedded_server, home)
    try:
        assert not postmaster_running(home), "a postmaster was left running"
    finally:
        kill_leftover_postgres(home)
