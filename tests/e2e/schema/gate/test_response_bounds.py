"""A reader's request cannot make the server's memory grow past a bound: texts weigh what they
can hold in the query's cost, the response size is counted while the answer is built, and the
lists that grow with the data take a `first` with a hard maximum and say how many they left.

The memory tests run a real `digestd serve` and read its peak RSS (VmHWM) from /proc: nine
aliases of a page of 100 messages of 195,000 characters each cost 18,909 (under the limit of
20,000) and grew the process from 220 MB to 1.26 GB, blocking /healthz for seconds, before the
16 MB response cap refused the answer."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from runner.grounding.normalize import normalize_text
from tests.support.database import BASE_TIME, Msg, add_channel
from tests.support.processes import cli_environment, start_cli, wait_exit
from tests.support.servers import free_port

MB = 1024 * 1024
MESSAGE_CHARS = 195_000
MESSAGES = 120
# The stated bound (README, "Errors and limits"): a reader's request grows the server by less.
MAX_GROWTH_BYTES = 200 * MB
NINE_ALIASES = (
    "query($c: ID!) { "
    + " ".join(
        f"a{i}: messages(filter: {{channelId: $c}}, first: 100) {{ nodes {{ text normalizedText }} }}"
        for i in range(9)
    )
    + " }"
)


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _reset_peak(pid: int) -> None:
    """Lets VmHWM start again from the current RSS (Linux: write 5 to clear_refs)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


async def _seed(db: asyncpg.Pool) -> str:
    """A channel of MESSAGES messages of MESSAGE_CHARS characters, by the ingest path (COPY)."""
    rows = [
        Msg(
            f"big{i}",
            "author",
            BASE_TIME + timedelta(seconds=i),
            (f"{i} " + "lorem ipsum " * 20_000)[:MESSAGE_CHARS],
        )
        for i in range(MESSAGES)
    ]
    assert len(normalize_text(rows[0].text)) >= MESSAGE_CHARS - 10
    channel = await add_channel(db, "huge", rows)
    return base64.b64encode(f"Channel:{channel}".encode()).decode()


@asynccontextmanager
async def _serve(database_url: str, tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, int]]:
    port = free_port()
    environment = cli_environment(DATABASE_URL=database_url, DIGESTD_HOME=str(tmp_path / "home"))
    log = tmp_path / "serve.log"
    serve = start_cli(["serve", "--port", str(port), "--no-runner"], environment, log)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
            deadline = asyncio.get_running_loop().time() + 90
            while True:
                assert serve.poll() is None, log.read_text()
                try:
                    if (await client.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert asyncio.get_running_loop().time() < deadline, "serve never answered /healthz"
                await asyncio.sleep(0.1)
            yield client, serve.pid
    finally:
        serve.terminate()
        try:
            await wait_exit(serve, 30)
        except AssertionError:
            pass
        if serve.poll() is None:
            serve.kill()
            serve.wait()
        assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


async def _measured(
    client: httpx.AsyncClient, pid: int, query: str, variables: dict[str, Any]
) -> tuple[httpx.Response, int, int]:
    """The answer to `query`, the server's peak RSS growth while it ran, and how many /healthz
    probes answered 200 while it was in flight (one at least: the loop was never held)."""
    await client.post("/graphql", json={"query": "{ __typename }"})  # warm
    _reset_peak(pid)
    before = _status_kb(pid, "VmRSS") * 1024
    request = asyncio.ensure_future(
        client.post("/graphql", json={"query": query, "variables": variables})
    )
    healthy = 0
    async with httpx.AsyncClient(base_url=str(client.base_url), timeout=30) as probe:
        while True:
            answer = await probe.get("/healthz")
            healthy += answer.status_code == 200
            if request.done() and healthy:
                break
            await asyncio.sleep(0.05)
    response = await request
    growth = _status_kb(pid, "VmHWM") * 1024 - before
    return response, growth, healthy


def _only_error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert body["data"] is None and len(body["errors"]) == 1, json.dumps(body)[:500]
    error: dict[str, Any] = body["errors"][0]
    return error


async def test_nine_aliases_of_huge_messages_are_refused_within_a_memory_bound(
    db: asyncpg.Pool, database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    channel = await _seed(db)
    async with _serve(database_url, tmp_path) as (client, pid):
        response, growth, healthy = await _measured(client, pid, NINE_ALIASES, {"c": channel})
        with capsys.disabled():
            print(
                f"\nnine aliases: {response.status_code} {response.text[:160]!r}; peak RSS growth {growth / MB:.0f} MB"
            )
        assert _only_error(response)["extensions"]["code"] in {"TOO_COMPLEX", "RESPONSE_TOO_LARGE"}
        assert growth < MAX_GROWTH_BYTES, f"the server grew by {growth / MB:.0f} MB"
        assert healthy >= 1
        # The same pages asking for no text cost little, and read no text either (a page of
        # messages read both texts of every row: 351 MB for these nine).
        ids_only = NINE_ALIASES.replace("text normalizedText", "id author")
        response, growth, healthy = await _measured(client, pid, ids_only, {"c": channel})
        with capsys.disabled():
            print(
                f"nine pages of ids: {response.status_code}; peak RSS growth {growth / MB:.0f} MB"
            )
        assert len(response.json()["data"]["a8"]["nodes"]) == 100
        assert growth < MAX_GROWTH_BYTES / 4, f"the server grew by {growth / MB:.0f} MB"
        assert healthy >= 1


async def test_texts_over_the_response_cap_stop_the_request_early(
    db: asyncpg.Pool, database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Within the cost limit, one page of 100 texts and another of their normalized texts
    (39 MB of text): the 16 MB cap is counted while the texts resolve, so the answer is
    RESPONSE_TOO_LARGE without the whole result (nor its JSON) ever being built."""
    channel = await _seed(db)
    query = (
        "query($c: ID!) { a: messages(filter: {channelId: $c}, first: 100) { nodes { text } } "
        "b: messages(filter: {channelId: $c}, first: 100) { nodes { normalizedText } } }"
    )
    async with _serve(database_url, tmp_path) as (client, pid):
        response, growth, _ = await _measured(client, pid, query, {"c": channel})
        with capsys.disabled():
            print(
                f"\ntwo pages of texts: {response.text[:160]!r}; peak RSS growth {growth / MB:.0f} MB"
            )
        error = _only_error(response)
        assert error["extensions"]["code"] == "RESPONSE_TOO_LARGE", error
        assert len(response.content) < 10_000
        assert growth < MAX_GROWTH_BYTES / 2, f"the server grew by {growth / MB:.0f} MB"
        # A page a dashboard reads still answers whole.
        page = await client.post(
            "/graphql",
            json={
                "query": "query($c: ID!) { messages(filter: {channelId: $c}, first: 50) { nodes { id author text } } }",
                "variables": {"c": channel},
            },
        )
        nodes = page.json()["data"]["messages"]["nodes"]
        assert len(nodes) == 50 and all(len(node["text"]) == MESSAGE_CHARS for node in nodes)
