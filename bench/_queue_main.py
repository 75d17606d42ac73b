"""The body of bench/job_queue.py: see there for what is measured and how."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from bench._support import stop_processes
from db import jobs as job_queries
from db.engine import connect, create_pool, embedded_database_url
from db.migrate import migrate

REPO = Path(__file__).resolve().parents[1]
TARGET_NOTIFY_P99_MS = 100.0


@dataclass(frozen=True)
class Options:
    jobs: int
    workers: int
    repeats: int
    poll_seconds: float
    latency_jobs: int
    latency_rate: float

    @property
    def modes(self) -> tuple[str, ...]:
        return ("notify", "polling")


def emit(row: dict[str, Any]) -> None:
    print(json.dumps({"bench": "queue", **row}), flush=True)


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


async def seed_channels(connection: asyncpg.Connection, count: int) -> list[int]:
    """`count` channels with no messages: each digest of one is a trivial job."""
    server_id = await connection.fetchval(
        "INSERT INTO servers (name) VALUES ($1) RETURNING id", f"bench-queue-{os.getpid()}"
    )
    rows = await connection.fetch(
        "INSERT INTO channels (server_id, name) "
        "SELECT $1, 'empty-' || g FROM generate_series(1, $2) g RETURNING id",
        server_id,
        count,
    )
    return [row["id"] for row in rows]


# --- worker processes ----------------------------------------------------------------------


@dataclass
class WorkerSession:
    processes: list[subprocess.Popen[str]]
    records: list[Path]


@asynccontextmanager
async def worker_processes(
    url: str, home: Path, mode: str, options: Options
) -> AsyncIterator[WorkerSession]:
    """`options.workers` worker processes, idle and (in notify mode) listening when entered."""
    records = [
        home / f"worker-{mode}-{n}-{time.monotonic_ns()}.json" for n in range(options.workers)
    ]
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench._queue_worker",
                "--database-url",
                url,
                "--home",
                str(home),
                "--mode",
                mode,
                "--poll-seconds",
                str(options.poll_seconds),
                "--record",
                str(record),
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for record in records
    ]
    session = WorkerSession(processes, records)
    try:
        for process in processes:
            assert process.stdout is not None
            line = await asyncio.to_thread(process.stdout.readline)
            if line.strip() != "ready":
                raise RuntimeError(f"worker process did not start (exit {process.poll()})")
        # Let every worker finish its first (empty) claim and go idle before any job exists.
        await asyncio.sleep(0.5)
        yield session
    finally:
        await asyncio.to_thread(stop_processes, processes, 30)


def read_records(session: WorkerSession) -> tuple[Counter[int], Counter[int]]:
    """Claims and finishes per job id, over every worker of the session."""
    claimed: Counter[int] = Counter()
    finished: Counter[int] = Counter()
    for record in session.records:
        data = json.loads(record.read_text(encoding="utf-8"))
        claimed.update(data["claimed"])
        finished.update(data["finished"])
    return claimed, finished


async def wait_finished(
    pool: asyncpg.Pool,
    first_job_id: int,
    count: int,
    timeout: float,
    processes: list[subprocess.Popen[str]],
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # A worker that crashed (say, on a SQL error) would otherwise leave us waiting.
        dead = [p.returncode for p in processes if p.poll() is not None]
        if dead:
            raise RuntimeError(f"a worker process exited with {dead[0]}; see its stderr")
        async with pool.acquire() as connection:
            done = await connection.fetchval(
                "SELECT count(*) FROM digest_jobs WHERE id >= $1 AND finished_at IS NOT NULL",
                first_job_id,
            )
        if done >= count:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"only {done} of {count} jobs finished in {timeout}s")


async def next_job_id(pool: asyncpg.Pool) -> int:
    async with pool.acquire() as connection:
        return int(await connection.fetchval("SELECT coalesce(max(id), 0) + 1 FROM digest_jobs"))


async def exactly_once(
    pool: asyncpg.Pool, first_job_id: int, session: WorkerSession
) -> dict[str, Any]:
    """The database's view (status, attempts) and the workers' (claims, finishes) per job."""
    async with pool.acquire() as connection:
        rows = await connection.fetch(
            "SELECT id, status, attempts, result_message FROM digest_jobs WHERE id >= $1",
            first_job_id,
        )
    claimed, finished = read_records(session)
    ids = {row["id"] for row in rows}
    if not claimed:
        raise RuntimeError("the workers recorded no claim: has Worker._process been renamed?")
    return {
        "jobs_checked": len(rows),
        "all_succeeded_no_new_messages": all(
            row["status"] == "succeeded" and row["result_message"] == "no new messages"
            for row in rows
        ),
        "jobs_attempts_not_1": sum(1 for row in rows if row["attempts"] != 1),
        "jobs_claimed_twice": sum(1 for count in claimed.values() if count > 1),
        "jobs_finished_twice": sum(1 for count in finished.values() if count > 1),
        "jobs_never_claimed": len(ids - set(claimed)),
        "claims_of_unknown_jobs": len(set(claimed) - ids),
    }


# --- phases --------------------------------------------------------------------------------


async def throughput_phase(
    pool: asyncpg.Pool, channel_ids: list[int], jobs: int, processes: list[subprocess.Popen[str]]
) -> dict[str, Any]:
    """Queue `jobs` jobs at once (one transaction, one NOTIFY) and time the drain."""
    started = time.perf_counter()
    async with pool.acquire() as connection:
        async with connection.transaction():
            first = await connection.fetchval(
                "WITH queued AS (INSERT INTO digest_jobs (channel_id, options, max_attempts) "
                "SELECT id, '{}'::jsonb, 3 FROM unnest($1::bigint[]) AS id RETURNING id) "
                "SELECT min(id) FROM queued",
                channel_ids[:jobs],
            )
            await connection.execute("SELECT pg_notify($1, 'bench')", job_queries.JOBS_CHANNEL)
    await wait_finished(pool, first, jobs, max(120.0, jobs / 20), processes)
    wall = time.perf_counter() - started
    async with pool.acquire() as connection:
        span = await connection.fetchrow(
            "SELECT extract(epoch FROM max(finished_at) - min(created_at))::float AS drain, "
            "extract(epoch FROM max(finished_at) - min(started_at))::float AS busy "
            "FROM digest_jobs WHERE id >= $1",
            first,
        )
    return {
        "jobs": jobs,
        "seconds": round(span["drain"], 3),
        "jobs_per_s": round(jobs / span["drain"], 1),
        "wall_seconds": round(wall, 3),
    }


async def latency_phase(
    pool: asyncpg.Pool,
    channel_ids: list[int],
    options: Options,
    processes: list[subprocess.Popen[str]],
) -> dict[str, Any]:
    """Trigger jobs at a steady rate while workers are idle; trigger-to-claim per job."""
    first = await next_job_id(pool)
    interval = 1.0 / options.latency_rate
    loop = asyncio.get_running_loop()
    start = loop.time()
    late = 0
    async with pool.acquire() as connection:
        for n, channel_id in enumerate(channel_ids[: options.latency_jobs]):
            delay = start + n * interval - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                late += 1
            _, created = await job_queries.enqueue_job(
                connection, job_queries.JobKind.CHANNEL, channel_id, {}, max_attempts=3
            )
            if not created:
                raise RuntimeError(f"channel {channel_id} still had an active job")
    await wait_finished(pool, first, options.latency_jobs, 60 + 3 * options.poll_seconds, processes)
    async with pool.acquire() as connection:
        rows = await connection.fetch(
            "SELECT extract(epoch FROM started_at - created_at)::float * 1000 AS ms "
            "FROM digest_jobs WHERE id >= $1",
            first,
        )
    latencies = [row["ms"] for row in rows]
    return {
        "jobs": len(latencies),
        "rate_per_s": options.latency_rate,
        "triggers_behind_schedule": late,
        "p50_ms": round(percentile(latencies, 0.50), 2),
        "p90_ms": round(percentile(latencies, 0.90), 2),
        "p99_ms": round(percentile(latencies, 0.99), 2),
        "max_ms": round(max(latencies), 2),
    }


async def session(
    url: str,
    home: Path,
    pool: asyncpg.Pool,
    channel_ids: list[int],
    mode: str,
    repeat: int,
    options: Options,
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """One set of worker processes: the throughput phase (notify mode), then the latency
    phase, then the exactly-once checks over every job of the session."""
    first = await next_job_id(pool)
    throughput: dict[str, Any] | None = None
    async with worker_processes(url, home, mode, options) as workers:
        if mode != "polling":
            throughput = await throughput_phase(pool, channel_ids, options.jobs, workers.processes)
            # Let autovacuum and the checkpointer catch up on the backlog's updates, so the
            # latency phase starts from idle workers on an idle database.
            await asyncio.sleep(min(2.0, options.poll_seconds))
        latency = await latency_phase(pool, channel_ids, options, workers.processes)
    checks = await exactly_once(pool, first, workers)
    if throughput is not None:
        throughput = {
            "phase": "throughput",
            "mode": mode,
            "repeat": repeat,
            "workers": options.workers,
            **throughput,
            **checks,
        }
        emit(throughput)
    latency = {
        "phase": "latency",
        "mode": mode,
        "repeat": repeat,
        "workers": options.workers,
        "poll_seconds": options.poll_seconds,
        **latency,
    }
    if throughput is None:
        latency.update(checks)
    emit(latency)
    return throughput, latency


def exactly_once_ok(row: dict[str, Any]) -> bool:
    return bool(row["all_succeeded_no_new_messages"]) and not any(
        row[key]
        for key in (
            "jobs_attempts_not_1",
            "jobs_claimed_twice",
            "jobs_finished_twice",
            "jobs_never_claimed",
            "claims_of_unknown_jobs",
        )
    )


async def run(options: Options, database_url: str | None) -> int:
    with tempfile.TemporaryDirectory(prefix="digestd-bench-queue-") as directory:
        home = Path(directory)
        url = database_url or await asyncio.to_thread(embedded_database_url, home)
        connection = await connect(url)
        try:
            await migrate(connection)
            channel_ids = await seed_channels(connection, max(options.jobs, options.latency_jobs))
        finally:
            await connection.close()
        pool = await create_pool(url, max_size=4)
        throughputs: dict[str, list[dict[str, Any]]] = {
            m: [] for m in options.modes if m != "polling"
        }
        latencies: dict[str, list[dict[str, Any]]] = {m: [] for m in options.modes}
        checks_ok = True
        try:
            for repeat in range(1, options.repeats + 1):
                for mode in options.modes:
                    throughput, latency = await session(
                        url, home, pool, channel_ids, mode, repeat, options
                    )
                    if throughput is not None:
                        throughputs[mode].append(throughput)
                        checks_ok &= exactly_once_ok(throughput)
                    else:
                        checks_ok &= exactly_once_ok(latency)
                    latencies[mode].append(latency)
        finally:
            await pool.close()

    def median(rows: list[dict[str, Any]], key: str) -> float:
        return round(statistics.median(row[key] for row in rows), 2)

    def spread(rows: list[dict[str, Any]], key: str) -> list[float]:
        return [min(row[key] for row in rows), max(row[key] for row in rows)]

    notify_p99 = median(latencies["notify"], "p99_ms")
    emit(
        {
            "summary": True,
            "jobs": options.jobs,
            "workers": options.workers,
            "repeats": options.repeats,
            "jobs_per_s": median(throughputs["notify"], "jobs_per_s"),
            "jobs_per_s_spread": spread(throughputs["notify"], "jobs_per_s"),
            "exactly_once": checks_ok,
            "latency_jobs": options.latency_jobs,
            "latency_rate_per_s": options.latency_rate,
            "poll_seconds": options.poll_seconds,
            "notify_p50_ms": median(latencies["notify"], "p50_ms"),
            "notify_p99_ms": notify_p99,
            "notify_p99_spread": spread(latencies["notify"], "p99_ms"),
            "polling_p50_ms": median(latencies["polling"], "p50_ms"),
            "polling_p99_ms": median(latencies["polling"], "p99_ms"),
            "polling_p99_spread": spread(latencies["polling"], "p99_ms"),
            "p50_ratio_polling_over_notify": round(
                median(latencies["polling"], "p50_ms")
                / max(median(latencies["notify"], "p50_ms"), 0.01),
                1,
            ),
            "target_notify_p99_ms": TARGET_NOTIFY_P99_MS,
            "target_met": notify_p99 < TARGET_NOTIFY_P99_MS,
        }
    )
    return 0 if checks_ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description="queue benchmark: jobs/s, exactly once, latency")
    parser.add_argument("--quick", action="store_true", help="200 jobs, 2 workers: CI smoke test")
    parser.add_argument("--database-url", help="a disposable database (default: embedded, temp)")
    parser.add_argument("--jobs", type=int, help="jobs of the throughput phase (default 10000)")
    parser.add_argument("--workers", type=int, help="worker processes (default 4)")
    parser.add_argument("--repeats", type=int, help="sessions per mode (default 3)")
    parser.add_argument(
        "--poll-seconds", type=float, help="poll interval (default 5, as in production)"
    )
    parser.add_argument("--latency-jobs", type=int, help="jobs of each latency phase (default 600)")
    parser.add_argument("--latency-rate", type=float, help="triggers per second (default 40)")
    args = parser.parse_args()
    options = Options(
        jobs=args.jobs or (200 if args.quick else 10_000),
        workers=args.workers or (2 if args.quick else 4),
        repeats=args.repeats or (1 if args.quick else 3),
        poll_seconds=args.poll_seconds or (0.5 if args.quick else 5.0),
        latency_jobs=args.latency_jobs or (60 if args.quick else 600),
        latency_rate=args.latency_rate or (60.0 if args.quick else 40.0),
    )
    return asyncio.run(run(options, args.database_url))
