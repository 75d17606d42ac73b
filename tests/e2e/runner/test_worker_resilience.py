"""Workers survive the database: a Postgres backend killed with SIGKILL (the postmaster restarts
every process and refuses connections for a moment, `CannotConnectNowError`) costs a worker a
retry, never its life, in-process and as a `digestd worker` process. A lost lease counts as an
attempt: a job whose worker process is killed at its last attempt ends FAILED (`lease_expired:`).

These tests crash a server of their own (an embedded one in a temporary home), never the
session's."""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from db import jobs
from db.engine import create_pool
from runner.llm.fake import FakeLLM
from server.runtime import Runtime
from server.settings import Settings
from tests.support.database import add_channel, own_embedded_server
from tests.support.jobs import expire_lease, sessions_listening_for_jobs
from tests.support.processes import (
    cli_environment,
    kill_a_backend,
    llm_worker_environment,
    start_cli,
    wait_database_back,
    wait_exit,
)
from tests.support.worker import (
    job_row,
    llm_settings,
    sample_messages,
    slow_model,
    wait_for,
)

TABLES = "servers, channels, messages, digest_jobs, digests, chunk_results"


@pytest.fixture(scope="module")
def crash_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An embedded server of this module's own, which its tests may crash."""
    with own_embedded_server(tmp_path_factory.mktemp("crash-home")) as url:
        yield url


@pytest.fixture
async def crash_pool(crash_server: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await create_pool(crash_server, max_size=4)
    async with pool.acquire() as connection:
        await connection.execute(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE")
    yield pool
    await pool.close()


async def trigger(pool: asyncpg.Pool, channel_id: int, max_attempts: int = 3) -> int:
    async with pool.acquire() as connection:
        job, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=max_attempts
        )
    return int(job.id)


async def test_worker_loop_survives_killed_backends_idle_and_mid_job(
    crash_server: str,
    crash_pool: asyncpg.Pool,
    settings: Settings,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    channel_id = await add_channel(crash_pool, "team-platform", sample_messages())
    other_channel_id = await add_channel(crash_pool, "team-platform-2", sample_messages())
    async with FakeLLM(slow_model(0.3)).serve() as base_url:
        runtime = Runtime(
            llm_settings(settings, base_url, database_url=crash_server, digest_llm_concurrency=1)
        )
        await runtime.open()
        stop = asyncio.Event()
        loop_task = asyncio.create_task(runtime.new_worker().run(stop))
        try:
            # Idle: the worker polls every 0.2 s through the restart.
            await asyncio.sleep(0.5)
            await kill_a_backend(crash_server)
            await wait_database_back(crash_server)
            await asyncio.sleep(1.0)
            assert not loop_task.done(), loop_task
            first = await trigger(crash_pool, channel_id)

            async def finished(job_id: int) -> bool:
                assert not loop_task.done(), "the worker loop died"
                return (await job_row(crash_pool, job_id)).status not in ("queued", "running")

            await wait_for(lambda: finished(first), 60, "the job queued after the restart")
            assert (await job_row(crash_pool, first)).status == "succeeded"

            # Mid-job: the heartbeat, the chunk cache and the job's end all lose the database.
            async with crash_pool.acquire() as connection:
                await connection.execute("TRUNCATE chunk_results")  # same messages: no cache
            second = await trigger(crash_pool, other_channel_id)

            async def mapping() -> bool:
                return (await job_row(crash_pool, second)).chunks_done >= 1

            await wait_for(mapping, 30, "the second job to map a chunk")
            await kill_a_backend(crash_server)
            await wait_database_back(crash_server)
            await wait_for(lambda: finished(second), 60, "the job running during the restart")
        finally:
            stop.set()
            await asyncio.wait_for(loop_task, 30)  # a clean return: it never died
            await runtime.close()
    job = await job_row(crash_pool, second)
    assert job.status == "succeeded", job.error
    assert job.attempts <= 3
    assert (
        "retrying" in caplog.text or "heartbeat failed" in caplog.text or "could not" in caplog.text
    )


async def test_worker_process_survives_a_killed_backend_and_stops_cleanly_on_sigterm(
    crash_server: str, crash_pool: asyncpg.Pool, tmp_path: Path
) -> None:
    channel_id = await add_channel(crash_pool, "team-platform", sample_messages())
    environment = cli_environment(
        DATABASE_URL=crash_server,
        DIGESTD_HOME=str(tmp_path / "home"),
        DIGEST_EXTRACTOR="offline",
        DIGESTD_LEASE_SECONDS="2",
        DIGESTD_HEARTBEAT_SECONDS="0.3",
        DIGESTD_POLL_SECONDS="0.2",
        DIGESTD_RETRY_BASE_SECONDS="0.1",
    )
    log = tmp_path / "worker.log"
    process = start_cli(["worker"], environment, log)
    try:
        await asyncio.sleep(3)  # started and polling
        assert process.poll() is None, log.read_text()
        for _ in range(2):
            await kill_a_backend(crash_server)
            await wait_database_back(crash_server)
            await asyncio.sleep(1.0)
            assert process.poll() is None, f"worker exited {process.returncode}: {log.read_text()}"
        job_id = await trigger(crash_pool, channel_id)

        async def finished() -> bool:
            assert process.poll() is None, log.read_text()
            return (await job_row(crash_pool, job_id)).status not in ("queued", "running")

        await wait_for(finished, 60, "the worker process to digest after the restarts")
        assert (await job_row(crash_pool, job_id)).status == "succeeded"
        process.send_signal(signal.SIGTERM)
        assert await wait_exit(process, 30) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    # asyncpg's own pool logs its reconnect attempts (with their traceback); nothing of
    # digestd's died unhandled.
    assert "Task exception was never retrieved" not in log.read_text()
    assert "digestd: error" not in log.read_text()


async def test_a_lost_lease_counts_as_an_attempt_and_ends_failed_at_the_maximum(
    crash_server: str, crash_pool: asyncpg.Pool, settings: Settings, tmp_path: Path
) -> None:
    """Two worker processes killed mid-job (SIGKILL) with max_attempts 2: the first loss is
    reclaimed as attempt 2, the second ends the job FAILED; it is never claimed again."""
    channel_id = await add_channel(crash_pool, "team-platform", sample_messages())
    async with FakeLLM(slow_model(0.4)).serve() as base_url:
        job_id = await trigger(crash_pool, channel_id, max_attempts=2)
        environment = llm_worker_environment(
            crash_server,
            tmp_path / "home",
            base_url,
            DIGESTD_CHUNK_TOKENS="400",
            # Long enough that a heartbeat late on a loaded machine never loses it: the lease
            # of a killed worker is run out by the test (expire_lease), not by the clock.
            DIGESTD_LEASE_SECONDS="60",
        )
        for attempt in (1, 2):
            process = start_cli(["worker"], environment, tmp_path / f"worker{attempt}.log")
            try:

                async def running_this_attempt(
                    process: subprocess.Popen[bytes] = process, attempt: int = attempt
                ) -> bool:
                    assert process.poll() is None, (tmp_path / f"worker{attempt}.log").read_text()
                    job = await job_row(crash_pool, job_id)
                    return bool(
                        job.status == "running" and job.attempts == attempt and job.chunks_done >= 1
                    )

                await wait_for(running_this_attempt, 90, f"attempt {attempt} to map a chunk")
            finally:
                process.send_signal(signal.SIGKILL)
                process.wait()
            async with crash_pool.acquire() as connection:
                await expire_lease(connection, job_id)  # the dead worker renews it no more
        killed = await job_row(crash_pool, job_id)
        assert killed.status == "running" and killed.attempts == 2

        runtime = Runtime(llm_settings(settings, base_url, database_url=crash_server))
        await runtime.open()
        try:
            worker = runtime.new_worker()

            # The claim ends the job whose lease expired at its last attempt, and claims none.
            assert not await worker.run_once(), "a job at its last attempt was claimed again"
            assert (await job_row(crash_pool, job_id)).status == "failed"
            assert not await worker.run_once()
        finally:
            await runtime.close()
    job: Any = await job_row(crash_pool, job_id)
    assert job.status == "failed" and job.attempts == 2
    assert job.error.startswith("lease_expired:")
    assert job.finished_at is not None and job.worker_id is None


async def test_the_listen_connection_is_reopened_after_a_restart(
    crash_server: str, crash_pool: asyncpg.Pool, settings: Settings
) -> None:
    """With a 60 s poll interval only NOTIFY can wake the worker quickly: a job triggered after
    the restart is claimed within seconds because the LISTEN connection was re-opened."""
    channel_id = await add_channel(crash_pool, "team-platform", sample_messages())
    runtime = Runtime(
        settings.model_copy(update={"database_url": crash_server, "digestd_poll_seconds": 60.0})
    )
    await runtime.open()
    stop = asyncio.Event()
    loop_task = asyncio.create_task(runtime.new_worker().run(stop))
    try:

        async def listening() -> bool:
            # After the restart every session is a new one: this is the re-opened listener.
            async with crash_pool.acquire() as connection:
                return await sessions_listening_for_jobs(connection) == 1

        await wait_for(listening, 30, "the worker to LISTEN")  # idle, waiting on LISTEN
        await kill_a_backend(crash_server)
        await wait_database_back(crash_server)
        # However long the reconnect backoff (1 s, jittered, doubling) ran while the server
        # restarted, the job is triggered once the listener is back.
        await wait_for(listening, 120, "the LISTEN connection to be re-opened")
        job_id = await trigger(crash_pool, channel_id)
        triggered = asyncio.get_running_loop().time()

        async def claimed() -> bool:
            assert not loop_task.done(), "the worker loop died"
            return (await job_row(crash_pool, job_id)).status != "queued"

        await wait_for(claimed, 50, "the worker to claim the job")
        assert asyncio.get_running_loop().time() - triggered < 10
    finally:
        stop.set()
        await asyncio.wait_for(loop_task, 30)
        await runtime.close()
