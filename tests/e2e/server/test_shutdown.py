"""Graceful shutdown of real `digestd` processes on their own embedded PostgreSQL (a temporary
DIGESTD_HOME, no DATABASE_URL): SIGTERM/SIGINT exit 0, a running job is released (not counted
as an attempt) and finished at once by another worker from the chunk cache, and the embedded
server is stopped, even when a killed process left its pid in pgserver's handle list."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import httpx

from db import jobs
from db.engine import create_pool
from runner.llm.fake import FakeLLM
from tests.support.database import add_channel
from tests.support.processes import (
    cli_environment,
    embedded_url,
    llm_worker_environment,
    postmaster_running,
    start_cli,
    wait_embedded,
    wait_exit,
)
from tests.support.servers import free_port
from tests.support.worker import job_row, sample_messages, slow_model, wait_for


def llm_environment(home: Path, base_url: str) -> dict[str, str]:
    return llm_worker_environment(
        None,
        home,
        base_url,
        DIGEST_LLM_MAX_RETRIES="0",
        DIGESTD_CHUNK_TOKENS="400",
        # A lease far longer than the test waits: the job can only move on if it is released.
        DIGESTD_LEASE_SECONDS="120",
        DIGESTD_SHUTDOWN_GRACE_SECONDS="3",
    )


def add_stale_handle(home: Path) -> int:
    """Put the pid of a process that died into pgserver's handle list, as a SIGKILLed digestd
    process leaves it; returns that pid."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    handles = (home / "pgdata" / ".handle_pids.json").resolve()
    pids = json.loads(handles.read_text())
    handles.write_text(json.dumps([*pids, dead.pid]))
    return dead.pid


def assert_postgres_stopped(home: Path) -> None:
    assert not (home / "pgdata" / "postmaster.pid").exists()
    assert not postmaster_running(home)


async def test_serve_sigterm_releases_the_running_job_and_stops_postgres(tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = free_port()
    async with FakeLLM(slow_model(0.4)).serve() as base_url:
        environment = llm_environment(home, base_url)
        serve_log = tmp_path / "serve.log"
        serve = start_cli(["serve", "--port", str(port)], environment, serve_log)
        try:
            url = await wait_embedded(home, serve, serve_log)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:

                async def ready() -> bool:
                    try:
                        return (await client.get("/readyz")).status_code == 200
                    except httpx.TransportError:
                        return False

                await wait_for(ready, 60, "/readyz")
            stale = add_stale_handle(home)
            pool = await create_pool(url, max_size=2)
            try:
                channel_id = await add_channel(pool, "team-platform", sample_messages())
                async with pool.acquire() as connection:
                    job, _ = await jobs.enqueue_job(
                        connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
                    )

                async def mapping() -> bool:
                    row = await job_row(pool, job.id)
                    return row.status == "running" and row.chunks_done >= 1

                await wait_for(mapping, 60, "serve's runner to map a chunk")
            finally:
                pool.terminate()
            serve.send_signal(signal.SIGTERM)
            assert await wait_exit(serve, 60) == 0, serve_log.read_text()
        finally:
            if serve.poll() is None:
                serve.kill()
                serve.wait()
        # The dead pid in the handle list did not keep the server alive.
        assert_postgres_stopped(home)
        assert stale not in json.loads((home / "pgdata" / ".handle_pids.json").read_text())

        # Another worker takes the released job over at once (the lease was 120 s).
        worker_log = tmp_path / "worker.log"
        worker = start_cli(["worker"], environment, worker_log)
        try:
            url = await wait_embedded(home, worker, worker_log)
            pool = await create_pool(url, max_size=2)
            try:

                async def finished() -> bool:
                    assert worker.poll() is None, worker_log.read_text()
                    return (await job_row(pool, job.id)).status not in ("queued", "running")

                await wait_for(finished, 60, "another worker to finish the released job")
                done = await job_row(pool, job.id)
            finally:
                pool.terminate()
            worker.send_signal(signal.SIGINT)
            assert await wait_exit(worker, 60) == 0, worker_log.read_text()
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    assert done.status == "succeeded", done.error
    assert done.attempts == 1  # the released attempt was not counted
    assert done.stats["chunks_from_cache"] >= 1  # the chunks mapped before the stop
    assert_postgres_stopped(home)
    assert "Traceback" not in serve_log.read_text() + worker_log.read_text()


async def test_import_interrupted_by_sigterm_exits_0_and_stops_postgres(tmp_path: Path) -> None:
    home = tmp_path / "home"
    export = tmp_path / "big.jsonl"
    start = datetime(2024, 1, 1, tzinfo=UTC)
    with export.open("w", encoding="utf-8") as out:
        for i in range(300_000):
            ts = (start + timedelta(seconds=i)).isoformat()
            out.write(
                json.dumps(
                    {
                        "id": f"m{i}",
                        "author": f"u{i % 7}",
                        "ts": ts,
                        "text": f"message number {i} about the deploy",
                    }
                )
                + "\n"
            )
    log = tmp_path / "import.log"
    process = start_cli(
        ["import", str(export), "--channel", "big"], cli_environment(DIGESTD_HOME=str(home)), log
    )
    try:
        url = await wait_embedded(home, process, log)
        connection = await asyncpg.connect(url)
        try:

            async def importing() -> bool:
                assert process.poll() is None, log.read_text()
                return bool(await connection.fetchval("SELECT count(*) FROM messages"))

            await wait_for(importing, 60, "the import to store a batch")
        finally:
            connection.terminate()
        process.send_signal(signal.SIGTERM)
        assert await wait_exit(process, 60) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert_postgres_stopped(home)
    assert "Traceback" not in log.read_text()


async def test_digest_wait_interrupted_releases_its_job(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    """Ctrl-C on `digestd digest --wait` (which runs the job itself): exit 0, the chunk in
    flight finishes and is cached, the job is back in the queue with the attempt not counted."""
    channel_id = await add_channel(db, "team-platform", sample_messages())
    async with FakeLLM(slow_model(0.4)).serve() as base_url:
        environment = llm_environment(tmp_path / "home", base_url)
        environment["DATABASE_URL"] = database_url
        log = tmp_path / "digest.log"
        process = start_cli(["digest", "team-platform", "--wait"], environment, log)
        try:

            async def mapping() -> bool:
                assert process.poll() is None, log.read_text()
                async with db.acquire() as connection:
                    job = await connection.fetchrow(
                        "SELECT * FROM digest_jobs WHERE channel_id = $1", channel_id
                    )
                return job is not None and job["chunks_done"] >= 1

            await wait_for(mapping, 60, "the digest command to map a chunk")
            process.send_signal(signal.SIGINT)
            assert await wait_exit(process, 30) == 0, log.read_text()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    async with db.acquire() as connection:
        job = await connection.fetchrow(
            "SELECT * FROM digest_jobs WHERE channel_id = $1", channel_id
        )
        cached = await connection.fetchval("SELECT count(*) FROM chunk_results")
    assert job["status"] == "queued" and job["attempts"] == 0 and job["worker_id"] is None
    assert job["run_after"] <= datetime.now(UTC)
    assert cached >= job["chunks_done"] >= 1
    assert "Traceback" not in log.read_text()


async def test_an_import_whose_database_crashes_ends_in_bounded_time_and_stops_postgres(
    tmp_path: Path,
) -> None:
    """A Postgres backend SIGKILLed mid-import (the postmaster restarts and runs crash recovery):
    the import says so in one line and exits 1, and stopping the embedded server while it
    recovers neither hangs (a fast shutdown can wait on the recovery past pg_ctl's 60 s) nor
    leaves it running."""
    home = tmp_path / "home"
    path = tmp_path / "big.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for number in range(150_000):
            record = {
                "id": str(number),
                "author": "ann",
                "text": f"message {number}",
                "ts": 1_600_000_000 + number,
            }
            out.write(json.dumps(record) + "\n")
    environment = cli_environment(DIGESTD_HOME=str(home))
    log = tmp_path / "import.log"
    process = start_cli(["import", str(path), "--channel", "crash"], environment, log)
    killed = 0
    deadline = asyncio.get_running_loop().time() + 60
    url = None
    while url is None and process.poll() is None:
        assert asyncio.get_running_loop().time() < deadline, "the embedded server did not start"
        url = embedded_url(home, "postgres")  # the digestd database may not exist yet
        await asyncio.sleep(0.02)
    admin = await asyncpg.connect(url)
    try:
        while not killed and process.poll() is None:
            assert asyncio.get_running_loop().time() < deadline, "no import batch to kill"
            killed = await _kill_the_writer(admin)
            await asyncio.sleep(0.005)
    finally:
        admin.terminate()
    assert killed, "the import ended before the fault"
    assert await wait_exit(process, timeout=45) == 1, log.read_text()
    stderr = log.read_text()
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("digestd: error: ")]
    assert len(errors) == 1 and "database connection lost" in errors[0], stderr
    assert not postmaster_running(home)


async def _kill_the_writer(admin: asyncpg.Connection) -> int:
    """SIGKILL the backend writing an import batch (staging it, or on a channel's first import
    COPYing it straight into messages), if one is at work; returns its pid or 0."""
    pid = await admin.fetchval(
        """SELECT pid FROM pg_stat_activity
           WHERE pid <> pg_backend_pid() AND state = 'active'
             AND (query ILIKE '%message_staging%' OR query ILIKE 'COPY "messages"%') LIMIT 1"""
    )
    if pid:
        os.kill(int(pid), signal.SIGKILL)
    return int(pid or 0)
