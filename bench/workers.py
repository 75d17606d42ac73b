"""Workers that add up: a backlog of channel digests drained by 1, 2 and 4 `digestd worker`
processes, and by two simulated machines, against one PostgreSQL server: throughput per
configuration, its speedup over one worker, the CPU it used, and exactly-once in every run.

    /tmp/venv/bin/python bench/workers.py [--quick] [--database-url URL] [--channels 200]
                                          [--messages 300-1000] [--configs 1,2,4,2+2]
                                          [--repeats 2] [--extract-processes N]

Per run (a configuration in a repeat; repeats alternate the order of the configurations): a
fresh backlog of `--channels` generated channels (`--messages` messages each, sizes drawn per
channel, the same in every run) imported with `import_path`, with the chunk-result cache emptied
(the runs digest the same messages); the configuration's `digestd worker`
processes (subprocesses, as a user runs them: the offline extractor, otherwise the shipped
settings) started and idle; then a coverage digest of every channel triggered through
`runner.triggers.trigger_channel_digest` (the API's and the CLI's path) in one transaction, and
the workers left to it until every job has ended. A configuration `2+2` is two machines: each
`+`-separated number is a process group of that many workers with its own environment (its own
DIGESTD_HOME) and its own CPU pools.

Throughput is on the database clock, from the trigger to the last finish (`drain_seconds`;
process start-up is left out). CPU: the worker processes' and their CPU pools' user + system time
over the drain (`worker_cpu_seconds`, /proc of the machines' process groups; `worker_cores` is
that over the wall time) and the whole machine's busy cores meanwhile (`machine_busy_cores`,
/proc/stat: other work on a shared machine counts too). Exactly once: every job `succeeded` in
one attempt with exactly one digest, every message of the backlog covered at its revision by a
digest of its own channel and read by exactly one digest.

Without `--database-url` the workers share an embedded PostgreSQL; with a server URL
(`postgresql://postgres@127.0.0.1:5432/postgres`) the benchmark creates its own database on that
server (digestd_bench_workers_<pid>), migrates it, and drops it at the end, also on failure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import signal
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asyncpg

from bench._support import (
    REPO,
    bench_database,
    chat_messages,
    emit,
    machine_details,
    own_database,
    postgres_version,
    spread,
    utc_now,
)
from db.engine import connect, create_pool
from db.migrate import migrate
from runner.importers.ingest import import_path
from runner.triggers import trigger_channel_digest

BENCH_NAME = "workers"
# A step up in workers "grows" throughput when its median jobs/s is at least this much higher.
GROWTH = 1.1


@dataclass(frozen=True)
class Config:
    """Worker processes per machine: (4,) is four on one machine, (2, 2) two machines of two."""

    machines: tuple[int, ...]

    @property
    def name(self) -> str:
        return "+".join(str(n) for n in self.machines)

    @property
    def workers(self) -> int:
        return sum(self.machines)

    @classmethod
    def parse(cls, text: str) -> Config:
        machines = tuple(int(part) for part in text.split("+"))
        if not machines or min(machines) < 1:
            raise ValueError(f"bad configuration {text!r}: worker counts joined by +, each >= 1")
        return cls(machines)


@dataclass(frozen=True)
class Options:
    channels: int
    min_messages: int
    max_messages: int
    configs: tuple[Config, ...]
    repeats: int
    extract_processes: int | None
    timeout: float


# --- the backlog ----------------------------------------------------------------------------


def channel_sizes(options: Options) -> list[int]:
    """Messages per channel: drawn once, so every run digests the same backlog."""
    rng = random.Random(27)
    return [
        rng.randint(options.min_messages, options.max_messages) for _ in range(options.channels)
    ]


def write_backlog(path: Path, sizes: list[int]) -> int:
    """One JSONL export holding every channel (each record names its channel); message count."""
    with path.open("w", encoding="utf-8") as handle:
        for number, size in enumerate(sizes):
            for record in chat_messages(size, seed=number, channel=f"c{number:03d}"):
                handle.write(json.dumps(record, ensure_ascii=False))
                handle.write("\n")
    return sum(sizes)


@dataclass(frozen=True)
class Backlog:
    channel_ids: list[int]
    job_ids: list[int]
    messages: int


async def import_channels(pool: asyncpg.Pool, export: Path, server: str) -> list[int]:
    """The backlog's channels, imported under a server of their own (one per run)."""
    await import_path(pool, export, server=server)
    async with pool.acquire() as connection:
        return [
            row["id"]
            for row in await connection.fetch(
                "SELECT c.id FROM channels c JOIN servers s ON s.id = c.server_id "
                "WHERE s.name = $1 ORDER BY c.id",
                server,
            )
        ]


async def trigger_all(pool: asyncpg.Pool, channel_ids: list[int], messages: int) -> Backlog:
    """A coverage digest of every channel, queued in one transaction: the workers see the whole
    backlog at once (each trigger's NOTIFY is delivered at the commit)."""
    job_ids = []
    async with pool.acquire() as connection, connection.transaction():
        for channel_id in channel_ids:
            job, created = await trigger_channel_digest(connection, channel_id, max_attempts=3)
            if not created:
                raise RuntimeError(f"channel {channel_id} already had an active job")
            job_ids.append(job.id)
    return Backlog(channel_ids, job_ids, messages)


# --- worker processes -----------------------------------------------------------------------


def machine_environment(url: str, home: Path, options: Options) -> dict[str, str]:
    """A machine's environment: the shared database, its own home, the offline extractor."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DIGEST", "DATABASE_URL"))}
    home.mkdir(parents=True, exist_ok=True)
    env.update(DATABASE_URL=url, DIGESTD_HOME=str(home), DIGEST_EXTRACTOR="offline")
    if options.extract_processes is not None:
        env["DIGESTD_EXTRACT_PROCESSES"] = str(options.extract_processes)
    return env


@dataclass
class Machines:
    groups: list[list[subprocess.Popen[bytes]]]
    logs: list[Path]

    def dead(self) -> list[int]:
        return [p.returncode for g in self.groups for p in g if p.poll() is not None]

    def tail(self) -> str:
        return "\n".join(log.read_text(errors="replace")[-1500:] for log in self.logs)

    async def ready(self, timeout: float) -> None:
        """Every worker has opened its runtime and started its loop (its start-up line)."""
        deadline = time.monotonic() + timeout
        while not all(READY in log.read_text(errors="replace") for log in self.logs):
            if self.dead() or time.monotonic() > deadline:
                raise RuntimeError(f"a worker did not start:\n{self.tail()}")
            await asyncio.sleep(0.1)

    def cpu_seconds(self) -> float:
        """User + system time so far of every process in the machines' process groups: the
        workers and their CPU pools' processes, which inherit the group."""
        groups = {g[0].pid for g in self.groups}
        ticks = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError):
                # The fields after the command's closing parenthesis: state is the first.
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) in groups:
                    ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")


@asynccontextmanager
async def machines(
    url: str, home: Path, config: Config, options: Options
) -> AsyncIterator[Machines]:
    """The configuration's `digestd worker` processes, one process group per machine, stopped
    with SIGTERM to each group (as a service manager stops a machine's workers) on the way out."""
    started = Machines([], [])
    try:
        for machine, count in enumerate(config.machines):
            env = machine_environment(url, home / f"machine-{machine}", options)
            group: list[subprocess.Popen[bytes]] = []
            for number in range(count):
                log = home / f"machine-{machine}-worker-{number}.log"
                started.logs.append(log)
                with log.open("wb") as output:
                    group.append(
                        subprocess.Popen(
                            [sys.executable, "-m", "server.cli", "worker"],
                            cwd=REPO,
                            env=env,
                            stdout=output,
                            stderr=subprocess.STDOUT,
                            # The machine's first worker leads its group; the others join it.
                            process_group=group[0].pid if group else 0,
                        )
                    )
            started.groups.append(group)
        yield started
    finally:
        for group in started.groups:
            if any(p.poll() is None for p in group):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group[0].pid, signal.SIGTERM)
        for group in started.groups:
            for process in group:
                try:
                    await asyncio.to_thread(process.wait, 60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    await asyncio.to_thread(process.wait)


async def wait_drained(
    pool: asyncpg.Pool, backlog: Backlog, running: Machines, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    done = 0
    while time.monotonic() < deadline:
        if running.dead():
            raise RuntimeError(f"a worker exited with {running.dead()[0]}:\n{running.tail()}")
        async with pool.acquire() as connection:
            done = await connection.fetchval(
                "SELECT count(*) FROM digest_jobs WHERE id = ANY($1) AND finished_at IS NOT NULL",
                backlog.job_ids,
            )
        if done >= len(backlog.job_ids):
            return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"only {done} of {len(backlog.job_ids)} jobs ended in {timeout}s")


# What `digestd worker` prints once its runtime is open and its loops run.
READY = "digestd worker:"


def busy_jiffies() -> tuple[int, int]:
    """(busy, total) CPU time of the whole machine so far, in clock ticks."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


# --- exactly once ---------------------------------------------------------------------------


async def exactly_once(pool: asyncpg.Pool, backlog: Backlog) -> dict[str, Any]:
    async with pool.acquire() as connection:
        jobs = await connection.fetch(
            "SELECT j.id, j.status, j.attempts, j.worker_id, j.digest_id, "
            "(SELECT count(*) FROM digests d WHERE d.job_id = j.id) AS digests, "
            "(SELECT sum(d.message_count) FROM digests d WHERE d.job_id = j.id) AS covered "
            "FROM digest_jobs j WHERE j.id = ANY($1)",
            backlog.job_ids,
        )
        messages = await connection.fetchrow(
            "WITH reads AS (SELECT dm.message_id, count(*) AS n FROM digest_messages dm "
            "JOIN digests d ON d.id = dm.digest_id WHERE d.channel_id = ANY($1) "
            "GROUP BY dm.message_id) "
            "SELECT count(*) AS messages, "
            "count(*) FILTER (WHERE m.covered_revision IS DISTINCT FROM m.revision) AS uncovered, "
            "count(*) FILTER (WHERE coalesce(r.n, 0) <> 1) AS not_read_once, "
            "count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM digests d "
            "WHERE d.id = m.covered_by_digest_id AND d.channel_id = m.channel_id)) "
            "AS covered_elsewhere "
            "FROM messages m LEFT JOIN reads r ON r.message_id = m.id "
            "WHERE m.channel_id = ANY($1)",
            backlog.channel_ids,
        )
    per_worker = Counter(row["worker_id"] for row in jobs)
    return {
        "jobs_checked": len(jobs),
        "jobs_not_succeeded": sum(1 for row in jobs if row["status"] != "succeeded"),
        "jobs_attempts_not_1": sum(1 for row in jobs if row["attempts"] != 1),
        "jobs_digests_not_1": sum(1 for row in jobs if row["digests"] != 1),
        "messages_checked": messages["messages"],
        "messages_in_digests": sum(row["covered"] or 0 for row in jobs),
        "messages_uncovered": messages["uncovered"],
        "messages_not_read_once": messages["not_read_once"],
        "messages_covered_elsewhere": messages["covered_elsewhere"],
        "workers_that_ran_jobs": len(per_worker),
        "jobs_per_worker": sorted(per_worker.values(), reverse=True),
    }


def exactly_once_ok(checks: dict[str, Any], backlog: Backlog) -> bool:
    return (
        checks["jobs_checked"] == len(backlog.job_ids)
        and checks["messages_checked"] == checks["messages_in_digests"] == backlog.messages
        and not any(
            checks[key]
            for key in (
                "jobs_not_succeeded",
                "jobs_attempts_not_1",
                "jobs_digests_not_1",
                "messages_uncovered",
                "messages_not_read_once",
                "messages_covered_elsewhere",
            )
        )
    )


# --- runs -----------------------------------------------------------------------------------


async def one_run(
    url: str, pool: asyncpg.Pool, home: Path, config: Config, repeat: int, options: Options
) -> dict[str, Any]:
    export = home / "backlog.jsonl"
    messages = write_backlog(export, channel_sizes(options))
    channel_ids = await import_channels(pool, export, f"bench-workers-{repeat}-{config.name}")
    async with pool.acquire() as connection:
        # Every run digests the same messages: without this, the runs after the first would
        # find their chunks' results cached and skip the map.
        await connection.execute("TRUNCATE chunk_results")
    async with machines(url, home / f"run-{repeat}-{config.name}", config, options) as running:
        await running.ready(timeout=120)
        cpu_before = running.cpu_seconds()
        busy_before, total_before = busy_jiffies()
        started = time.perf_counter()
        backlog = await trigger_all(pool, channel_ids, messages)
        await wait_drained(pool, backlog, running, options.timeout)
        wall = time.perf_counter() - started
        busy_after, total_after = busy_jiffies()
        worker_cpu = running.cpu_seconds() - cpu_before
    async with pool.acquire() as connection:
        drain = await connection.fetchval(
            "SELECT extract(epoch FROM max(finished_at) - min(created_at))::float "
            "FROM digest_jobs WHERE id = ANY($1)",
            backlog.job_ids,
        )
    checks = await exactly_once(pool, backlog)
    cores = os.cpu_count() or 1
    row = {
        "kind": "run",
        "config": config.name,
        "repeat": repeat,
        "workers": config.workers,
        "machines": len(config.machines),
        "jobs": len(backlog.job_ids),
        "messages": messages,
        "wall_seconds": round(wall, 2),
        "drain_seconds": round(drain, 2),
        "jobs_per_s": round(len(backlog.job_ids) / drain, 3),
        "msgs_per_s": round(messages / drain, 1),
        "worker_cpu_seconds": round(worker_cpu, 1),
        "worker_cores": round(worker_cpu / wall, 2),
        "machine_busy_cores": round(
            cores * (busy_after - busy_before) / max(1, total_after - total_before), 2
        ),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        **checks,
        "exactly_once": exactly_once_ok(checks, backlog),
    }
    emit(BENCH_NAME, **row)
    return row


def summarize(runs: list[dict[str, Any]], options: Options) -> dict[str, Any]:
    """Medians per configuration and the speedups over one worker, each taken within a repeat."""
    cores = os.cpu_count() or 1
    baseline = {r["repeat"]: r["jobs_per_s"] for r in runs if r["config"] == "1"}
    per_config: dict[str, Any] = {}
    for config in options.configs:
        rows = [r for r in runs if r["config"] == config.name]
        speedups = [
            r["jobs_per_s"] / baseline[r["repeat"]] for r in rows if r["repeat"] in baseline
        ]
        per_config[config.name] = {
            "workers": config.workers,
            "machines": len(config.machines),
            "jobs_per_s": spread([r["jobs_per_s"] for r in rows], higher_is_better=True),
            "msgs_per_s_median": round(statistics.median(r["msgs_per_s"] for r in rows), 1),
            "drain_seconds_median": round(statistics.median(r["drain_seconds"] for r in rows), 2),
            "worker_cores_median": round(statistics.median(r["worker_cores"] for r in rows), 2),
            "machine_busy_cores_median": round(
                statistics.median(r["machine_busy_cores"] for r in rows), 2
            ),
            "speedup": spread(speedups, higher_is_better=True) if speedups else None,
        }
    # One machine's configurations up to the cores, fewest workers first: does each step add?
    single = sorted(
        (c for c in options.configs if len(c.machines) == 1 and c.workers <= cores),
        key=lambda c: c.workers,
    )
    medians = [per_config[c.name]["jobs_per_s"]["median"] for c in single]
    return {
        "kind": "summary",
        "cores": cores,
        "repeats": options.repeats,
        "configs": per_config,
        "speedup_median": {
            name: (figures["speedup"] or {}).get("median") for name, figures in per_config.items()
        },
        "grows_until_cores": len(medians) > 1
        and all(later >= GROWTH * earlier for earlier, later in itertools.pairwise(medians)),
        "growth_step": GROWTH,
        "exactly_once": all(r["exactly_once"] for r in runs),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "finished_at": utc_now(),
    }


async def run(options: Options, database_url: str | None) -> int:
    with tempfile.TemporaryDirectory(prefix="digestd-bench-workers-") as directory:
        home = Path(directory)
        if database_url:
            async with own_database(database_url, f"digestd_bench_workers_{os.getpid()}") as url:
                return await run_on(url, home, options, "server")
        with bench_database(None) as (url, _):
            return await run_on(url, home, options, "embedded")


async def run_on(url: str, home: Path, options: Options, database: str) -> int:
    connection = await connect(url)
    try:
        await migrate(connection)
    finally:
        await connection.close()
    sizes = channel_sizes(options)
    emit(
        BENCH_NAME,
        kind="setup",
        database=database,
        postgres=await postgres_version(url),
        channels=options.channels,
        messages=sum(sizes),
        messages_per_channel=[min(sizes), max(sizes)],
        configs=[c.name for c in options.configs],
        repeats=options.repeats,
        extract_processes=options.extract_processes,
        machine=machine_details(),
        started_at=utc_now(),
    )
    pool = await create_pool(url, max_size=4)
    runs: list[dict[str, Any]] = []
    try:
        for repeat in range(1, options.repeats + 1):
            # Alternate the order so neither end of the list always runs on a warmer machine.
            order = options.configs if repeat % 2 else tuple(reversed(options.configs))
            for config in order:
                runs.append(await one_run(url, pool, home, config, repeat, options))
    finally:
        await pool.close()
    summary = summarize(runs, options)
    emit(BENCH_NAME, **summary)
    return 0 if summary["exactly_once"] else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="12 small channels, 1, 2 and 1+1")
    parser.add_argument(
        "--database-url", help="a server: the bench creates (and drops) its own database there"
    )
    parser.add_argument("--channels", type=int, help="channel jobs in the backlog (default 200)")
    parser.add_argument("--messages", help="messages per channel, MIN-MAX (default 300-1000)")
    parser.add_argument("--configs", help="worker processes per machine (default 1,2,4,2+2)")
    parser.add_argument("--repeats", type=int, help="runs of each configuration (default 2)")
    parser.add_argument(
        "--extract-processes", type=int, help="DIGESTD_EXTRACT_PROCESSES (default: as shipped)"
    )
    args = parser.parse_args()
    low, high = (args.messages or ("30-60" if args.quick else "300-1000")).split("-")
    options = Options(
        channels=args.channels or (12 if args.quick else 200),
        min_messages=int(low),
        max_messages=int(high),
        configs=tuple(
            Config.parse(text)
            for text in (args.configs or ("1,2,1+1" if args.quick else "1,2,4,2+2")).split(",")
        ),
        repeats=args.repeats or (1 if args.quick else 2),
        extract_processes=args.extract_processes,
        timeout=300.0 if args.quick else 3600.0,
    )
    return asyncio.run(run(options, args.database_url))


if __name__ == "__main__":
    sys.exit(main())
