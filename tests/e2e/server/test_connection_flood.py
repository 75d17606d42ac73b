"""A flood of idle WebSocket connections against a real `digestd serve` under a low descriptor
limit: more connections than the process may open files, none of them sending
`connection_init`. The connections over the caps are refused with close code 1013 and a reason,
a writer's query is answered while the flood still holds what it was given (before, it waited
until the idle ones were let go), and the log stays a few lines: no traceback per failed
accept, at most one line per 10 s when a burst of accepts meets the limit."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx

from tests.support.paths import REPO_ROOT
from tests.support.processes import cli_environment, wait_exit
from tests.support.servers import free_port

DESCRIPTORS = 256
FLOOD = 320  # more than the process may have open files
PROTOCOL = "graphql-transport-ws"
TRY_AGAIN_LATER = 1013
INIT_TIMEOUT = 4408  # graphql-transport-ws: no connection_init in time


def start_serve(
    port: int, database_url: str, descriptors: int, log: Path
) -> subprocess.Popen[bytes]:
    """`digestd serve` (no tokens, its in-process worker) in a child whose RLIMIT_NOFILE is
    `descriptors`: a small launcher sets the limit and execs the command, which keeps it."""
    launcher = (
        "import os, resource, sys; "
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({descriptors}, {descriptors})); "
        "os.execv(sys.executable, [sys.executable, '-m', 'server.cli', *sys.argv[1:]])"
    )
    with log.open("ab") as stderr:
        return subprocess.Popen(
            [sys.executable, "-c", launcher, "serve", "--port", str(port)],
            cwd=REPO_ROOT,
            env=cli_environment(DATABASE_URL=database_url),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


@asynccontextmanager
async def serve_with_descriptors(
    database_url: str, tmp_path: Path, limit: int
) -> AsyncIterator[tuple[int, Path]]:
    """`digestd serve` with RLIMIT_NOFILE at `limit`; yields its port and its log once
    /readyz answers."""
    port = free_port()
    log = tmp_path / "serve.log"
    process = start_serve(port, database_url, limit, log)
    try:
        deadline = asyncio.get_running_loop().time() + 90
        async with httpx.AsyncClient(timeout=5) as http:
            while True:
                assert process.poll() is None, log.read_text()[-5000:]
                assert asyncio.get_running_loop().time() < deadline, log.read_text()[-5000:]
                try:
                    if (await http.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
        yield port, log
    finally:
        process.terminate()
        await wait_exit(process, 60)


UPGRADE = (
    "GET /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    f"Sec-WebSocket-Protocol: {PROTOCOL}\r\n\r\n"
).encode()


@dataclass
class Idle:
    """One flood connection: the status of its upgrade, and how and when the server closed it."""

    connected: bool = False
    status: int | None = None
    close_code: int | None = None
    close_reason: str = ""
    closed_at: float | None = None


async def hold_idle(port: int, idle: Idle) -> None:
    """Connect, ask for the WebSocket upgrade, never send connection_init; record the upgrade's
    status and the server's close frame (code and reason) when it comes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    idle.connected = True  # the kernel completed the connection, whether or not it is accepted
    try:
        writer.write(UPGRADE)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        idle.status = int(head.split()[1])
        if idle.status == 101:
            opcode, length = await reader.readexactly(2)  # a server's frames are not masked
            payload = await reader.readexactly(length & 0x7F)
            if opcode & 0x0F == 0x8 and len(payload) >= 2:
                idle.close_code = int.from_bytes(payload[:2], "big")
                idle.close_reason = payload[2:].decode(errors="replace")
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        idle.closed_at = asyncio.get_running_loop().time()
        writer.close()


async def test_idle_websockets_over_the_descriptor_limit(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    async with serve_with_descriptors(database_url, tmp_path, DESCRIPTORS) as (port, log):
        loop = asyncio.get_running_loop()
        logged_before = log.stat().st_size
        idles = [Idle() for _ in range(FLOOD)]
        flood = [asyncio.create_task(hold_idle(port, idle)) for idle in idles]
        try:
            deadline = loop.time() + 60
            while not all(idle.connected for idle in idles):
                assert loop.time() < deadline, "the flood could not connect"
                await asyncio.sleep(0.05)
            # The writer's query, behind the whole flood.
            async with httpx.AsyncClient(timeout=60) as http:
                response = await http.post(
                    f"http://127.0.0.1:{port}/graphql",
                    json={"query": "{ channels(first: 5) { nodes { id } } }"},
                )
            answered_at = loop.time()
            assert response.status_code == 200 and "errors" not in response.json(), response.text
            # It was answered while the flood still held what it was given: no idle connection
            # had yet been let go for not sending connection_init.
            timed_out = [
                i
                for i in idles
                if i.close_code == INIT_TIMEOUT and i.closed_at and i.closed_at < answered_at
            ]
            assert not timed_out, (
                f"{len(timed_out)} idle connections were let go before the writer was answered"
            )
            # Every flood connection has its answer: held, or refused over the caps.
            deadline = loop.time() + 60
            while any(idle.status is None and idle.closed_at is None for idle in idles):
                assert loop.time() < deadline, "flood connections left unanswered"
                await asyncio.sleep(0.05)
            refused = [idle for idle in idles if idle.close_code == TRY_AGAIN_LATER]
            held = [
                idle for idle in idles if idle.status == 101 and idle.close_code != TRY_AGAIN_LATER
            ]
            assert refused and held, (len(refused), len(held))
            assert len(refused) + len(held) == FLOOD, [
                i for i in idles if i not in refused and i not in held
            ][:3]
            assert all("connections" in idle.close_reason for idle in refused), refused[0]
            assert len(held) < DESCRIPTORS // 2
            # The held ones are let go for want of connection_init, with the protocol's code.
            deadline = loop.time() + 60
            while any(idle.closed_at is None for idle in held):
                assert loop.time() < deadline, "held connections never let go"
                await asyncio.sleep(0.05)
            assert {idle.close_code for idle in held} == {INIT_TIMEOUT}
        finally:
            for task in flood:
                task.cancel()
            await asyncio.gather(*flood, return_exceptions=True)
        with log.open("rb") as written:
            written.seek(logged_before)
            text = written.read().decode(errors="replace")
        lines = text.splitlines()
        # No traceback per failed accept: asyncio accepts the waiting connections in bursts, and
        # one burst may still meet the descriptor limit; that is one line per 10 s, with a count.
        assert "Traceback" not in text, text[:3000]
        assert sum("out of system resource" in line for line in lines) <= 3, text[:3000]
        assert len(lines) < 40, lines[:40]
