"""Event-loop responsiveness of `digestd serve` during an offline digest: `/healthz` latency while
its in-process runner digests a generated channel, with the CPU-bound steps on the event loop
(`in_loop`, as before runner/core/offload.py) vs off it (`offloaded`: the process pool of
DIGESTD_EXTRACT_PROCESSES and validation/chunking in a thread), in the same run.

    /tmp/venv/bin/python bench/event_loop.py [--quick] [--messages 30000] [--database-url URL]

Per mode: a fresh `digestd serve` process (the in_loop one is the same CLI with
`runner.core.offload.set_inline(True)`), a fresh channel of the same messages with an empty chunk cache,
a trigger, then `/healthz` probed every 50 ms from this process until the job ends. Printed: latency
p50/p95/max, the job's duration, attempts and stats, and whether both modes stored the same digest
(title, overview, items). The lease is 5 s with a 1 s heartbeat, so an event loop blocked for longer
than that shows in `attempts` when a second worker is present (`--two-workers` starts a `digestd
worker` beside serve).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from bench._support import (
    REPO,
    bench_database,
    emit,
    machine_details,
    utc_now,
    write_jsonl,
)
from db import jobs as job_queries
from db.engine import connect, create_pool
from db.migrate import migrate
from runner.importers.ingest import import_path

BENCH_NAME = "event_loop"
_SERVE = (
    "import sys; from runner.core import offload; offload.set_inline(sys.argv[1] == 'in_loop'); "
    "from server.cli import main; sys.exit(main(sys.argv[2:]))"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def environment(url: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DIGEST", "DATABASE_URL"))}
    env.update(
        DATABASE_URL=url,
        DIGESTD_HOME=str(home),
        DIGEST_EXTRACTOR="offline",
        DIGESTD_LEASE_SECONDS="5",
        DIGESTD_HEARTBEAT_SECONDS="1",
        DIGESTD_POLL_SECONDS="0.5",
        DIGESTD_MAX_ATTEMPTS="20",
    )
    return env


async def probe(base: str, done: asyncio.Event) -> list[float]:
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=base, timeout=600) as client:
        while not done.is_set():
            started = time.perf_counter()
            await client.get("/healthz")
            latencies.append(time.perf_counter() - started)
            await asyncio.sleep(0.05)
    return latencies


async def wait_ready(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=5) as client:
        for _ in range(600):
            if process.poll() is not None:
                tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
                raise RuntimeError(f"digestd serve exited at start:\n{tail}")
            try:
                if (await client.get("/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError("digestd serve did not become ready")


async def digest_summary(url: str, digest_id: int) -> dict[str, Any]:
    connection = await connect(url)
    try:
        row = await connection.fetchrow(
            "SELECT title, overview, highlights, coverage, message_count, "
            "(SELECT count(*) FROM knowledge_items k WHERE k.digest_id = d.id) AS knowledge, "
            "(SELECT count(*) FROM decisions x WHERE x.digest_id = d.id) AS decisions, "
            "(SELECT count(*) FROM topics x WHERE x.digest_id = d.id) AS topics "
            "FROM digests d WHERE id = $1",
            digest_id,
        )
        return dict(row) if row else {}
    finally:
        await connection.close()


async def run_mode(
    mode: str, url: str, export: Path, home: Path, two_workers: bool
) -> dict[str, Any]:
    pool = await create_pool(url, max_size=2)
    try:
        report = await import_path(pool, export, channel=f"bench-{mode}")
        async with pool.acquire() as connection:
            await connection.execute("TRUNCATE chunk_results")
        channel_id = report.channels[f"bench-{mode}"]
    finally:
        await pool.close()
    port = free_port()
    env = environment(url, home)
    # Its log, kept beside the scratch home: what a serve that failed to start said.
    log = home.parent / f"serve-{mode}.log"
    with log.open("wb") as log_file:
        serve = subprocess.Popen(
            [sys.executable, "-c", _SERVE, mode, "serve", "--port", str(port)],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log_file,
        )
    others: list[subprocess.Popen[bytes]] = []
    base = f"http://127.0.0.1:{port}"
    try:
        await wait_ready(base, serve, log)
        if two_workers:
            others.append(
                subprocess.Popen(
                    [sys.executable, "-c", _SERVE, mode, "worker"],
                    cwd=REPO,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        connection = await connect(url)
        try:
            job, _ = await job_queries.enqueue_job(
                connection, job_queries.JobKind.CHANNEL, channel_id, {}, max_attempts=20
            )
            done = asyncio.Event()
            probing = asyncio.create_task(probe(base, done))
            started = time.perf_counter()
            while True:
                row = await job_queries.job_by_id(connection, job.id)
                assert row is not None
                if row.status not in ("queued", "running"):
                    break
                await asyncio.sleep(0.2)
            seconds = time.perf_counter() - started
            done.set()
            latencies = await probing
        finally:
            await connection.close()
    finally:
        for process in [serve, *others]:
            process.terminate()
            process.wait(60)
    ordered = sorted(latencies)
    result = {
        "mode": mode,
        "messages": report.accepted,
        "job_status": row.status,
        "job_attempts": row.attempts,
        "job_seconds": round(seconds, 2),
        "chunks": (row.stats or {}).get("chunks"),
        "healthz_probes": len(ordered),
        "healthz_p50_ms": round(statistics.median(ordered) * 1000, 1),
        "healthz_p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 1),
        "healthz_max_ms": round(ordered[-1] * 1000, 1),
    }
    digest = await digest_summary(url, row.digest_id) if row.digest_id else {}
    # The channel name (one per mode) appears in the title; the rest must be equal.
    result["digest"] = json.loads(json.dumps(digest, default=str).replace(f"bench-{mode}", "bench"))
    return result


async def run(messages: int, database_url: str | None, two_workers: bool) -> int:
    emit(BENCH_NAME, kind="setup", at=utc_now(), messages=messages, machine=machine_details())
    with (
        tempfile.TemporaryDirectory(prefix="digestd-bench-loop-") as scratch,
        bench_database(database_url) as (url, _),
    ):
        connection = await connect(url)
        try:
            await migrate(connection)
        finally:
            await connection.close()
        export = Path(scratch) / "channel.jsonl"
        write_jsonl(export, messages)
        results = {}
        for mode in ("in_loop", "offloaded"):
            result = await run_mode(mode, url, export, Path(scratch) / "home", two_workers)
            digest = result.pop("digest")
            results[mode] = (result, digest)
            emit(BENCH_NAME, kind="run", **result)
    (loop_run, loop_digest), (off_run, off_digest) = results["in_loop"], results["offloaded"]
    emit(
        BENCH_NAME,
        kind="summary",
        healthz_max_ms={
            "in_loop": loop_run["healthz_max_ms"],
            "offloaded": off_run["healthz_max_ms"],
        },
        healthz_p95_ms={
            "in_loop": loop_run["healthz_p95_ms"],
            "offloaded": off_run["healthz_p95_ms"],
        },
        job_seconds={"in_loop": loop_run["job_seconds"], "offloaded": off_run["job_seconds"]},
        attempts={"in_loop": loop_run["job_attempts"], "offloaded": off_run["job_attempts"]},
        same_digest=loop_digest == off_digest and bool(loop_digest),
    )
    # With --two-workers the in-loop job may never finish (its lease keeps moving): only two
    # stored digests that differ are a failure.
    return 1 if loop_digest and off_digest and loop_digest != off_digest else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 messages, a smoke test")
    parser.add_argument("--messages", type=int, default=None, help="channel size (30,000)")
    parser.add_argument("--database-url", default=None, help="default: embedded, temporary")
    parser.add_argument("--two-workers", action="store_true", help="a digestd worker beside serve")
    args = parser.parse_args()
    messages = args.messages or (2_000 if args.quick else 30_000)
    return asyncio.run(run(messages, args.database_url, args.two_workers))


if __name__ == "__main__":
    sys.exit(main())
