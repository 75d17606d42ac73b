"""A Postgres backend SIGKILLed while `digestd migrate` is inside its migration transaction: one
clear line and the exit status of a database failure (2), not asyncpg's
`cannot call Transaction.__aexit__()`; nothing of the interrupted run is committed, and running
it again migrates the database.

The migration is held mid-flight by another session holding the migrations' advisory lock, so
the kill lands inside the transaction every time. This test crashes a server of its own (an
embedded one in a temporary home), never the session's."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from db.migrate import MIGRATION_LOCK, available_migrations
from tests.support.database import own_embedded_server
from tests.support.processes import (
    cli_environment,
    start_cli,
    wait_database_back,
    wait_exit,
)


@pytest.fixture(scope="module")
def crash_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An embedded server of this module's own, which its test may crash."""
    with own_embedded_server(tmp_path_factory.mktemp("migrate-crash-home"), migrated=False) as url:
        yield url


async def fresh_database(url: str) -> str:
    """A new, empty database on the server of `url`; returns its URL."""
    name = f"migrate_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(url)
    try:
        await admin.execute(f"CREATE DATABASE {name}")
    finally:
        await admin.close()
    base, _, query = url.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")


async def applied_versions(url: str) -> set[int]:
    connection = await asyncpg.connect(url)
    try:
        exists = await connection.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
        if not exists:
            return set()
        return {
            row["version"]
            for row in await connection.fetch("SELECT version FROM schema_migrations")
        }
    finally:
        await connection.close()


async def test_a_backend_killed_mid_migration_gives_one_line_and_exit_2(
    crash_server: str, tmp_path: Path
) -> None:
    await wait_database_back(crash_server)
    url = await fresh_database(crash_server)
    holder = await asyncpg.connect(url)
    await holder.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
    environment = cli_environment(DATABASE_URL=url, DIGESTD_HOME=str(tmp_path / "home"))
    log = tmp_path / "migrate.log"
    process = start_cli(["migrate"], environment, log)
    loop = asyncio.get_running_loop()
    try:
        deadline = loop.time() + 90
        pid = None
        while pid is None:  # the migrating session, waiting for the lock inside its transaction
            assert process.poll() is None, log.read_text()
            assert loop.time() < deadline, "digestd migrate never waited on the lock"
            pid = await holder.fetchval(
                """SELECT pid FROM pg_stat_activity
                   WHERE datname = current_database() AND pid <> pg_backend_pid()
                     AND wait_event_type = 'Lock' AND xact_start IS NOT NULL"""
            )
            await asyncio.sleep(0.02)
        os.kill(int(pid), signal.SIGKILL)
        assert await wait_exit(process, 60) == 2, log.read_text()
    finally:
        holder.terminate()
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = log.read_text()
    assert "Traceback" not in stderr and "__aexit__" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.startswith("digestd: ")]
    assert len(lines) == 1, stderr
    assert "connection was lost while migrating" in lines[0], lines[0]
    assert "***" in lines[0] or "@" not in lines[0]  # the URL, never a password

    await wait_database_back(url)
    assert await applied_versions(url) == set()  # nothing of the interrupted run committed
    again = start_cli(["migrate"], environment, log)
    assert await wait_exit(again, 120) == 0, log.read_text()
    assert await applied_versions(url) == {m.version for m in available_migrations()}
