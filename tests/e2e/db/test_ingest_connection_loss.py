"""A Postgres backend SIGKILLed while it receives the COPY of a batch of large (~4 KB) messages:
`digestd import` must end with its one-line error and exit 1, and `ingestMessages` must answer
with a typed error, both within a bound, instead of waiting for ever on the dead socket. What
was committed before stays, and the same import or call run again stores everything.

With rows this large the client's socket buffer fills and asyncio pauses writing; when the
connection is then lost, asyncpg never resumes it, and its COPY waited for ever (6 of 7 kills).
These tests crash a server of their own (an embedded one in a temporary home), never the
session's."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

import db.ingest
from db.engine import create_pool
from db.ingest import BATCH_SIZE, ChannelKey, MessageIngestor
from runner.grounding.normalize import normalize_text
from tests.support.database import Msg, own_embedded_server
from tests.support.processes import (
    cli_environment,
    start_cli,
    wait_database_back,
    wait_exit,
)
from tests.support.servers import free_port

TABLES = "servers, channels, messages, message_revisions"
# Far above what the process needs to notice the loss and stop (a few seconds), far below
# "for ever"; a hang fails here instead of blocking the suite.
ANSWER_WITHIN_SECONDS = 60.0
MESSAGE_CHARS = 4000
# Three batches of 5,000 (db.ingest.BATCH_SIZE): about 120 MB of COPY data in all, so a COPY
# is in flight long enough to be found and killed.
FILE_MESSAGES = 15_000
# One batch through the API, under its 32 MiB body cap.
API_MESSAGES = 5_000


@pytest.fixture(scope="module")
def crash_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An embedded server of this module's own, which its tests may crash."""
    with own_embedded_server(tmp_path_factory.mktemp("copy-crash-home")) as url:
        yield url


@pytest.fixture
async def empty_server(crash_server: str) -> str:
    await wait_database_back(crash_server)
    connection = await asyncpg.connect(crash_server)
    try:
        await connection.execute(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE")
    finally:
        await connection.close()
    return crash_server


def large_message(number: int) -> dict[str, Any]:
    body = f"message {number} " + "lorem ipsum dolor sit amet " * (MESSAGE_CHARS // 27)
    return {
        "id": str(number),
        "author": "ann",
        "text": body[:MESSAGE_CHARS],
        "ts": 1_600_000_000 + number,
    }


async def kill_the_copy(
    url: str,
    deadline: float,
    still_running: Any,
    *,
    once_stored: int = 0,
    signum: signal.Signals = signal.SIGKILL,
) -> int:
    """SIGKILL (or `signum`) the backend receiving a batch's COPY (into the staging table, or
    straight into `messages` on a channel's first import) as soon as one is at work and at least `once_stored` messages are committed; returns its pid. After a
    SIGKILL the postmaster restarts every backend (a crash)."""
    loop = asyncio.get_running_loop()
    admin = await asyncpg.connect(url)
    try:
        while still_running():
            assert loop.time() < deadline, "no COPY to kill"
            pid = await admin.fetchval(
                """SELECT pid FROM pg_stat_activity
                   WHERE pid <> pg_backend_pid() AND state = 'active'
                     AND query ILIKE 'COPY %messag%'
                     AND (SELECT count(*) FROM messages) >= $1 LIMIT 1""",
                once_stored,
            )
            if pid:
                os.kill(int(pid), signum)
                return int(pid)
            await asyncio.sleep(0.005)
    finally:
        admin.terminate()
    raise AssertionError("the work ended before a COPY could be killed")


async def stored(url: str) -> tuple[int, int]:
    """(messages stored, how many of them hold their full text)."""
    await wait_database_back(url)
    connection = await asyncpg.connect(url)
    try:
        row = await connection.fetchrow(
            "SELECT count(*) AS total, count(*) FILTER (WHERE length(raw_text) = $1) AS whole "
            "FROM messages",
            MESSAGE_CHARS,
        )
        assert row is not None
        return int(row["total"]), int(row["whole"])
    finally:
        await connection.close()


async def test_an_import_whose_copy_loses_its_backend_exits_1_in_bounded_time(
    empty_server: str, tmp_path: Path
) -> None:
    path = tmp_path / "large.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for number in range(FILE_MESSAGES):
            out.write(json.dumps(large_message(number)) + "\n")
    environment = cli_environment(DATABASE_URL=empty_server, DIGESTD_HOME=str(tmp_path / "home"))
    log = tmp_path / "import.log"
    process = start_cli(["import", str(path), "--channel", "large"], environment, log)
    try:
        deadline = asyncio.get_running_loop().time() + 120
        # The second batch's COPY: the first one is committed and must stay.
        await kill_the_copy(
            empty_server, deadline, lambda: process.poll() is None, once_stored=BATCH_SIZE
        )
        assert await wait_exit(process, ANSWER_WITHIN_SECONDS) == 1, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = log.read_text()
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("digestd: error: ")]
    assert len(errors) == 1, stderr
    assert errors[0].startswith("digestd: error: database connection lost after "), errors[0]
    said_stored = int(errors[0].split(" after ")[1].split(" messages")[0].replace(",", ""))
    assert said_stored >= BATCH_SIZE
    total, whole = await stored(empty_server)
    assert total == whole >= said_stored  # every batch it counted is there, whole
    assert total < FILE_MESSAGES  # the killed batch was not committed

    rerun = start_cli(["import", str(path), "--channel", "large"], environment, log)
    assert await wait_exit(rerun, 180) == 0, log.read_text()
    assert await stored(empty_server) == (FILE_MESSAGES, FILE_MESSAGES)


INGEST = """mutation ($messages: [MessageInput!]!) {
  ingestMessages(channel: {name: "large"}, messages: $messages) {
    __typename ... on IngestResult { accepted inserted } ... on InvalidInputError { message }
  }
}"""


@pytest.fixture
async def live_server(empty_server: str, tmp_path: Path) -> AsyncIterator[str]:
    """`digestd serve` as a process of its own on the crash server; yields its base URL."""
    port = free_port()
    log = tmp_path / "serve.log"
    environment = cli_environment(DATABASE_URL=empty_server, DIGESTD_HOME=str(tmp_path / "home"))
    process = start_cli(["serve", "--port", str(port), "--no-runner"], environment, log)
    base = f"http://127.0.0.1:{port}"
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 90
        async with httpx.AsyncClient(base_url=base, timeout=5) as client:
            while True:
                assert process.poll() is None, log.read_text()
                assert loop.time() < deadline, "serve did not become ready"
                try:
                    if (await client.get("/readyz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
        yield base
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            await wait_exit(process, 60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


async def test_ingest_messages_whose_copy_loses_its_backend_answers_unavailable(
    empty_server: str, live_server: str
) -> None:
    messages = [large_message(number) for number in range(API_MESSAGES)]
    for message in messages:
        message["ts"] = "2020-09-13T12:26:40Z"
    body = {"query": INGEST, "variables": {"messages": messages}}
    loop = asyncio.get_running_loop()
    async with httpx.AsyncClient(
        base_url=live_server, timeout=ANSWER_WITHIN_SECONDS + 60
    ) as client:
        request = asyncio.create_task(client.post("/graphql", json=body))
        try:
            await kill_the_copy(empty_server, loop.time() + 120, lambda: not request.done())
            killed_at = loop.time()
            done, _ = await asyncio.wait({request}, timeout=ANSWER_WITHIN_SECONDS)
        finally:
            if not request.done():
                request.cancel()
        assert request in done, f"ingestMessages did not answer within {ANSWER_WITHIN_SECONDS}s"
        response = request.result()
        assert loop.time() - killed_at < ANSWER_WITHIN_SECONDS
        assert response.status_code == 200, response.text
        errors = response.json()["errors"]
        assert [error["extensions"]["code"] for error in errors] == ["UNAVAILABLE"], errors
        assert "Internal" not in errors[0]["message"]
        assert await stored(empty_server) == (0, 0)  # one batch: all or nothing

        # The same call again, once the database is back, stores everything.
        again = await client.post("/graphql", json=body)
        result = again.json()["data"]["ingestMessages"]
        assert result == {
            "__typename": "IngestResult",
            "accepted": API_MESSAGES,
            "inserted": API_MESSAGES,
        }, again.text
    assert await stored(empty_server) == (API_MESSAGES, API_MESSAGES)


async def test_a_copy_whose_backend_stops_answering_ends_at_its_bound(
    empty_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend that stops reading (SIGSTOP, as a blackholed network looks) is never reported
    lost: the COPY's own bound ends the write and closes the connection. The bound is made
    short here; its real size only matters to a healthy server."""
    monkeypatch.setattr(db.ingest, "_COPY_BASE_SECONDS", 2.0)
    monkeypatch.setattr(db.ingest, "_COPY_SECONDS_PER_MB", 0.0)
    pool = await create_pool(empty_server, max_size=2)
    ingestor = MessageIngestor(pool, normalize_text)
    key = ChannelKey(server=None, channel="stalled")
    messages = [
        Msg(str(number), "ann", datetime(2020, 9, 13, tzinfo=UTC), large_message(number)["text"])
        for number in range(BATCH_SIZE)
    ]

    async def write() -> None:
        await ingestor.add_many(key, messages)
        await ingestor.flush()

    loop = asyncio.get_running_loop()
    writing = asyncio.create_task(write())
    stopped = 0
    try:
        stopped = await kill_the_copy(
            empty_server, loop.time() + 120, lambda: not writing.done(), signum=signal.SIGSTOP
        )
        done, _ = await asyncio.wait({writing}, timeout=ANSWER_WITHIN_SECONDS)
        assert writing in done, f"the stalled COPY did not end within {ANSWER_WITHIN_SECONDS}s"
        with pytest.raises(asyncpg.ConnectionDoesNotExistError):
            writing.result()
    finally:
        if stopped:
            os.kill(stopped, signal.SIGCONT)
        writing.cancel()
        try:
            async with asyncio.timeout(10):
                await pool.close()
        except TimeoutError:
            pool.terminate()
    assert await stored(empty_server) == (0, 0)
