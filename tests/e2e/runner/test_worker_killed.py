"""A worker process killed with SIGKILL in the middle of a job: another worker finishes the job from the chunk cache."""

from __future__ import annotations

import signal
from pathlib import Path

import asyncpg

from runner.llm.fake import FakeLLM
from server.runtime import Runtime
from server.settings import Settings
from tests.support.database import add_channel
from tests.support.processes import llm_worker_environment, start_cli
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
        environment = llm_worker_environment(
            database_url, tmp_path / "home", base_url, DIGESTD_CHUNK_TOKENS="400"
        )
        log = tmp_path / "worker.log"
        process = start_cli(["worker"], environment, log)
        try:

            async def two_chunks_cached() -> bool:
                assert process.poll() is None, log.read_text()[-2000:]
                async with db.acquire() as connection:
                    return int(await connection.fetchval("SELECT count(*) FROM chunk_results")) >= 2

            await wait_for(two_chunks_cached, 60, "the worker process to map two chunks")
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
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
