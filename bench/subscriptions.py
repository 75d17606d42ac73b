"""Subscription benchmark: one channel digest run by `digestd serve` with no jobProgress
subscriber, then with `--connections` x 20 subscriptions of that job, in the same run.

    /tmp/venv/bin/python bench/subscriptions.py [--quick] [--database-url URL]
                                                [--messages 30000] [--connections 50] [--repeats 1]

The server is `digestd serve` (one in-process worker, the offline extractor) as its own process,
with its subscription caps raised to the number of watches; the subscribers are WebSocket clients
in this process (graphql-transport-ws), all subscribed to the job right after its trigger. Each
run imports a fresh channel of `--messages` generated chat messages and triggers its digest; the
figure is the job's own duration (finished_at - started_at, on the database clock), after one
unmeasured warm-up digest. Prints one
JSON line per run and a summary with the ratio watched/unwatched (1.0: subscribers cost the
digest nothing; each job event is read once for all of them).
"""

from __future__ import annotations

import sys
from pathlib import Path

_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

import argparse
import asyncio
import json
import os
import subprocess
import tempfile
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from bench._support import bench_database, emit, machine_details, spread, write_jsonl
from bench.api import free_port, wait_healthy

PER_CONNECTION = 20
TRIGGER = "mutation($id: ID!) { triggerDigest(channelId: $id) { ... on DigestJob { id } } }"
PROGRESS = "subscription($id: ID!) { jobProgress(id: $id) { status phase progress { chunksDone chunksTotal } } }"
DURATION = (
    "SELECT extract(epoch FROM finished_at - started_at), status FROM digest_jobs WHERE id = $1"
)


def serve(url: str, home: Path, port: int, watches: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DIGESTD_HOME": str(home),
        "DIGEST_EXTRACTOR": "offline",
        "DIGESTD_MAX_SUBSCRIPTIONS_PER_CLIENT": str(max(watches, 1)),
        "DIGESTD_MAX_SUBSCRIPTIONS": str(max(watches, 1)),
    }
    env.pop("DIGESTD_API_TOKENS", None)
    log = (home / "serve.log").open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--port", str(port)],
        cwd=_BENCH.parent,
        env=env,
        stdout=log,
        stderr=log,
    )
    log.close()
    wait_healthy(port, process)
    return process


async def follow(port: int, job_id: str, count: int) -> int:
    """`count` subscriptions of the job on one connection, until all completed: their messages."""
    async with connect(
        f"ws://127.0.0.1:{port}/graphql",
        subprotocols=["graphql-transport-ws"],  # type: ignore[list-item]
        max_size=None,
    ) as ws:
        await ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        for op in range(count):
            payload = {"query": PROGRESS, "variables": {"id": job_id}}
            await ws.send(json.dumps({"id": str(op), "type": "subscribe", "payload": payload}))
        return await _until_all_complete(ws, count)


async def _until_all_complete(ws: ClientConnection, count: int) -> int:
    received, open_ops = 0, count
    while open_ops:
        message = json.loads(await ws.recv())
        received += 1
        if message["type"] == "complete":
            open_ops -= 1
        elif message["type"] != "next" or "errors" in message["payload"]:
            raise RuntimeError(f"unexpected message: {str(message)[:300]}")
    return received


async def one_run(
    url: str, port: int, work: Path, messages: int, connections: int, run: int
) -> dict[str, Any]:
    import asyncpg

    from db.engine import create_pool
    from runner.importers.ingest import import_path
    from schema.types.ids import decode_global_id

    pool: asyncpg.Pool = await create_pool(url, max_size=2)
    try:
        path = work / f"run-{run}-{connections}.jsonl"
        write_jsonl(path, messages, channel=f"bench-subs-{run}-{connections}")
        await import_path(pool, path, server="bench-subscriptions")
        channel_id = await pool.fetchval(
            "SELECT id FROM channels WHERE name = $1", f"bench-subs-{run}-{connections}"
        )
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            answer = await client.post(
                "/graphql", json={"query": TRIGGER, "variables": {"id": str(channel_id)}}
            )
        job_id = answer.json()["data"]["triggerDigest"]["id"]
        row_id = decode_global_id(job_id)[1]
        followers = [
            asyncio.create_task(follow(port, job_id, PER_CONNECTION)) for _ in range(connections)
        ]
        while True:
            duration, status = await pool.fetchrow(DURATION, row_id)
            if duration is not None:
                break
            await asyncio.sleep(0.2)
        received = sum(await asyncio.gather(*followers))
    finally:
        await pool.close()
    return {
        "kind": "run",
        "run": run,
        "watches": connections * PER_CONNECTION,
        "messages": messages,
        "status": status,
        "job_seconds": round(float(duration), 3),
        "messages_received": received,
    }


async def run(options: argparse.Namespace, url: str, home: Path) -> int:
    from db.engine import connect
    from db.migrate import migrate

    connection = await connect(url)
    try:
        await migrate(connection)
    finally:
        await connection.close()
    watches = options.connections * PER_CONNECTION
    emit(
        "subscriptions",
        kind="setup",
        machine=machine_details(),
        messages=options.messages,
        watches=watches,
    )
    port = free_port()
    server = serve(url, home, port, watches)
    seconds: dict[int, list[float]] = {0: [], watches: []}
    try:
        with tempfile.TemporaryDirectory(prefix="digestd-bench-subs-") as work:
            # Unmeasured: the server's first digest loads the offline extractor's models.
            await one_run(url, port, Path(work), min(options.messages, 500), 0, -1)
            for number in range(options.repeats):
                for connections in (0, options.connections):
                    row = await one_run(
                        url, port, Path(work), options.messages, connections, number
                    )
                    emit("subscriptions", **row)
                    seconds[connections * PER_CONNECTION].append(row["job_seconds"])
    finally:
        server.terminate()
        server.wait(timeout=30)
    unwatched, watched = spread(seconds[0]), spread(seconds[watches])
    emit(
        "subscriptions",
        kind="summary",
        unwatched=unwatched,
        watched=watched,
        watches=watches,
        ratio=round(watched["best"] / unwatched["best"], 3) if unwatched["best"] else None,
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="2,000 messages, 5 connections")
    parser.add_argument("--database-url")
    parser.add_argument("--messages", type=int, default=30_000)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=1)
    options = parser.parse_args()
    if options.quick:
        options.messages, options.connections = 2_000, 5
    with (
        bench_database(options.database_url) as (url, embedded_home),
        tempfile.TemporaryDirectory(prefix="digestd-bench-home-") as home,
    ):
        return asyncio.run(run(options, url, embedded_home or Path(home)))


if __name__ == "__main__":
    sys.exit(main())
