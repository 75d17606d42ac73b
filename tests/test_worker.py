"""Workers as they run in production: the LLM extractor wired from settings (a real `openai`
client against a local fake model server), an endpoint that is down, a cancelled running job,
and a worker process killed with SIGKILL mid-job whose job another worker finishes from the
chunk cache."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from pydantic import SecretStr
from starlette.responses import JSONResponse, Response

from db import jobs
from db.models import DigestJob
from server.runtime import Runtime
from server.settings import Settings
from tests.db_helpers import Msg, add_channel
from tests.test_llm_helpers import API_KEY, local_openai_server, scripted

SAMPLE = Path(__file__).resolve().parents[1] / "runner" / "samples" / "sample_channel.jsonl"
REPO = Path(__file__).resolve().parents[1]


def sample_messages() -> list[Msg]:
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line]
    return [
        Msg(row["id"], row["author"], datetime.fromisoformat(row["ts"]), row["text"],
            row.get("reply_to"))  # fmt: skip
        for row in rows
    ]


def llm_settings(settings: Settings, base_url: str, **extra: Any) -> Settings:
    return settings.model_copy(
        update={
            "digest_extractor": "llm",
            "digest_llm_base_url": base_url,
            "digest_llm_api_key": SecretStr(API_KEY),
            "digest_llm_max_retries": 0,
            "digestd_chunk_tokens": 400,
            **extra,
        }
    )


def slow_model(delay: float) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    """The scripted model, answering after `delay` seconds, so a job is caught mid-map."""
    respond = scripted()

    async def slow(body: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(delay)
        return respond(body)

    return slow


async def trigger(pool: asyncpg.Pool, channel_id: int) -> int:
    async with pool.acquire() as connection:
        job, _ = await jobs.enqueue_job(connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3)
    return int(job.id)


async def run_one_job(pool: asyncpg.Pool, runtime_settings: Settings, channel_id: int) -> int:
    """Queue a digest of the channel and let one worker of a fresh runtime process it."""
    runtime = Runtime(runtime_settings)
    await runtime.open()
    try:
        job_id = await trigger(pool, channel_id)
        assert await runtime.new_worker().run_once()
    finally:
        await runtime.close()
    return job_id


async def job_row(pool: asyncpg.Pool, job_id: int) -> DigestJob:
    async with pool.acquire() as connection:
        row = await jobs.job_by_id(connection, job_id)
    assert row is not None
    return row


async def wait_for(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def assert_pointers_resolve(pool: asyncpg.Pool, digest_id: int) -> int:
    """Every stored knowledge-item pointer slices its message's normalized text to its quote."""
    async with pool.acquire() as connection:
        rows = await connection.fetch(
            "SELECT k.char_start, k.char_end, k.quote, m.normalized_text FROM knowledge_items k "
            "JOIN messages m ON m.id = k.message_id WHERE k.digest_id = $1",
            digest_id,
        )
    for row in rows:
        assert row["normalized_text"][row["char_start"] : row["char_end"]] == row["quote"]
    return len(rows)


async def test_llm_extractor_from_settings_digests_a_channel(
    db: asyncpg.Pool, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    channel_id = await add_channel(db, "team-platform", sample_messages())
    async with local_openai_server(scripted()) as (base_url, received):
        job_id = await run_one_job(db, llm_settings(settings, base_url), channel_id)
    job = await job_row(db, job_id)
    assert job.status == "succeeded", job.error
    stats = job.stats
    map_calls = sum(1 for body in received if body["tool_choice"]["function"]["name"] == "emit_chunk_summary")
    assert stats["chunks"] == map_calls >= 3  # 70 messages at 400 tokens a chunk
    assert stats["llm_calls"] == len(received) and stats["prompt_tokens"] > 0
    # The scripted model shifts every offset by 3; validation re-anchored them on the quote.
    assert await assert_pointers_resolve(db, job.digest_id) >= 1
    assert API_KEY not in caplog.text and API_KEY not in json.dumps(dict(job), default=str)


async def test_endpoint_down_fails_the_attempt_instead_of_storing_an_empty_digest(
    db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id = await add_channel(db, "team-platform", sample_messages())

    def unavailable(body: dict[str, Any]) -> Response:
        return JSONResponse({"error": {"message": "overloaded"}}, status_code=503)

    async with local_openai_server(unavailable) as (base_url, received):
        job_id = await run_one_job(db, llm_settings(settings, base_url), channel_id)
    job = await job_row(db, job_id)
    assert received, "the endpoint was never called"
    assert job.status == "queued" and job.attempts == 1  # retried later, with backoff
    assert job.digest_id is None and "every chunk failed" in job.error
    assert API_KEY not in job.error
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM digests") == 0


async def test_cancelling_a_running_job_stops_it_without_a_digest(
    db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id = await add_channel(db, "team-platform", sample_messages())
    async with local_openai_server(slow_model(0.3)) as (base_url, _):
        runtime = Runtime(llm_settings(settings, base_url, digest_llm_concurrency=1))
        await runtime.open()
        try:
            job_id = await trigger(db, channel_id)
            running = asyncio.create_task(runtime.new_worker().run_once())

            async def mapping() -> bool:
                return (await job_row(db, job_id)).chunks_done >= 1

            await wait_for(mapping, 30, "the first chunk")
            async with db.acquire() as connection:
                await jobs.cancel_job(connection, job_id)
            await asyncio.wait_for(running, 30)
        finally:
            await runtime.close()
    job = await job_row(db, job_id)
    assert job.status == "cancelled" and job.digest_id is None
    assert 1 <= job.chunks_done < job.chunks_total


async def test_killed_worker_process_job_is_finished_by_another_from_the_chunk_cache(
    db: asyncpg.Pool, settings: Settings, database_url: str, tmp_path: Path
) -> None:
    channel_id = await add_channel(db, "team-platform", sample_messages())
    async with local_openai_server(slow_model(0.4)) as (base_url, _):
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
            [sys.executable, "-m", "server.cli", "worker"], cwd=REPO, env=environment,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
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


async def test_a_job_queued_while_the_worker_finds_none_wakes_it_at_once(
    db: asyncpg.Pool, settings: Settings
) -> None:
    """The NOTIFY for a job that lands between an empty claim and the wait is not lost: the
    worker picks the job up at once instead of sleeping for the whole poll interval."""
    channel_id = await add_channel(db, "team-platform", sample_messages())
    runtime = Runtime(settings.model_copy(update={"digestd_poll_seconds": 60.0}))
    await runtime.open()
    worker = runtime.new_worker()
    claim = worker.run_once
    queued: list[int] = []

    async def claim_then_trigger() -> bool:
        processed = await claim()
        if not processed and not queued:
            # The claim found nothing; a client triggers a job before the worker starts waiting,
            # and its NOTIFY reaches the worker's listener in that gap.
            queued.append(await trigger(db, channel_id))
            await wait_for(_event_set(worker), 10, "the NOTIFY to reach the listener")
        return processed

    worker.run_once = claim_then_trigger  # type: ignore[method-assign]
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:

        async def done() -> bool:
            return bool(queued) and (await job_row(db, queued[0])).status == "succeeded"

        await wait_for(done, 20, "the job queued during the empty claim")  # poll interval: 60 s
    finally:
        stop.set()
        await asyncio.wait_for(running, 30)
        await runtime.close()


def _event_set(worker: Any) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return bool(worker._wake.is_set())

    return check
