"""Workers run in the test: a job triggered and run once, queued jobs run, its row, settings for the LLM extractor, a slow fake model, and a wait for a condition."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import asyncpg
from pydantic import SecretStr

from db import jobs
from db.models import DigestJob
from runner.llm.fake import Model, delayed
from server.runtime import Runtime
from server.settings import Settings
from tests.support.database import Msg
from tests.support.llm import API_KEY, scripted
from tests.support.paths import SAMPLE


def sample_messages() -> list[Msg]:
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line]
    return [
        Msg(
            row["id"],
            row["author"],
            datetime.fromisoformat(row["ts"]),
            row["text"],
            row.get("reply_to"),
        )
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


def slow_model(delay: float) -> Model:
    """The scripted model, answering after `delay` seconds, so a job is caught mid-map."""
    return delayed(scripted(), delay)


async def trigger(pool: asyncpg.Pool, channel_id: int) -> int:
    async with pool.acquire() as connection:
        job, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )
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


async def run_queued_jobs(runtime_settings: Settings, count: int = 1) -> None:
    """Let one worker of a fresh runtime process `count` jobs already queued (each must be)."""
    runtime = Runtime(runtime_settings)
    await runtime.open()
    try:
        worker = runtime.new_worker()
        for _ in range(count):
            assert await worker.run_once()
    finally:
        await runtime.close()


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


async def assert_pointers_resolve(pool: asyncpg.Pool, digest_id: int | None) -> int:
    """Every stored knowledge-item pointer slices its message's normalized text to its quote."""
    assert digest_id is not None, "the job wrote no digest"
    async with pool.acquire() as connection:
        rows = await connection.fetch(
            "SELECT k.char_start, k.char_end, k.quote, m.normalized_text FROM knowledge_items k "
            "JOIN messages m ON m.id = k.message_id WHERE k.digest_id = $1",
            digest_id,
        )
    for row in rows:
        assert row["normalized_text"][row["char_start"] : row["char_end"]] == row["quote"]
    return len(rows)
