"""Workers as they run in production: the LLM extractor wired from settings (a real `openai`
client against a local fake model server), an endpoint that is down, a cancelled running job,
and a worker process killed with SIGKILL mid-job whose job another worker finishes from the
chunk cache."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import pytest
from starlette.responses import Response

from db import jobs
from runner.llm.fake import FakeLLM, error
from server.runtime import Runtime
from server.settings import Settings
from tests.support.database import add_channel
from tests.support.llm import API_KEY, chunk_requests, scripted
from tests.support.worker import (
    assert_pointers_resolve,
    job_row,
    llm_settings,
    run_one_job,
    sample_messages,
    trigger,
    wait_for,
)


async def test_llm_extractor_from_settings_digests_a_channel(
    db: asyncpg.Pool, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    channel_id = await add_channel(db, "team-platform", sample_messages())
    fake = FakeLLM(scripted())
    async with fake.serve() as base_url:
        job_id = await run_one_job(db, llm_settings(settings, base_url), channel_id)
    job = await job_row(db, job_id)
    assert job.status == "succeeded", job.error
    stats = job.stats
    map_requests = [
        body
        for body in fake.requests
        if body["tool_choice"]["function"]["name"] == "emit_chunk_summaries"
    ]
    # 70 messages at 400 tokens a chunk, three chunks a request (DIGESTD_CHUNKS_PER_REQUEST).
    sent = [len(chunk_requests(body)) for body in map_requests]
    assert stats["chunks"] == sum(sent) >= 3 and set(sent[:-1]) == {3}
    assert stats["llm_calls"] == len(fake.requests) and stats["prompt_tokens"] > 0
    # The scripted model shifts every offset by 3; validation re-anchored them on the quote.
    assert await assert_pointers_resolve(db, job.digest_id) >= 1
    assert API_KEY not in caplog.text and API_KEY not in json.dumps(dict(job), default=str)


async def test_an_endpoint_answering_503_still_gives_a_digest_read_offline(
    db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id = await add_channel(db, "team-platform", sample_messages())

    def unavailable(body: dict[str, Any]) -> Response:
        return error(503, "overloaded")

    fake = FakeLLM(unavailable)
    async with fake.serve() as base_url:
        job_id = await run_one_job(db, llm_settings(settings, base_url), channel_id)
    job = await job_row(db, job_id)
    assert fake.requests, "the endpoint was never called"
    # The offline rules read every chunk: a digest at the first attempt, marked PARTIAL.
    assert job.status == "partial" and job.attempts == 1, job.error
    assert job.digest_id is not None and job.stats["chunks_offline"] == job.stats["chunks"]
    [warning] = [w for w in job.warnings if w["code"] == "CHUNKS_EXTRACTED_OFFLINE"]
    assert "HTTP 503" in warning["message"] and "overloaded" in warning["message"]
    assert API_KEY not in json.dumps(job.warnings)
    assert await assert_pointers_resolve(db, job.digest_id) >= 1


async def test_cancelling_a_running_job_stops_it_without_a_digest(
    db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id = await add_channel(db, "team-platform", sample_messages())
    respond = scripted()
    asked = 0
    heard = asyncio.Event()  # a heartbeat of the worker has read the cancel request

    async def held_after_the_first_chunk(body: dict[str, Any]) -> dict[str, Any]:
        # The second chunk is answered only once the worker knows of the cancel: the job
        # cannot finish meanwhile, however slowly the heartbeat runs.
        nonlocal asked
        asked += 1
        if asked > 1:
            await heard.wait()
        answer: dict[str, Any] = respond(body)
        return answer

    async with FakeLLM(held_after_the_first_chunk).serve() as base_url:
        runtime = Runtime(llm_settings(settings, base_url, digest_llm_concurrency=1))
        await runtime.open()
        try:
            job_id = await trigger(db, channel_id)
            running = asyncio.create_task(runtime.new_worker().run_once())

            async def mapping() -> bool:
                return (await job_row(db, job_id)).chunks_done >= 1

            await wait_for(mapping, 30, "the first chunk")
            async with db.acquire() as connection:
                cancelled = await jobs.cancel_job(connection, job_id)
            assert cancelled is not None and cancelled.cancel_requested
            lease_at_cancel = cancelled.lease_expires_at
            assert lease_at_cancel is not None

            async def renewed() -> bool:
                # Only a heartbeat moves the lease; one that moved it after the cancel read
                # cancel_requested in the same statement.
                lease = (await job_row(db, job_id)).lease_expires_at
                return lease is not None and lease > lease_at_cancel

            await wait_for(renewed, 30, "a heartbeat to read the cancel request")
            heard.set()
            await asyncio.wait_for(running, 30)
        finally:
            heard.set()
            await runtime.close()
    job = await job_row(db, job_id)
    assert job.status == "cancelled" and job.digest_id is None
    assert 1 <= job.chunks_done < job.chunks_total


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

    async def claim_then_trigger(stop: asyncio.Event | None = None) -> bool:
        processed = await claim(stop)
        if not processed and not queued:
            # The claim found nothing; a client triggers a job before the worker starts waiting,
            # and its NOTIFY reaches the worker's listener in that gap.
            queued.append(await trigger(db, channel_id))
            await wait_for(_event_set(worker), 10, "the NOTIFY to reach the listener")
        return processed

    worker.run_once = claim_then_trigger  # type: ignore[method-assign]  # wrapped for this test
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
