"""bench/scale.py's end-to-end mode: a generated channel written as JSONL, imported with
`digestd import` and digested by `digestd worker` processes until no message is left uncovered.

Per size, in a database of its own (created and dropped: on the embedded server the bench starts,
or on `--database-url`'s server): the JSONL file is written first (not timed), then
`digestd import FILE --channel bench` is timed (`import_seconds`), then `digestd digest bench`
queues the coverage digest and `--workers` `digestd worker` processes (the offline extractor, the
default DIGESTD_MAX_WINDOW_MESSAGES unless `--cap`) are started; `digest_seconds` runs from the
trigger until the channel has no active job and its backlog is covered. A backlog over the cap is
cut into coverage slices that the workers take at once (runner/digests/split.py).

CPU: `digest_cpu_seconds` adds the workers' CPU time (their own, their CPU-pool processes' and
any child they reaped: /proc/PID/stat, sampled every second and read once more before they stop)
and the CPU time of the PostgreSQL processes serving this size's database (the backends and
background workers whose title names it), so old and new code compare on a shared machine where
wall time also counts the neighbours' work; `digest_cpu_us_per_message` divides it by the
channel's messages.

Memory: each worker's peak RSS is its VmHWM (/proc/PID/status) read just before it is stopped;
its CPU-pool processes (children) are sampled every second and their largest VmHWM kept. The
import's peak is its ru_maxrss from wait4. Correctness, checked after every run: no message
left uncovered, none read by two digests (`exactly_once`). `output_sha256`: a hash of what the
digests wrote (digests, their items, coverage, conversations, parents, entities, memory; each row
as JSON without its timestamps), equal for equal output when one worker takes the slices in
order (with several, which slice stores first changes ids and the memory's history).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg

from bench._support import (
    bench_database,
    emit,
    machine_details,
    stop_processes,
    utc_now,
    write_jsonl,
)

TARGET_SECONDS = 600.0
TARGET_WORKER_RSS_MB = 600.0
CHANNEL = "bench"
# How often a run in progress prints what is covered so far.
PROGRESS_SECONDS = 60.0
ACTIVE = ("queued", "running")
_TICKS = os.sysconf("SC_CLK_TCK")
# What a digest writes, hashed for `output_sha256`; each row as JSON without the columns that
# hold the clock (created_at and the like), so equal output hashes equal.
OUTPUT_TABLES = (
    "digests",
    "topics",
    "decisions",
    "action_items",
    "open_questions",
    "links",
    "artifacts",
    "knowledge_items",
    "digest_messages",
    "messages",
    "conversations",
    "entities",
    "entity_mentions",
    "entity_item_refs",
    "topic_profiles",
    "topic_profile_digests",
    "topic_profile_items",
    "channel_items",
    "channel_item_mentions",
    "channel_item_events",
)
CLOCK_COLUMNS = ("created_at", "updated_at", "last_used_at", "revised_at")


def _with_database(url: str, name: str) -> str:
    return urlsplit(url)._replace(path=f"/{name}").geturl()


def _vm_hwm_mb(pid: int) -> float:
    """A live process's peak resident set (VmHWM), in MB; 0 once it is gone."""
    with suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _cpu_seconds(pid: int, *, reaped: bool = False) -> float | None:
    """A live process's CPU time (user + system), with its reaped children's when `reaped`;
    None once it is gone."""
    with suppress(OSError, IndexError, ValueError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])
        if reaped:
            ticks += int(fields[13]) + int(fields[14])
        return ticks / _TICKS
    return None


def _postgres_processes(database: str) -> list[int]:
    """The PostgreSQL processes whose title names `database`: its backends (and autovacuum's)."""
    needle = database.encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with suppress(OSError):
                title = (entry / "cmdline").read_bytes()
                if title.startswith(b"postgres") and needle in title:
                    found.append(int(entry.name))
    return found


class _CpuMeter:
    """The last CPU time seen of each process sampled, summed: a process that ends between two
    samples loses at most its last second."""

    def __init__(self) -> None:
        self.seen: dict[int, float] = {}

    def sample(self, pid: int, *, reaped: bool = False) -> None:
        seconds = _cpu_seconds(pid, reaped=reaped)
        if seconds is not None:
            self.seen[pid] = max(self.seen.get(pid, 0.0), seconds)

    def total(self, since: dict[int, float] | None = None) -> float:
        since = since or {}
        return sum(seconds - since.get(pid, 0.0) for pid, seconds in self.seen.items())


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _environment(url: str, home: Path, cap: int | None) -> dict[str, str]:
    environment = {
        **os.environ,
        "DATABASE_URL": url,
        "DIGESTD_HOME": str(home),
        "DIGEST_EXTRACTOR": "offline",
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
    }
    if cap is not None:
        environment["DIGESTD_MAX_WINDOW_MESSAGES"] = str(cap)
    return environment


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "server.cli", *args]


async def _active_jobs(url: str) -> int:
    """Channel jobs queued or running: polled every second, so it reads only the job table (a
    count of uncovered messages would scan the channel each second, CPU the digest then pays)."""
    connection = await asyncpg.connect(url)
    try:
        return int(
            await connection.fetchval(
                "SELECT count(*) FROM digest_jobs WHERE kind = 'channel'"
                " AND status IN ('queued', 'running')"
            )
        )
    finally:
        await connection.close()


async def _progress(url: str) -> tuple[int, list[dict[str, Any]]]:
    """(uncovered messages, every channel job's id/status/worker/options)."""
    connection = await asyncpg.connect(url)
    try:
        uncovered = await connection.fetchval(
            "SELECT count(*) FROM messages WHERE covered_revision IS DISTINCT FROM revision"
        )
        jobs = await connection.fetch(
            "SELECT id, status, worker_id, options ? 'slice' AS slice FROM digest_jobs"
            " WHERE kind = 'channel' ORDER BY id"
        )
        return int(uncovered), [dict(row) for row in jobs]
    finally:
        await connection.close()


async def _output_sha256(url: str) -> tuple[str, dict[str, str]]:
    """A hash of everything the digests wrote, and one per table (to find what differs)."""
    connection = await asyncpg.connect(url)
    try:
        per_table: dict[str, str] = {}
        whole = hashlib.sha256()
        for table in OUTPUT_TABLES:
            clock = " - ".join(f"'{column}'" for column in CLOCK_COLUMNS)
            rows = await connection.fetch(
                f"SELECT (to_jsonb(t) - {clock})::text AS row FROM {table} t ORDER BY 1"
            )
            digest = hashlib.sha256()
            for row in rows:
                digest.update(row["row"].encode())
                digest.update(b"\n")
            per_table[table] = digest.hexdigest()[:12]
            whole.update(f"{table}:{digest.hexdigest()}\n".encode())
        return whole.hexdigest()[:16], per_table
    finally:
        await connection.close()


async def _read_twice(url: str) -> int:
    connection = await asyncpg.connect(url)
    try:
        return int(
            await connection.fetchval(
                "SELECT count(*) FROM (SELECT message_id FROM digest_messages"
                " GROUP BY message_id HAVING count(*) > 1) twice"
            )
        )
    finally:
        await connection.close()


async def _create(admin_url: str, name: str, *, drop: bool = False) -> None:
    connection = await asyncpg.connect(admin_url)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not drop:
            await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()


def run_size(
    admin_url: str, size: int, workers: int, cap: int | None, scratch: Path
) -> dict[str, Any]:
    name = f"digestd_bench_scale_{os.getpid()}_{size}"
    url = _with_database(admin_url, name)
    asyncio.run(_create(admin_url, name))
    try:
        return _run(url, size, workers, cap, scratch)
    finally:
        asyncio.run(_create(admin_url, name, drop=True))


def _run(url: str, size: int, workers: int, cap: int | None, scratch: Path) -> dict[str, Any]:
    environment = _environment(url, scratch / "home", cap)
    source = scratch / f"channel-{size}.jsonl"
    jsonl_bytes = write_jsonl(source, size, channel=CHANNEL)
    subprocess.run(_cli("migrate"), env=environment, check=True, capture_output=True)

    started = time.perf_counter()
    importer = subprocess.Popen(
        _cli("import", str(source), "--channel", CHANNEL),
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(importer.pid, 0)
    import_seconds = time.perf_counter() - started
    if status != 0:
        raise RuntimeError(f"digestd import failed: {importer.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
    import_peak_mb = round(usage.ru_maxrss / 1024, 1)
    source.unlink()
    # Printed at once: a million-message digest runs for minutes on a busy machine.
    emit(
        "scale",
        kind="import",
        mode="end_to_end",
        messages=size,
        import_seconds=round(import_seconds, 2),
        import_msgs_per_s=round(size / import_seconds),
        import_peak_rss_mb=import_peak_mb,
    )

    triggered = time.perf_counter()
    subprocess.run(_cli("digest", CHANNEL), env=environment, check=True, capture_output=True)
    logs = [(scratch / f"worker-{size}-{n}.log").open("wb") for n in range(workers)]
    processes = [
        subprocess.Popen(_cli("worker"), env=environment, stdout=subprocess.DEVNULL, stderr=log)
        for log in logs
    ]
    pool_peaks: dict[int, dict[int, float]] = {p.pid: {} for p in processes}
    worker_peaks: dict[int, float] = {}
    database = urlsplit(url).path.lstrip("/")
    worker_cpu, postgres_cpu = _CpuMeter(), _CpuMeter()
    # The backends already running (none but autovacuum's, usually) count from here.
    for pid in _postgres_processes(database):
        postgres_cpu.sample(pid)
    postgres_before = dict(postgres_cpu.seen)

    def sample() -> None:
        for process in processes:
            worker_peaks[process.pid] = max(
                worker_peaks.get(process.pid, 0.0), _vm_hwm_mb(process.pid)
            )
            worker_cpu.sample(process.pid, reaped=True)
            for child in _children(process.pid):
                worker_cpu.sample(child)
                known = pool_peaks[process.pid]
                known[child] = max(known.get(child, 0.0), _vm_hwm_mb(child))
        for pid in _postgres_processes(database):
            postgres_cpu.sample(pid)

    reported = triggered
    try:
        while True:
            time.sleep(1.0)
            for process in processes:
                if process.poll() is not None:
                    raise RuntimeError(f"worker {process.pid} exited with {process.returncode}")
            sample()
            if asyncio.run(_active_jobs(url)) == 0:
                break
            if time.perf_counter() - reported >= PROGRESS_SECONDS:
                reported = time.perf_counter()
                uncovered, jobs = asyncio.run(_progress(url))
                emit(
                    "scale",
                    kind="progress",
                    mode="end_to_end",
                    messages=size,
                    seconds=round(reported - triggered, 1),
                    uncovered=uncovered,
                    jobs_done=sum(1 for job in jobs if job["status"] not in ACTIVE),
                    jobs=len(jobs),
                    worker_peak_rss_mb=[worker_peaks.get(p.pid, 0.0) for p in processes],
                    pool_peak_rss_mb=[
                        max(pool_peaks[p.pid].values(), default=0.0) for p in processes
                    ],
                )
        digest_seconds = time.perf_counter() - triggered
        sample()
    finally:
        stop_processes(processes, 60)
        for log in logs:
            log.close()
    uncovered, jobs = asyncio.run(_progress(url))
    output_sha256, per_table = asyncio.run(_output_sha256(url))
    digest_cpu = worker_cpu.total() + postgres_cpu.total(postgres_before)
    read_twice = asyncio.run(_read_twice(url))
    slices = [job for job in jobs if job["slice"]]
    by_worker: dict[str, int] = {}
    for job in slices:
        by_worker[str(job["worker_id"])] = by_worker.get(str(job["worker_id"]), 0) + 1
    total_seconds = import_seconds + digest_seconds
    worker_rss = [worker_peaks[p.pid] for p in processes]
    pool_rss = [max(pool_peaks[p.pid].values(), default=0.0) for p in processes]
    return {
        "messages": size,
        "workers": workers,
        "cap": cap,
        "jsonl_mb": round(jsonl_bytes / 1e6, 1),
        "import_seconds": round(import_seconds, 2),
        "import_msgs_per_s": round(size / import_seconds),
        "import_peak_rss_mb": import_peak_mb,
        "digest_seconds": round(digest_seconds, 2),
        "digest_msgs_per_s": round(size / digest_seconds),
        "digest_cpu_seconds": round(digest_cpu, 1),
        "digest_worker_cpu_seconds": round(worker_cpu.total(), 1),
        "digest_postgres_cpu_seconds": round(postgres_cpu.total(postgres_before), 1),
        "digest_cpu_us_per_message": round(1e6 * digest_cpu / size),
        "total_seconds": round(total_seconds, 2),
        "msgs_per_s": round(size / total_seconds),
        "jobs": len(jobs),
        "slices": len(slices),
        "slices_per_worker": sorted(by_worker.values(), reverse=True),
        "failed_jobs": sum(1 for job in jobs if job["status"] not in ("succeeded", "partial")),
        "worker_peak_rss_mb": worker_rss,
        "pool_peak_rss_mb": pool_rss,
        "uncovered": uncovered,
        "exactly_once": uncovered == 0 and read_twice == 0,
        "under_10_min": total_seconds < TARGET_SECONDS,
        "under_600_mb": max(worker_rss) < TARGET_WORKER_RSS_MB,
        "output_sha256": output_sha256,
        "output_sha256_by_table": per_table,
    }


def main(
    sizes: list[int], workers: int, cap: int | None, database_url: str | None, quick: bool
) -> int:
    with (
        bench_database(database_url) as (admin_url, _),
        tempfile.TemporaryDirectory(prefix="digestd-scale-") as scratch,
    ):
        emit(
            "scale",
            kind="setup",
            mode="end_to_end",
            sizes=sizes,
            workers=workers,
            cap=cap,
            quick=quick,
            database="server at --database-url" if database_url else "embedded (pgserver)",
            started=utc_now(),
            **machine_details(),
        )
        runs = []
        for size in sizes:
            figures = run_size(admin_url, size, workers, cap, Path(scratch))
            figures["load_average"] = [round(x, 2) for x in os.getloadavg()]
            runs.append(figures)
            emit("scale", kind="run", mode="end_to_end", **figures)
        largest = runs[-1]
        emit(
            "scale",
            kind="summary",
            mode="end_to_end",
            messages=largest["messages"],
            total_seconds=largest["total_seconds"],
            worker_peak_rss_mb=max(largest["worker_peak_rss_mb"]),
            pool_peak_rss_mb=max(largest["pool_peak_rss_mb"]),
            exactly_once=all(run["exactly_once"] for run in runs),
            target_seconds_met=largest["under_10_min"],
            target_rss_met=largest["under_600_mb"],
        )
    return 0
