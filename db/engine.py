"""Where the database is: `DATABASE_URL` when given, else an embedded PostgreSQL (pgserver).

The embedded server lives in `<home>/pgdata` and is shared by every digestd process on the
machine that uses the same home: pgserver keeps the pids of the processes using it in
`pgdata/.handle_pids.json` and stops the server when the last one exits. A process killed
without running its exit handlers leaves its pid there, and pgserver would then never stop the
server again; so dead pids are pruned when a process joins and when it leaves
(`stop_embedded_server`, called on every clean exit). Same SQL either way.

A postmaster that dies (crashes, or is killed) is started again by the first process that finds
it gone: its pool's connection attempt is refused, `revive_embedded_server` restarts it under
pgserver's lock, and the attempt is made again. The last process out stops whichever postmaster
is running then, read from `postmaster.pid`, not the one it joined.

Every wait on the database is bounded: a pool's statements by its command timeout, its acquire
by the same, its release (which waits for a cancelled statement) by a few seconds; a database
that stops answering then fails requests in bounded time instead of holding them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import subprocess
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import psutil

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
            logger.info(
                "embedded server: pruned dead handle pids %s", sorted(set(pids) - set(alive))
            )
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
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{EMBEDDED_DATABASE}';")
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


def _running_postmaster(pgdata: Path) -> Any | None:
    """The postmaster serving `pgdata` now, from its `postmaster.pid` (pgserver's
    PostmasterInfo), or None when no live process holds it. A killed postmaster nobody has reaped
    yet is a zombie: its pid exists, but it serves nothing."""
    from pgserver.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(pgdata)
    except (AssertionError, ValueError, OSError):  # being written by a starting server
        return None
    if info is None or info.process is None:
        return None
    try:
        if info.process.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.NoSuchProcess:
        return None
    return info


# One restart at a time in this process: pgserver's inter-process lock is a file lock, which
# two threads of one process would both hold.
_revive_lock = threading.Lock()


def revive_embedded_server(home: Path) -> bool:
    """Start the embedded server under `home` again if its postmaster is gone. True when a
    postmaster is running afterwards (started here, or by another process first); False when
    this process never joined that server or the start failed (said in one warning line; the
    next connection attempt tries again)."""
    pgdata = (home / "pgdata").expanduser().resolve()
    server = _pgserver().PostgresServer._instances.get(pgdata)
    if server is None:
        return False
    with _revive_lock, server._lock:
        info = _running_postmaster(pgdata)
        if info is not None:
            server._postmaster_info = info
            return True
        logger.warning("embedded server: the postmaster of %s is gone; starting it again", pgdata)
        # A dead postmaster's pid file would make the new one refuse to start if the old pid
        # is still a zombie (postgres checks it with kill(pid, 0)).
        with contextlib.suppress(FileNotFoundError):
            (pgdata / "postmaster.pid").unlink()
        try:
            with _quiet_pgserver():
                server.ensure_postgres_running()
        except Exception as error:  # noqa: BLE001 - reported in one line; the caller retries later
            # Typically the dead postmaster's backends have not all exited yet.
            logger.warning(
                "embedded server: could not start it yet (%s); the next connection tries again",
                type(error).__name__,
            )
            return False
    logger.warning("embedded server: started again (pid %s)", server.get_pid())
    return True


def _stop_postmaster(server: Any, pgdata: Path) -> None:
    """Stop the embedded server within a bounded time: fast shutdown, then immediate. The
    postmaster stopped is the one running now (postmaster.pid): after a crash and a restart by
    any digestd process, the one this process joined is long gone."""
    # pg_ctl is made at import time by a factory, so type checkers cannot see it.
    from pgserver._commands import pg_ctl  # type: ignore[attr-defined]

    info = _running_postmaster(pgdata)
    if info is None:
        return
    with _quiet_pgserver():
        for mode in ("fast", "immediate"):
            try:
                pg_ctl(
                    ["-w", "-t", str(_FAST_STOP_SECONDS), "-m", mode, "stop"],
                    pgdata=pgdata,
                    user=server.system_user,
                )
                break
            except subprocess.CalledProcessError:
                logger.warning(
                    "embedded server: %s shutdown did not finish in %ss", mode, _FAST_STOP_SECONDS
                )
        with contextlib.suppress(Exception):
            info.process.wait(_FAST_STOP_SECONDS)


@contextlib.contextmanager
def _quiet_pgserver() -> Iterator[None]:
    """pgserver logs a failed pg_ctl with its whole output and the server's log; here such a
    failure is expected and handled, so one line of ours says it instead."""
    pgserver_logger = logging.getLogger("pgserver")
    level = pgserver_logger.level
    pgserver_logger.setLevel(logging.CRITICAL)
    try:
        yield
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


def _jsonb_encode(value: Any) -> bytes:
    return b"\x01" + json.dumps(value).encode()  # jsonb's binary format: version 1, the text


def _jsonb_decode(data: bytes) -> Any:
    return json.loads(data[1:])


async def _init_connection(connection: asyncpg.Connection) -> None:
    # JSON columns arrive as Python objects and go out from them, everywhere. jsonb in its binary
    # format, so a binary COPY (an import's batch into `messages`, db/ingest.py) can carry it.
    await connection.set_type_codec(
        "json", encoder=json.dumps, decoder=json.loads, schema="pg_catalog"
    )
    await connection.set_type_codec(
        "jsonb", encoder=_jsonb_encode, decoder=_jsonb_decode, schema="pg_catalog", format="binary"
    )


# How long one connection attempt of a pool may take. asyncpg's default is 60 s: a connection
# opened while the server restarts after a crash could hold an import or a worker that long.
CONNECT_TIMEOUT_SECONDS = 10.0
# How long one statement may run (DIGESTD_DB_COMMAND_TIMEOUT_SECONDS). The longest statements of
# a worker fit many times over (a 50,000-message digest's store took 0.7-1.3 s, its window read
# 0.2-0.4 s on a loaded machine: docs/benchmarks.md); an import batch's COPY passes its own
# `timeout=`, as must any statement known to be longer. Migrations run on their own connection,
# unbounded: rewriting a big table may take minutes.
DEFAULT_COMMAND_TIMEOUT_SECONDS = 30.0
# How long giving a connection back may take: on a healthy server it is instant, but after a
# timed-out statement it waits for the server to acknowledge the cancel, which a silent server
# never does (the connection is then dropped; the pool opens a new one).
RELEASE_TIMEOUT_SECONDS = 2.0


class BoundedPool(asyncpg.Pool):  # type: ignore[misc]  # asyncpg is untyped
    """An asyncpg pool none of whose waits is unbounded: `acquire()` without a timeout waits at
    most `acquire_timeout`, and a release at most RELEASE_TIMEOUT_SECONDS (asyncpg waits for
    ever on both by default). A release that fails has already dropped its connection, so the
    failure is not the caller's: the error of the work itself, if any, is what propagates."""

    acquire_timeout: float = DEFAULT_COMMAND_TIMEOUT_SECONDS

    def acquire(self, *, timeout: float | None = None) -> Any:
        return super().acquire(timeout=self.acquire_timeout if timeout is None else timeout)

    async def release(self, connection: Any, *, timeout: float | None = None) -> None:
        try:
            await super().release(
                connection, timeout=RELEASE_TIMEOUT_SECONDS if timeout is None else timeout
            )
        except (TimeoutError, OSError, asyncpg.PostgresConnectionError) as error:
            logger.debug("pool: dropped a connection that could not be released (%r)", error)


def _reviving_connect(revive: Callable[[], bool]) -> Callable[..., Awaitable[asyncpg.Connection]]:
    """asyncpg's connect, which on a refused connection has `revive` (run in a thread) start
    the server again and, when it did, tries once more."""

    async def connect_or_revive(*args: Any, **kwargs: Any) -> asyncpg.Connection:
        try:
            return await asyncpg.connect(*args, **kwargs)
        except (ConnectionRefusedError, FileNotFoundError):
            if not await asyncio.to_thread(revive):
                raise
        return await asyncpg.connect(*args, **kwargs)

    return connect_or_revive


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


async def create_pool(
    url: str,
    *,
    max_size: int = 10,
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT_SECONDS,
    revive: Callable[[], bool] | None = None,
    **kwargs: Any,
) -> asyncpg.Pool:
    """A BoundedPool with JSON codecs installed on every connection, whose release costs no
    round trip (see `_keep_session`). Each statement may run `command_timeout` seconds unless
    it passes its own `timeout=`; waiting for a connection is bounded the same. With `revive`
    (the embedded server), a refused connection first has it start the server again."""
    kwargs.setdefault("timeout", CONNECT_TIMEOUT_SECONDS)
    kwargs.setdefault("reset", _keep_session)
    pool = BoundedPool(
        url,
        min_size=1,
        max_size=max_size,
        max_queries=50_000,
        max_inactive_connection_lifetime=300.0,
        init=_init_connection,
        connect=_reviving_connect(revive) if revive is not None else None,
        command_timeout=command_timeout,
        loop=None,
        connection_class=asyncpg.Connection,
        record_class=asyncpg.Record,
        **kwargs,
    )
    pool.acquire_timeout = command_timeout
    await pool
    return pool


async def connect(url: str, *, timeout: float = 60.0) -> asyncpg.Connection:
    """One connection with the same codecs as the pool (LISTEN, migrations)."""
    connection = await asyncpg.connect(url, timeout=timeout)
    await _init_connection(connection)
    return connection
