"""Real processes for crash and shutdown tests: `digestd` commands as subprocesses, a Postgres
backend killed with SIGKILL (the postmaster then restarts every process and refuses connections
for a moment), and the embedded server of a DIGESTD_HOME found without joining it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import asyncpg
import psutil

from tests.support.llm import API_KEY
from tests.support.paths import REPO_ROOT
from tests.support.worker import wait_for

# Environment variables of the test run that must not leak into a child's settings.
_SETTINGS_PREFIXES = ("DATABASE_URL", "DIGESTD_", "DIGEST_")


def cli_environment(**settings: str) -> dict[str, str]:
    """The parent environment without digestd settings, plus `settings` (env names)."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.upper().startswith(_SETTINGS_PREFIXES)
    }
    environment.update(settings)
    return environment


def llm_worker_environment(
    database_url: str | None, home: Path, base_url: str, **settings: str
) -> dict[str, str]:
    """The environment of a `digestd` child on the LLM extractor at `base_url`, one request at
    a time, with leases, heartbeats and polls short enough that a killed worker's job is retaken
    within seconds; `settings` (env names) add to these or replace them. Without `database_url`
    the child uses the embedded server of its DIGESTD_HOME."""
    defaults = {
        "DIGESTD_HOME": str(home),
        "DIGEST_EXTRACTOR": "llm",
        "DIGEST_LLM_BASE_URL": base_url,
        "DIGEST_LLM_API_KEY": API_KEY,
        "DIGEST_LLM_CONCURRENCY": "1",
        "DIGESTD_LEASE_SECONDS": "2",
        "DIGESTD_HEARTBEAT_SECONDS": "0.3",
        "DIGESTD_POLL_SECONDS": "0.2",
    }
    if database_url is not None:
        defaults["DATABASE_URL"] = database_url
    return cli_environment(**(defaults | settings))


def start_cli(args: list[str], environment: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`digestd ARGS` as a child process; its stderr goes to `log` (a pipe could fill up)."""
    with log.open("ab") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "server.cli", *args],
            cwd=REPO_ROOT,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


async def wait_exit(process: subprocess.Popen[bytes], timeout: float) -> int:
    deadline = asyncio.get_running_loop().time() + timeout
    while process.poll() is None:
        if asyncio.get_running_loop().time() > deadline:
            process.kill()
            process.wait()
            raise AssertionError(f"process {process.pid} did not exit within {timeout}s")
        await asyncio.sleep(0.1)
    return int(process.returncode)


def embedded_url(home: Path, database: str = "digestd") -> str | None:
    """The URL of the embedded server running under `home`, read from postmaster.pid; the test
    does not join the server (a handle would keep it alive after the digestd process exits)."""
    from pgserver.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata((home / "pgdata").resolve())
    except (AssertionError, ValueError, OSError):  # the file is being written
        return None
    if info is None or not info.is_running() or info.status != "ready":
        return None
    return info.get_uri(database=database)


def postmaster_running(home: Path) -> bool:
    """Whether a postgres process serves `home`'s pgdata (pid file or process table)."""
    pgdata = str((home / "pgdata").resolve())
    for process in psutil.process_iter(attrs=["name", "cmdline"]):
        if process.info["name"] == "postgres" and pgdata in (process.info["cmdline"] or []):
            return True
    return False


async def kill_a_backend(url: str) -> int:
    """SIGKILL one Postgres backend (this connection's own): the postmaster treats it as a crash,
    terminates every backend and restarts, refusing connections meanwhile. Returns the pid."""
    connection = await asyncpg.connect(url)
    pid = int(await connection.fetchval("SELECT pg_backend_pid()"))
    os.kill(pid, signal.SIGKILL)
    connection.terminate()
    return pid


async def wait_database_back(url: str, timeout: float = 60) -> None:
    """Wait until the restarted server answers again."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            connection = await asyncpg.connect(url, timeout=2)
            try:
                await connection.fetchval("SELECT 1")
                return
            finally:
                await connection.close()
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.1)


def environment(database_url: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DIGEST_", "DIGESTD_"))}
    env.update(DATABASE_URL=database_url, DIGESTD_HOME=str(home), DIGEST_EXTRACTOR="offline")
    return env


def digestd(database_url: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=environment(database_url, home),
        timeout=120,
    )


async def wait_embedded(home: Path, process: subprocess.Popen[bytes], log: Path) -> str:
    """The URL of the embedded server once the process has started it and migrated it."""
    url: str | None = None

    async def ready() -> bool:
        nonlocal url
        assert process.poll() is None, log.read_text()
        url = embedded_url(home)
        if url is None:
            return False
        try:
            connection = await asyncpg.connect(url, timeout=2)
        except (OSError, asyncpg.PostgresError):
            return False
        try:
            return bool(await connection.fetchval("SELECT to_regclass('digest_jobs') IS NOT NULL"))
        finally:
            await connection.close()

    await wait_for(ready, 90, "the embedded server")
    assert url is not None
    return url
