"""Where the database is: `DATABASE_URL` when given, else an embedded PostgreSQL (pgserver).

The embedded server lives in `<home>/pgdata` and is shared by every digestd process on the
machine that uses the same home: pgserver keeps the pids of the processes using it in
`pgdata/.handle_pids.json` and stops the server when the last one exits. A process killed
without running its exit handlers leaves its pid there, and pgserver would then never stop the
server again; so dead pids are pruned when a process joins and when it leaves
(`stop_embedded_server`, called on every clean exit). Same SQL either way.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import logging
import warnings
from pathlib import Path
from typing import Any

import re

import asyncpg

logger = logging.getLogger(__name__)

EMBEDDED_DATABASE = "digestd"


def _pgserver() -> Any:
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); harmless here.
        warnings.simplefilter("ignore")
        import pgserver

    return pgserver


def _prune_dead_handles(pgdata: Path) -> list[int]:
    """Drop the pids of dead processes from pgserver's handle list; returns the live ones.
    Runs under pgserver's inter-process lock, like pgserver's own updates of that file."""
    import psutil

    server_class = _pgserver().PostgresServer
    handles = pgdata / ".handle_pids.json"
    with server_class._lock:
        if not handles.exists():
            return []
        try:
            pids = [int(pid) for pid in json.loads(handles.read_text())]
        except (ValueError, TypeError):
            pids = []
        alive = [pid for pid in pids if psutil.pid_exists(pid)]
        if alive != pids:
            logger.info("embedded server: pruned dead handle pids %s", sorted(set(pids) - set(alive)))
            handles.write_text(json.dumps(alive))
        return alive


def embedded_database_url(home: Path) -> str:
    """Start (or join) the embedded server under `home` and return a URL of its digestd DB."""
    pgserver = _pgserver()
    home.mkdir(parents=True, exist_ok=True)
    pgdata = (home / "pgdata").expanduser().resolve()
    if pgdata.exists():
        _prune_dead_handles(pgdata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(pgdata, cleanup_mode="stop")
    exists = server.psql(
        f"SELECT 1 FROM pg_database WHERE datname = '{EMBEDDED_DATABASE}';"
    )
    if "1 row" not in exists:
        server.psql(f"CREATE DATABASE {EMBEDDED_DATABASE};")
        logger.info("created embedded database in %s", home / "pgdata")
    return str(server.get_uri(EMBEDDED_DATABASE))


def stop_embedded_server(home: Path) -> None:
    """Leave the embedded server under `home`: this process's handle is dropped and, when no
    live process holds one any more, the server is stopped. A no-op when this process never
    joined it. pgserver's own exit handler does the same at interpreter exit but trusts the pid
    list, which a killed process leaves stale; hence the prune first."""
    pgserver = _pgserver()
    pgdata = (home / "pgdata").expanduser().resolve()
    server = pgserver.PostgresServer._instances.get(pgdata)
    if server is None:
        return
    if _prune_dead_handles(pgdata) == [os.getpid()]:
        _stop_postmaster(server, pgdata)
    server._cleanup()  # drops our pid; stops the server if it was the last one (and still up)


# A fast shutdown asked while the server is in crash recovery (a backend was killed) can wait
# on the recovery for minutes, and pgserver's own stop waits for pg_ctl's 60 s; a process that
# was told to stop must not hang on it. Immediate mode afterwards is safe: the next start runs
# crash recovery, as it would after a power cut.
_FAST_STOP_SECONDS = 10


def _stop_postmaster(server: Any, pgdata: Path) -> None:
    """Stop the embedded server within a bounded time: fast shutdown, then immediate."""
    # pg_ctl is made at import time by a factory, so type checkers cannot see it.
    from pgserver._commands import pg_ctl  # type: ignore[attr-defined]

    info = getattr(server, "_postmaster_info", None)
    if info is None or not info.process.is_running():
        return
    # pgserver logs a failed pg_ctl with its whole output; here a timeout is expected and
    # handled, so one line of ours says it instead.
    pgserver_logger = logging.getLogger("pgserver")
    level = pgserver_logger.level
    pgserver_logger.setLevel(logging.CRITICAL)
    try:
        for mode in ("fast", "immediate"):
            try:
                pg_ctl(["-w", "-t", str(_FAST_STOP_SECONDS), "-m", mode, "stop"], pgdata=pgdata,
                       user=server.system_user)  # fmt: skip
                break
            except subprocess.CalledProcessError:
                logger.warning(
                    "embedded server: %s shutdown did not finish in %ss", mode, _FAST_STOP_SECONDS
                )
        with contextlib.suppress(Exception):
            info.process.wait(_FAST_STOP_SECONDS)
    finally:
        pgserver_logger.setLevel(level)


def resolve_database_url(database_url: str | None, home: Path) -> str:
    return database_url or embedded_database_url(home)


def redact_url(url: str) -> str:
    """The URL without its password (in the user part or as a `password=` parameter), for
    logs and errors."""
    url = re.sub(r"(?i)([?&]password=)[^&]*", r"\1***", url)
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    credentials, host = rest.rsplit("@", 1)
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in credentials else url


async def _init_connection(connection: asyncpg.Connection) -> None:
    # JSON columns arrive as Python objects and go out from them, everywhere.
    for type_name in ("json", "jsonb"):
        await connection.set_type_codec(
            type_name, encoder=json.dumps, decoder=json.loads, schema="pg_catalog"
        )


# How long one connection attempt of a pool may take. asyncpg's default is 60 s: a connection
# opened while the server restarts after a crash could hold an import or a worker that long.
CONNECT_TIMEOUT_SECONDS = 10.0


async def _keep_session(connection: asyncpg.Connection) -> None:
    """The pool's reset on release, in place of asyncpg's default `Connection.reset()`.

    asyncpg always drops the connection's listeners and rolls back a transaction left open
    before calling this; its default reset then sends `SELECT pg_advisory_unlock_all(); CLOSE
    ALL; UNLISTEN *; RESET ALL` — a round trip on every release, which was half of the
    statements of a GraphQL request (one per DataLoader batch). Pool connections here never hold
    session state for it to clear: no SET (only SET LOCAL), no LISTEN (runner/supervision.py
    listens on its own `connect()`), advisory locks only transaction-scoped
    (`pg_advisory_xact_lock`), no WITH HOLD cursors. Keep it that way, or give such work its
    own connection."""


async def create_pool(url: str, *, max_size: int = 10, **kwargs: Any) -> asyncpg.Pool:
    """An asyncpg pool with JSON codecs installed on every connection, whose release costs no
    round trip (see `_keep_session`)."""
    kwargs.setdefault("timeout", CONNECT_TIMEOUT_SECONDS)
    kwargs.setdefault("reset", _keep_session)
    pool = await asyncpg.create_pool(
        url, min_size=1, max_size=max_size, init=_init_connection, **kwargs
    )
    assert pool is not None
    return pool


async def connect(url: str, *, timeout: float = 60.0) -> asyncpg.Connection:
    """One connection with the same codecs as the pool (LISTEN, migrations)."""
    connection = await asyncpg.connect(url, timeout=timeout)
    await _init_connection(connection)
    return connection
