"""Shared by the bench/ scripts: JSON line output, the benchmark database (embedded by default, or
a database of its own on a given server), repeat statistics, machine details and a deterministic
generator of realistic-ish chat messages, and the stop of worker processes.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import json
import os
import platform
import pstats
import random
import signal
import statistics
import subprocess
import tempfile
import warnings
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent


def emit(bench: str, **fields: Any) -> None:
    """One JSON line on stdout, flushed at once so a slow run shows progress."""
    print(json.dumps({"bench": bench, **fields}, default=str), flush=True)


def stop_processes(processes: Sequence[subprocess.Popen[Any]], timeout: float) -> None:
    """SIGTERM to each process still running, then wait for each, killing one that is not gone
    within `timeout` seconds (all are signalled first, so they stop side by side)."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def spread(samples: Sequence[float], *, higher_is_better: bool = False) -> dict[str, Any]:
    """Best, median and the min..max of repeated measurements (shared machines are noisy, so
    the best run is the figure least disturbed by neighbours; the spread shows how noisy)."""
    ordered = sorted(samples)
    best = ordered[-1] if higher_is_better else ordered[0]
    return {
        "best": round(best, 6),
        "median": round(statistics.median(ordered), 6),
        "min": round(ordered[0], 6),
        "max": round(ordered[-1], 6),
        "runs": len(ordered),
    }


@contextlib.contextmanager
def bench_database(url: str | None) -> Iterator[tuple[str, Path | None]]:
    """(database URL, embedded home or None). Without `url`, an embedded PostgreSQL (pgserver)
    in a fresh temporary directory, stopped and deleted afterwards, so a benchmark never touches
    the user's own data; with `url`, that database as it is (scripts add their own rows)."""
    if url:
        yield url, None
        return
    with tempfile.TemporaryDirectory(prefix="digestd-bench-") as home:
        from db.engine import embedded_database_url

        try:
            yield embedded_database_url(Path(home)), Path(home)
        finally:
            # Stop the server before its directory is deleted: pgserver would otherwise stop
            # it at interpreter exit, when `pg_ctl stop` no longer finds the data directory.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import pgserver

                pgserver.get_server(Path(home) / "pgdata").cleanup()


@contextlib.asynccontextmanager
async def own_database(server_url: str, name: str) -> AsyncIterator[str]:
    """The URL of a new database `name` on the server of `server_url`, dropped afterwards even
    when the benchmark fails (WITH (FORCE): a worker process left behind cannot keep it)."""
    from urllib.parse import urlsplit

    from db.engine import connect

    admin = await connect(server_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield urlsplit(server_url)._replace(path=f"/{name}").geturl()
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


def machine_details() -> dict[str, Any]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    ram_gb = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram_gb": ram_gb,
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


async def postgres_version(url: str) -> str:
    from db.engine import connect

    connection = await connect(url)
    try:
        return str(await connection.fetchval("SHOW server_version"))
    finally:
        await connection.close()


# --- realistic-ish chat ----------------------------------------------------------------------

_AUTHORS = [
    "alice",
    "bob",
    "carol",
    "dave",
    "erin",
    "frank",
    "grace",
    "heidi",
    "ivan",
    "judy",
    "mallory",
    "niaj",
    "olivia",
    "peggy",
    "rupert",
    "sybil",
    "trent",
    "victor",
    "walter",
    "zoé",
]
_OPENERS = [
    "I think",
    "Looks like",
    "FWIW",
    "Quick question:",
    "Heads up,",
    "Not sure but",
    "Yeah,",
    "Honestly",
    "So",
    "Btw",
    "+1,",
    "Hmm,",
    "ok so",
    "Update:",
    "Reminder:",
]
_SUBJECTS = [
    "the deploy",
    "the migration",
    "staging",
    "the flaky test",
    "the cache layer",
    "CI",
    "the release branch",
    "the API gateway",
    "our Postgres replica",
    "the worker pool",
    "the new dashboard",
    "the retry logic",
    "the auth middleware",
    "the Helm chart",
    "the docs",
]
_PREDICATES = [
    "is failing again after the last merge",
    "needs a rollback before Friday",
    "looks fine on my machine",
    "times out under load",
    "should be behind a feature flag",
    "was fixed in the latest patch",
    "leaks connections when the pool is full",
    "broke because of a config typo",
    "could use a second review",
    "is blocked on infra",
    "doubles the p99 latency",
    "works if you bump the memory limit",
    "is ready to ship",
]
_TAILS = [
    "",
    "",
    "",
    " 🤔",
    " 🎉",
    " — any objections?",
    " see the thread above.",
    " cc @ops",
    " Let's decide tomorrow.",
    " I'll take it.",
    " (again)",
    " will update the ticket.",
]
_SNIPPETS = [
    "```\nkubectl rollout undo deployment/api --to-revision=42\n```",
    "```yaml\nresources:\n  limits:\n    memory: 512Mi\n```",
    "`SELECT count(*) FROM jobs WHERE status = 'queued';`",
    "```python\nasync with pool.acquire() as conn:\n    await conn.execute(sql)\n```",
]
_LINKS = [
    "https://github.com/example/platform/pull/{n}",
    "https://ci.example.com/build/{n}",
    "https://docs.example.com/runbooks/{n}",
]


def chat_text(rng: random.Random, n: int) -> str:
    """One message: a sentence or three, sometimes a link, a snippet or a mention; lengths
    vary from a word to a paragraph like a real team channel."""
    roll = rng.random()
    if roll < 0.12:
        return rng.choice(["ok", "thanks!", "lgtm", "+1", "on it", "👍", "same here", "done"])
    parts = []
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
        parts.append(
            f"{rng.choice(_OPENERS)} {rng.choice(_SUBJECTS)} {rng.choice(_PREDICATES)}"
            f"{rng.choice(_TAILS)}"
        )
    text = " ".join(parts)
    if roll > 0.93:
        text += "\n" + rng.choice(_SNIPPETS)
    elif roll > 0.85:
        text += " " + rng.choice(_LINKS).format(n=1000 + n % 9000)
    elif roll > 0.80:
        text = f"@{rng.choice(_AUTHORS)} {text}"
    return text


def chat_messages(count: int, *, seed: int = 5, channel: str = "bench") -> Iterator[dict[str, Any]]:
    """`count` JSONL records (`id`, `channel`, `author`, `ts`, `text`, sometimes `reply_to`),
    seconds to minutes apart, deterministic for a seed."""
    rng = random.Random(seed)
    ts = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
    for n in range(count):
        ts += timedelta(seconds=rng.randint(5, 240))
        record: dict[str, Any] = {
            "id": str(1_000_000 + n),
            "channel": channel,
            "author": rng.choice(_AUTHORS),
            "ts": ts.isoformat().replace("+00:00", "Z"),
            "text": chat_text(rng, n),
        }
        if n > 10 and rng.random() < 0.15:
            record["reply_to"] = str(1_000_000 + n - rng.randint(1, 10))
        yield record


def write_jsonl(path: Path, count: int, *, channel: str = "bench") -> int:
    """Write the generated channel as JSONL; returns the file size in bytes."""
    with path.open("w", encoding="utf-8") as handle:
        for record in chat_messages(count, channel=channel):
            handle.write(json.dumps(record, ensure_ascii=False))
            handle.write("\n")
    return path.stat().st_size


def generated_window(count: int, *, seed: int = 5) -> Any:
    """The generated channel as the pipeline's plain-data `runner.core.window.Window` (what the
    worker loads from the database), text normalized as on import."""
    from runner.core.window import Window, WindowMessage
    from runner.grounding.normalize import normalize_text
    from runner.importers.dates import parse_iso_timestamp

    messages = tuple(
        WindowMessage(
            message_id=record["id"],
            author=record["author"],
            ts=parse_iso_timestamp(record["ts"]),
            normalized_text=normalize_text(record["text"]),
            reply_to=record.get("reply_to"),
        )
        for record in chat_messages(count, seed=seed)
    )
    return Window(channel_name="bench", messages=messages)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def top_functions(profiler: cProfile.Profile, limit: int = 18) -> list[dict[str, Any]]:
    """The functions with the most own time (tottime), where the CPU actually went."""
    stats = pstats.Stats(profiler, stream=io.StringIO())
    rows = []
    for (filename, line, name), (_, calls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        short = filename.replace(str(REPO) + "/", "").split("site-packages/")[-1]
        rows.append(
            {
                "function": f"{short}:{line}:{name}",
                "calls": calls,
                "tottime": round(tottime, 3),
                "cumtime": round(cumtime, 3),
            }
        )
    rows.sort(key=lambda row: row["tottime"], reverse=True)
    return rows[:limit]
