"""A worker process killed with SIGKILL in the middle of a job: another worker finishes the job from the chunk cache."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import asyncpg

from runner.llm.fake import FakeLLM
from server.runtime import Runtime
from server.settings import Settings
from tests.support.database import add_channel
from tests.support.llm import API_KEY
from tests.support.paths import REPO_ROOT
from tests.support.worker import (
    assert_pointers_resolve,
    job_row,
    llm_settings,
    sample_messages,
    slow_model,
    trigger,
    wait_for,
)


async def test_killed_worker_process_job_is_finished_by_another_from_the_chunk_cache(
    db: asyncpg.Pool, settings: Settings, database_url: str, tmp_path: Path
) -> None:
    channel_id = await add_channel(db, "team-platform", sample_messages())
    async with FakeLLM(slow_model(0.4)).serve() as base_url:
        job_id = await trigger(db, channel_id)
        environment = {
            **os.environ,
            "DATABASE_URL": database_url,
            "DIGESTD_HOME": str(tmp_path / "home"),
            "DIGEST_EXTRACTOR": "llm",
            "DIGEST_LLM_BASE_URL": base_url,
            "DIGEST_LLM_API_KEY": API_KEY,
            "DIGEST_LLM_CONCURRENCY": "1",
            "DIGESTD_CHUNK_TOKENS": "400",
            "DIGESTD_LEASE_SECONDS": "2",
            "DIGESTD_HEARTBEAT_SECONDS": "0.3",
            "DIGESTD_POLL_SECONDS": "0.2",
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "worker"],
            cwd=REPO_ROOT,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:

            async def two_chunks_cached() -> bool:
                assert process.poll() is None, process.stderr.read().decode()[-2000:]  # type: ignore[union-attr]
                async with db.acquire() as connection:
                    return int(await connection.fetchval("SELECT count(*) FROM chunk_results")) >= 2

            await wait_for(two_chunks_cached, 60, "the worker process to map two chunks")
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
            process.stderr.close()  # type: ignore[union-attr]
        killed = await job_row(db, job_id)
        assert killed.status == "running" and killed.attempts == 1

        # The same concurrency as the killed worker: chunk i is given the known items of
        # chunks 0 .. i - concurrency, and the cache key includes them.
        runtime = Runtime(llm_settings(settings, base_url, digest_llm_concurrency=1))
        await runtime.open()
        try:
            worker = runtime.new_worker()

            async def finished() -> bool:
                await worker.run_once()  # nothing to claim until the dead worker's lease expires
                return (await job_row(db, job_id)).status not in ("queued", "running")

            await wait_for(finished, 60, "another worker to finish the job")
        finally:
            await runtime.close()
    job = await job_row(db, job_id)
    assert job.status == "succeeded" and job.attempts == 2, job.error
    assert job.stats["chunks_from_cache"] >= 2
    assert await assert_pointers_resolve(db, job.digest_id) >= 1
