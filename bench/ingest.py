"""Ingest benchmark: a generated JSONL channel through `digestd import` vs the database's own
write path fed from memory, and vs a per-row ORM insert (SQLModel/SQLAlchemy) of the same messages
into the same `messages` table.

    /tmp/venv/bin/python bench/ingest.py [--quick] [--messages 200000] [--orm-messages 20000]
                                         [--repeats 3] [--database-url URL] [--profile]

Each repeat measures, on the same file and database:
- `cli`: `digestd import FILE` as a subprocess, the path a user runs. `wall` counts the whole
  process (interpreter start, imports, joining the database); `import` is the rate the CLI
  itself reports (parse, normalize, COPY, upsert; without the process start).
- `import_path`: runner.importers.ingest.import_path in this process (the same code without the
  CLI), into a new channel: a channel's first import, written by direct COPY into `messages`.
- `import_path_staging`: the same into a channel that already holds one (other) message, so every
  batch goes through the staging table and the upsert (the path of any later import).
- `db_direct_copy` and `db_staging_upsert`: the database's own path, fed from memory: the same
  rows already parsed and normalized (tuples), written batch after batch by db.ingest.write_batch
  on one connection, so the same statements as the importer's and no Python parsing at all;
  `db_direct_copy` into a new channel, `db_staging_upsert` with the direct path switched off.
  `import_path / db_direct_copy` and `import_path_staging / db_staging_upsert` say how close
  the importer comes to the database's own rate (target >= 0.8). The importer's runs also
  print `write_seconds` (its batches' writes, first statement to commit: about the database
  peer's seconds when parsing does not starve the writes) and `parser_waited_seconds` (the
  parser waiting for the write in flight: the database is then the bottleneck).
- `orm_per_row`: SQLModel AsyncSession, one INSERT per message (add + flush each row), commit
  every 1,000 rows; on a subset (`--orm-messages`, default 20,000) because it is slow. It parses
  with the same importer and normalizes like the real path, so only the write path differs.
- `orm_batched`: the same ORM, `add_all` + one commit per 1,000 rows (SQLAlchemy batches these
  into multi-row INSERTs): a stronger ORM peer, printed for context.
Every measured run imports into a fresh channel, so each is 100% new rows (the upsert's insert
path); the channel is deleted afterwards. The ratio is `cli import rate / orm_per_row rate`
(rates are messages/s, so the subset does not bias it); `import_path_ratio` is the
same for the in-process import (target >= 30). Without --database-url the database is
an embedded PostgreSQL in a temporary directory. The ORM needs greenlet (`sqlalchemy[asyncio]`);
without it the ORM rows say `skipped` and a raw per-row asyncpg INSERT peer still runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

# Run as a script, bench/ is first on sys.path; import everything as `bench.*` from the
# repository root instead, like the other scripts.
_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

import db.ingest
from bench._support import (
    REPO,
    bench_database,
    emit,
    machine_details,
    postgres_version,
    spread,
    top_functions,
    utc_now,
    write_jsonl,
)
from db.engine import connect, create_pool
from db.ingest import BATCH_SIZE, MessageIngestor, write_batch
from db.migrate import migrate
from runner.grounding.normalize import normalize_text
from runner.importers.detect import iter_records
from runner.importers.ingest import import_path
from runner.importers.records import ParsedMessage

BENCH_NAME = "ingest"
ORM_COMMIT_EVERY = 1000
TARGET_RATE = 100_000
TARGET_RATIO = 30.0
TARGET_OF_DATABASE = 0.8
_CLI_RATE = re.compile(r"accepted.*?;\s*([\d.]+)s \(([\d,]+) msg/s\)")


def parsed_messages(path: Path, limit: int) -> list[ParsedMessage]:
    """The first `limit` messages as the importer parses them (the ORM peers' input)."""
    out: list[ParsedMessage] = []
    for record in iter_records(path):
        if isinstance(record, ParsedMessage):
            out.append(record)
            if len(out) >= limit:
                break
    return out


async def create_channel(url: str, name: str) -> int:
    connection = await connect(url)
    try:
        return int(
            await connection.fetchval("INSERT INTO channels (name) VALUES ($1) RETURNING id", name)
        )
    finally:
        await connection.close()


async def drop_channel(url: str, name: str) -> int:
    """Delete the run's channel and its messages; returns how many messages it held."""
    connection = await connect(url)
    try:
        count = await connection.fetchval(
            "SELECT count(*) FROM messages m JOIN channels c ON c.id = m.channel_id "
            "WHERE c.name = $1 AND c.server_id IS NULL",
            name,
        )
        # Without the foreign keys' ON DELETE actions: each deleted message would otherwise
        # look for rows pointing at it in every referencing column, `messages.parent_id`
        # included, which has no index (a scan of `messages` per row: hours at 200,000). The
        # bench's channels are never digested, so nothing points at their messages.
        async with connection.transaction():
            await connection.execute("SET LOCAL session_replication_role = replica")
            await connection.execute(
                "DELETE FROM messages WHERE channel_id IN "
                "(SELECT id FROM channels WHERE name = $1 AND server_id IS NULL)",
                name,
            )
            await connection.execute(
                "DELETE FROM channels WHERE name = $1 AND server_id IS NULL", name
            )
        # Keep the table's statistics and visibility map like a steady-state database's.
        await connection.execute("VACUUM ANALYZE messages")
        return int(count or 0)
    finally:
        await connection.close()


def cli_command() -> list[str]:
    script = Path(sys.executable).with_name("digestd")
    if script.exists():
        return [str(script)]
    found = shutil.which("digestd")
    return [found] if found else [sys.executable, "-m", "server.cli"]


def run_cli_import(path: Path, channel: str, url: str, home: Path | None) -> dict[str, Any]:
    """`digestd import` in a subprocess, configured the way a user would: DIGESTD_HOME of the
    embedded server (it joins the running one), or DATABASE_URL."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DIGESTD_HOME")}
    if home is not None:
        env["DIGESTD_HOME"] = str(home)
    else:
        env["DATABASE_URL"] = url
    started = time.perf_counter()
    completed = subprocess.run(
        [*cli_command(), "import", str(path), "--channel", channel],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"digestd import failed: {completed.stderr[-2000:]}")
    match = _CLI_RATE.search(completed.stdout)
    if match is None:
        raise RuntimeError(f"unexpected digestd import output: {completed.stdout[:500]}")
    return {"wall_seconds": wall, "import_seconds": float(match[1])}


@contextlib.contextmanager
def timed_writes() -> Iterator[dict[str, float]]:
    """Time, during the block, every batch write of db.ingest (`write`: from its first
    statement to its commit, as this process sees it) and every wait of the parser for the
    write in flight (`waited`). A batch written in about the time the database's own path
    takes for it means parsing does not starve the writes (their round trips advance only
    when the parse loop yields); a long `waited` means the database is the bottleneck."""
    totals = {"write": 0.0, "waited": 0.0, "batches": 0.0}
    write_batch, wait = db.ingest.write_batch, MessageIngestor._wait_in_flight

    async def timed_write(*args: Any) -> Any:
        started = time.perf_counter()
        try:
            return await write_batch(*args)
        finally:
            totals["write"] += time.perf_counter() - started
            totals["batches"] += 1

    async def timed_wait(self: MessageIngestor) -> None:
        started = time.perf_counter()
        try:
            await wait(self)
        finally:
            totals["waited"] += time.perf_counter() - started

    db.ingest.write_batch = timed_write  # type: ignore[assignment]
    MessageIngestor._wait_in_flight = timed_wait  # type: ignore[method-assign]
    try:
        yield totals
    finally:
        db.ingest.write_batch = write_batch  # type: ignore[assignment]
        MessageIngestor._wait_in_flight = wait  # type: ignore[method-assign]


async def run_import_path(path: Path, channel: str, url: str, profile: bool) -> dict[str, Any]:
    pool = await create_pool(url, max_size=2)
    profiler = cProfile.Profile() if profile else None
    try:
        with timed_writes() as writes:
            started = time.perf_counter()
            if profiler:
                profiler.enable()
            report = await import_path(pool, path, channel=channel)
            if profiler:
                profiler.disable()
            seconds = time.perf_counter() - started
    finally:
        await pool.close()
    result: dict[str, Any] = {
        "seconds": seconds,
        "accepted": report.accepted,
        "inserted": report.inserted,
        "rejected": report.rejected,
        "batches": int(writes["batches"]),
        "write_seconds": round(writes["write"], 3),
        "parser_waited_seconds": round(writes["waited"], 3),
    }
    if profiler:
        result["profile"] = top_functions(profiler)
    return result


async def seed_channel(url: str, name: str) -> int:
    """A channel holding one message whose id the file does not use: not a first import."""
    channel_id = await create_channel(url, name)
    connection = await connect(url)
    try:
        await connection.execute(
            "INSERT INTO messages (channel_id, external_id, author, ts, raw_text, "
            "normalized_text) VALUES ($1, 'seed', 'seed', now(), 'seed', 'seed')",
            channel_id,
        )
    finally:
        await connection.close()
    return channel_id


def message_columns(m: ParsedMessage) -> tuple[Any, ...]:
    """A message's values for the columns every peer inserts after `channel_id`: external id,
    author, ts, reply_to, raw text, normalized text, attachments."""
    return (
        m.external_id,
        m.author,
        m.ts,
        m.reply_to,
        m.text,
        normalize_text(m.text),
        m.attachments,
    )


def database_rows(messages: list[ParsedMessage], channel_id: int) -> list[tuple[Any, ...]]:
    """The rows db.ingest.MessageIngestor builds for these messages (seq within the batch,
    channel, then `message_columns`), built before the clock starts."""
    return [
        (index % BATCH_SIZE, channel_id, *message_columns(m)) for index, m in enumerate(messages)
    ]


async def run_database_path(
    url: str, rows: list[tuple[Any, ...]], channel_id: int, *, direct: bool
) -> float:
    """Seconds to write `rows` batch after batch through db.ingest.write_batch: the database's
    own path, without parsing (one connection, one batch at a time, as the importer's writer)."""
    pool = await create_pool(url, max_size=1)
    modes: dict[int, bool] = {} if direct else {channel_id: False}
    try:
        async with pool.acquire() as connection:
            started = time.perf_counter()
            for start in range(0, len(rows), BATCH_SIZE):
                await write_batch(connection, rows[start : start + BATCH_SIZE], modes)
            return time.perf_counter() - started
    finally:
        await pool.close()


# --- ORM peers -------------------------------------------------------------------------------


def orm_available() -> str | None:
    """None when the SQLAlchemy asyncio extension can run, else why not."""
    try:
        import greenlet  # noqa: F401
    except ImportError:
        return "greenlet is not installed (pip install 'sqlalchemy[asyncio]')"
    return None


def sqlalchemy_url(url: str) -> str:
    """The asyncpg URL in SQLAlchemy's spelling: same driver as digestd, so only the ORM
    layer differs between the peers."""
    return re.sub(r"^postgres(ql)?://", "postgresql+asyncpg://", url)


@functools.cache
def orm_message_model() -> type[Any]:
    """The SQLModel class of `messages` as an ORM user would write it for inserts (only the
    columns an insert sets; the database fills the rest), declared once per process in a
    registry of its own: `db.models` already maps `messages` in SQLModel's default metadata."""
    from sqlalchemy import Column
    from sqlalchemy.dialects.postgresql import JSONB
    from sqlalchemy.orm import registry
    from sqlmodel import Field, SQLModel

    class BenchBase(SQLModel, registry=registry()):
        pass

    class Message(BenchBase, table=True):
        __tablename__ = "messages"
        id: int | None = Field(default=None, primary_key=True)
        channel_id: int
        external_id: str
        author: str
        ts: datetime
        reply_to: str | None = None
        raw_text: str
        normalized_text: str
        attachments: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSONB))

    return Message


async def run_orm(
    url: str, channel_id: int, messages: list[ParsedMessage], *, per_row: bool
) -> float:
    """Seconds to insert `messages` through SQLModel sessions (see the module docstring)."""
    from sqlalchemy.ext.asyncio import create_async_engine
    from sqlmodel.ext.asyncio.session import AsyncSession

    Message = orm_message_model()
    engine = create_async_engine(sqlalchemy_url(url), pool_size=1)
    try:
        started = time.perf_counter()
        async with AsyncSession(engine, expire_on_commit=False) as session:
            pending = 0
            for message in messages:
                row = Message(
                    channel_id=channel_id,
                    external_id=message.external_id,
                    author=message.author,
                    ts=message.ts,
                    reply_to=message.reply_to,
                    raw_text=message.text,
                    normalized_text=normalize_text(message.text),
                    attachments=message.attachments,
                )
                session.add(row)
                if per_row:
                    await session.flush()  # one INSERT ... RETURNING id now, as a loop would
                pending += 1
                if pending >= ORM_COMMIT_EVERY:
                    await session.commit()
                    session.expunge_all()
                    pending = 0
            await session.commit()
        return time.perf_counter() - started
    finally:
        await engine.dispose()


async def run_asyncpg_per_row(url: str, channel_id: int, messages: list[ParsedMessage]) -> float:
    """Raw asyncpg, one INSERT per message, commit every 1,000: the per-row cost without an
    ORM (shows how much of the gap is the ORM and how much is row-at-a-time)."""
    connection = await connect(url)
    sql = (
        "INSERT INTO messages (channel_id, external_id, author, ts, reply_to, raw_text, "
        "normalized_text, attachments) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
    )
    try:
        started = time.perf_counter()
        for start in range(0, len(messages), ORM_COMMIT_EVERY):
            async with connection.transaction():
                for m in messages[start : start + ORM_COMMIT_EVERY]:
                    await connection.execute(sql, channel_id, *message_columns(m))
        return time.perf_counter() - started
    finally:
        await connection.close()


# --- main ------------------------------------------------------------------------------------


async def prepare(url: str) -> str:
    connection = await connect(url)
    try:
        await migrate(connection)
    finally:
        await connection.close()
    return await postgres_version(url)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke test")
    parser.add_argument("--messages", type=int, default=None, help="JSONL size (200,000)")
    parser.add_argument("--orm-messages", type=int, default=None, help="ORM subset (20,000)")
    parser.add_argument("--repeats", type=int, default=None, help="runs of each peer (3)")
    parser.add_argument("--database-url", default=None, help="default: embedded, temporary")
    parser.add_argument("--profile", action="store_true", help="cProfile one import_path run")
    parser.add_argument("--skip-cli", action="store_true", help="only the in-process import")
    args = parser.parse_args()
    total = args.messages or (3_000 if args.quick else 200_000)
    orm_total = min(total, args.orm_messages or (500 if args.quick else 20_000))
    repeats = args.repeats or (1 if args.quick else 3)

    with (
        tempfile.TemporaryDirectory(prefix="digestd-bench-ingest-") as tmp,
        bench_database(args.database_url) as (url, home),
    ):
        path = Path(tmp) / "channel.jsonl"
        size = write_jsonl(path, total)
        version = asyncio.run(prepare(url))
        emit(
            BENCH_NAME,
            kind="setup",
            messages=total,
            orm_messages=orm_total,
            file_bytes=size,
            repeats=repeats,
            quick=args.quick,
            started=utc_now(),
            database="url" if args.database_url else "embedded",
            postgres=version,
            **machine_details(),
        )
        subset = parsed_messages(path, orm_total)
        everything = parsed_messages(path, total)
        orm_missing = orm_available()
        rates: dict[str, list[float]] = {}
        extra: dict[str, list[float]] = {"cli_wall": []}

        def record(peer: str, messages: int, seconds: float, **more: Any) -> None:
            rate = messages / seconds
            rates.setdefault(peer, []).append(rate)
            emit(
                BENCH_NAME,
                kind="run",
                peer=peer,
                messages=messages,
                seconds=round(seconds, 4),
                msgs_per_s=round(rate),
                **more,
            )

        def record_import(peer: str, result: dict[str, Any], stored: int) -> None:
            """A run_import_path result, with the rows the channel held once it was done."""
            record(
                peer,
                result["accepted"],
                result["seconds"],
                stored=stored,
                inserted=result["inserted"],
                **{k: result[k] for k in ("batches", "write_seconds", "parser_waited_seconds")},
            )

        for run in range(repeats):
            tag = f"bench-ingest-{os.getpid()}-{run}"
            if not args.skip_cli:
                cli = run_cli_import(path, f"{tag}-cli", url, home)
                stored = asyncio.run(drop_channel(url, f"{tag}-cli"))
                record(
                    "cli",
                    total,
                    cli["import_seconds"],
                    stored=stored,
                    wall_seconds=round(cli["wall_seconds"], 3),
                    wall_msgs_per_s=round(total / cli["wall_seconds"]),
                )
                extra["cli_wall"].append(total / cli["wall_seconds"])
            inproc = asyncio.run(run_import_path(path, f"{tag}-inproc", url, False))
            stored = asyncio.run(drop_channel(url, f"{tag}-inproc"))
            record_import("import_path", inproc, stored)
            name = f"{tag}-staging"
            asyncio.run(seed_channel(url, name))
            staged = asyncio.run(run_import_path(path, name, url, False))
            stored = asyncio.run(drop_channel(url, name)) - 1  # without the seed message
            record_import("import_path_staging", staged, stored)
            for peer, direct in (("db_direct_copy", True), ("db_staging_upsert", False)):
                name = f"{tag}-{peer}"
                channel_id = asyncio.run(create_channel(url, name))
                rows = database_rows(everything, channel_id)
                seconds = asyncio.run(run_database_path(url, rows, channel_id, direct=direct))
                stored = asyncio.run(drop_channel(url, name))
                batches = -(-len(rows) // BATCH_SIZE)
                record(peer, len(rows), seconds, stored=stored, batches=batches)
                del rows
            peers: list[tuple[str, Any]] = [("asyncpg_per_row", None)]
            if orm_missing is None:
                peers = [("orm_per_row", True), ("orm_batched", False), *peers]
            for peer, per_row in peers:
                name = f"{tag}-{peer}"
                channel_id = asyncio.run(create_channel(url, name))
                if peer == "asyncpg_per_row":
                    seconds = asyncio.run(run_asyncpg_per_row(url, channel_id, subset))
                else:
                    seconds = asyncio.run(run_orm(url, channel_id, subset, per_row=per_row))
                stored = asyncio.run(drop_channel(url, name))
                record(peer, len(subset), seconds, stored=stored, commit_every=ORM_COMMIT_EVERY)
        if orm_missing is not None:
            for peer in ("orm_per_row", "orm_batched"):
                emit(BENCH_NAME, kind="run", peer=peer, skipped=orm_missing)

        if args.profile:
            name = f"bench-ingest-{os.getpid()}-prof"
            profiled = asyncio.run(run_import_path(path, name, url, True))
            asyncio.run(drop_channel(url, name))
            emit(
                BENCH_NAME,
                kind="profile",
                peer="import_path",
                seconds=round(profiled["seconds"], 3),
                note="cProfile slows Python code ~1.5-2x; read the shares, not the seconds",
                top_by_own_time=profiled["profile"],
            )

        summary: dict[str, Any] = {"kind": "summary", "messages": total, "orm_messages": orm_total}
        for peer, samples in rates.items():
            summary[f"{peer}_msgs_per_s"] = spread(samples, higher_is_better=True)
        if extra["cli_wall"]:
            summary["cli_wall_msgs_per_s"] = spread(extra["cli_wall"], higher_is_better=True)
        headline = "cli" if "cli" in rates else "import_path"
        best = max(rates[headline])
        summary["headline"] = headline
        for peer in ("orm_per_row", "orm_batched", "asyncpg_per_row"):
            if peer in rates:
                # Best against best: each peer's least-disturbed run of the same session.
                summary[f"ratio_vs_{peer}"] = round(best / max(rates[peer]), 1)
        # The importer against the database's own path for the same rows, best against best.
        for importer, database in (
            ("import_path", "db_direct_copy"),
            ("import_path_staging", "db_staging_upsert"),
        ):
            share = max(rates[importer]) / max(rates[database])
            summary[f"{importer}_of_{database}"] = round(share, 3)
            summary[f"{importer}_of_{database}_met"] = share >= TARGET_OF_DATABASE
        baseline = "orm_per_row" if "orm_per_row" in rates else "asyncpg_per_row"
        summary["import_path_ratio"] = round(max(rates["import_path"]) / max(rates[baseline]), 1)
        summary["baseline"] = baseline
        summary["ratio"] = summary[f"ratio_vs_{baseline}"]
        summary["target_rate_met"] = best >= TARGET_RATE
        summary["target_ratio_met"] = summary["ratio"] >= TARGET_RATIO
        emit(BENCH_NAME, **summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
