"""DNS rebinding against a digestd without tokens: a page whose name now resolves to 127.0.0.1
sends its own name as Host (and Origin). The server answers only its own names, over HTTP and
at the WebSocket upgrade, in-process and as a real `digestd serve`; a listed name is answered
too, and with tokens the list applies only when DIGESTD_ALLOWED_HOSTS is given."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from pydantic import SecretStr

from server.app import AppOptions, create_app
from server.hosts import HostPolicy, host_name_of
from server.settings import Settings
from tests.support.paths import REPO_ROOT
from tests.support.processes import cli_environment, start_cli, wait_exit
from tests.support.servers import free_port, running_server

ATTACKER = "rebind.attacker.example"
INGEST = """mutation($c: ChannelInput!, $m: [MessageInput!]!) { ingestMessages(channel: $c, messages: $m) {
  ... on IngestResult { accepted } } }"""
READ = "{ channels(first: 10) { nodes { id name } } }"
PLANTED = {
    "c": {"name": "planted"},
    "m": [{"id": "x1", "author": "page", "ts": "2025-03-10T11:30:00Z", "text": "hi"}],
}


def rebinding(port: int) -> dict[str, str]:
    """The headers of a request from a page at http://rebind.attacker.example:PORT whose name
    now resolves to the loopback address."""
    return {"host": f"{ATTACKER}:{port}", "origin": f"http://{ATTACKER}:{port}"}


async def upgrade_status(port: int, host: str) -> int:
    """The HTTP status the server answers a WebSocket upgrade to /graphql sent with `host`."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            (
                f"GET /graphql HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), 30)
        return int(status_line.split()[1])
    finally:
        writer.close()


async def channel_names(pool: asyncpg.Pool) -> list[str]:
    async with pool.acquire() as connection:
        return [row["name"] for row in await connection.fetch("SELECT name FROM channels")]


async def assert_rebinding_refused(base_url: str, port: int, pool: asyncpg.Pool) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        for query, variables in ((INGEST, PLANTED), (READ, {})):
            response = await http.post(
                "/graphql", json={"query": query, "variables": variables}, headers=rebinding(port)
            )
            assert response.status_code == 400, response.text
            (error,) = response.json()["errors"]
            assert error["extensions"]["code"] == "BAD_HOST" and ATTACKER not in error["message"]
        page = await http.get("/graphql", headers={**rebinding(port), "accept": "text/html"})
        assert page.status_code == 400
    assert await upgrade_status(port, f"{ATTACKER}:{port}") == 400
    assert "planted" not in await channel_names(pool)


async def assert_own_names_answered(base_url: str, port: int) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        for host in (
            f"127.0.0.1:{port}",
            f"localhost:{port}",
            "localhost",
            f"[::1]:{port}",
            "LocalHost",
        ):
            response = await http.post("/graphql", json={"query": READ}, headers={"host": host})
            assert response.status_code == 200 and "errors" not in response.json(), (
                host,
                response.text,
            )
    assert await upgrade_status(port, f"127.0.0.1:{port}") == 101
    assert await upgrade_status(port, f"localhost:{port}") == 101


def port_of(base_url: str) -> int:
    return int(base_url.rsplit(":", 1)[1])


async def test_a_rebinding_page_gets_nothing_from_the_app(
    db: asyncpg.Pool, settings: Settings
) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    async with running_server(app) as base_url:
        await assert_rebinding_refused(base_url, port_of(base_url), db)
        await assert_own_names_answered(base_url, port_of(base_url))


@asynccontextmanager
async def serving(
    database_url: str, tmp_path: Path, **settings: str
) -> AsyncIterator[tuple[str, Path]]:
    """`digestd serve` on a free loopback port, without tokens unless given; yields its base
    URL and its log, once /healthz answers."""
    port = free_port()
    log = tmp_path / "serve.log"
    process = start_cli(
        ["serve", "--port", str(port), "--no-runner"],
        cli_environment(DATABASE_URL=database_url, **settings),
        log,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = asyncio.get_running_loop().time() + 90
        async with httpx.AsyncClient(base_url=base_url, timeout=5) as http:
            while True:
                assert process.poll() is None, log.read_text()
                assert asyncio.get_running_loop().time() < deadline, log.read_text()
                try:
                    if (await http.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
        yield base_url, log
    finally:
        process.terminate()
        await wait_exit(process, 60)


async def test_a_rebinding_page_gets_nothing_from_digestd_serve(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    async with serving(database_url, tmp_path) as (base_url, log):
        await assert_rebinding_refused(base_url, port_of(base_url), db)
        await assert_own_names_answered(base_url, port_of(base_url))
    # A refused host is the client's doing: no error, no traceback in the server's log.
    text = log.read_text()
    assert "Traceback" not in text and " ERROR " not in text, text


async def test_a_listed_name_is_answered(db: asyncpg.Pool, settings: Settings) -> None:
    listed = settings.model_copy(
        update={"digestd_allowed_hosts": "digest.example, *.internal.example"}
    )
    app = create_app(listed, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as http,
    ):
        port = port_of(base_url)
        for host, status in (
            ("digest.example", 200),
            (f"api.internal.example:{port}", 200),
            ("internal.example", 400),
            (f"{ATTACKER}:{port}", 400),
        ):
            response = await http.post("/graphql", json={"query": READ}, headers={"host": host})
            assert response.status_code == status, (host, response.text)


async def test_with_tokens_the_list_applies_only_when_given(
    db: asyncpg.Pool, settings: Settings
) -> None:
    tokens = SecretStr("reader:reader-token-1,writer:writer-token-1")
    bearer = {"authorization": "Bearer reader-token-1"}
    for hosts, status in ((None, 200), ("digest.example", 400)):
        secured = settings.model_copy(
            update={"digestd_api_tokens": tokens, "digestd_allowed_hosts": hosts}
        )
        app = create_app(secured, AppOptions(run_workers=0))
        async with (
            running_server(app) as base_url,
            httpx.AsyncClient(base_url=base_url, timeout=30) as http,
        ):
            # Behind a proxy: the proxy's name, and a token (which no rebinding page has).
            response = await http.post(
                "/graphql", json={"query": READ}, headers={**bearer, "host": "proxy.example"}
            )
            assert response.status_code == status, (hosts, response.text)


def test_the_policy_of_a_wildcard_bind_and_odd_headers() -> None:
    wildcard = HostPolicy.for_server("0.0.0.0")
    assert (
        wildcard.allows("192.168.1.20") and wildcard.allows("::1") and not wildcard.allows(ATTACKER)
    )
    named = HostPolicy.for_server("box.lan")
    assert (
        named.allows("box.lan") and named.allows("127.0.0.2") and not named.allows("192.168.1.20")
    )
    ipv6 = HostPolicy.for_server("::1")
    assert ipv6.allows("::1") and ipv6.allows("localhost")
    parsed: dict[str | None, Any] = {
        "LOCALHOST:8000": "localhost",
        "[::1]:8000": "::1",
        "[::1]": "::1",
        None: None,
        "": None,
        "a b": None,
        "x:99999999": None,
        "x:port": None,
        "evil.example/@localhost": None,
        "user@localhost": None,
    }
    for header, host in parsed.items():
        assert host_name_of(header) == host, header


def test_a_bad_allowed_host_is_one_line_exit_2(tmp_path: Path) -> None:
    env = cli_environment(DATABASE_URL="postgresql://unused", DIGESTD_ALLOWED_HOSTS="*")
    result = subprocess.run(
        [sys.executable, "-m", "server.cli", "serve", "--port", str(free_port())],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 2 and "DIGESTD_ALLOWED_HOSTS" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
