"""Faults at the HTTP edge: retries with backoff and Retry-After, timeouts, non-retried 4xx,
the API key kept out of logs, errors and reprs, and cancellation reaching the request."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest

from runner.core.chunks import chunk_messages
from runner.core.extractor import ChunkFailed
from runner.digests.pipeline import run_pipeline
from runner.llm.config import LLMConfig
from runner.llm.fake import FakeLLM, completion, error
from tests.support.llm import (
    API_KEY,
    Sleeps,
    make_extractor,
    make_window,
    minimal_summary,
    scripted,
)

WINDOW = make_window(["the build fails on arm64 with exit code 137", "raise the memory limit"])
CHUNK = chunk_messages(list(WINDOW.messages), 4000)[0]


def failing(responses: list[Any]) -> FakeLLM:
    """An endpoint answering with `responses` in turn, then with a valid summary."""
    queue = list(responses)

    def respond(body: dict[str, Any]) -> Any:
        if queue:
            item = queue.pop(0)
            if isinstance(item, Exception):
                raise item
            return item
        return completion(tool="emit_chunk_summary", arguments=minimal_summary(body))

    return FakeLLM(respond)


async def test_429_waits_for_retry_after() -> None:
    endpoint = failing(
        [
            error(429, "slow", retry_after=7),
            error(429, body={"error": {}}, headers={"retry-after-ms": "1500"}),
        ]
    )
    sleeps = Sleeps()
    extractor = make_extractor(endpoint, sleeps=sleeps)
    summary = await extractor.extract_chunk(CHUNK, [])
    assert summary.signal_quality.level.value == "low"
    assert len(endpoint.requests) == 3
    assert 7 <= sleeps.delays[0] <= 7.8 and 1.5 <= sleeps.delays[1] <= 1.7
    assert extractor.usage.llm_calls == 1 and extractor.caller.retries == 2


async def test_retry_after_beyond_the_cap_fails_without_waiting() -> None:
    endpoint = failing([error(429, body={}, retry_after=3600)])
    sleeps = Sleeps()
    extractor = make_extractor(endpoint, sleeps=sleeps)
    with pytest.raises(ChunkFailed, match="3600s"):
        await extractor.extract_chunk(CHUNK, [])
    assert sleeps.delays == [] and len(endpoint.requests) == 1


async def test_5xx_and_timeouts_retry_with_capped_exponential_backoff() -> None:
    request = httpx.Request("POST", "http://llm.test/v1/chat/completions")
    endpoint = failing(
        [
            error(500, "boom"),
            error(503, body={}),
            httpx.ReadTimeout("slow", request=request),
            httpx.ConnectError("refused", request=request),
        ]
    )
    sleeps = Sleeps()
    extractor = make_extractor(
        endpoint, sleeps=sleeps, max_retries=4, backoff_base_seconds=1, backoff_max_seconds=3
    )
    await extractor.extract_chunk(CHUNK, [])
    assert len(endpoint.requests) == 5
    ceilings = [1, 2, 3, 3]  # base × 2^attempt, capped at 3
    for delay, ceiling in zip(sleeps.delays, ceilings, strict=True):
        assert ceiling / 2 <= delay <= ceiling


async def test_retries_are_bounded() -> None:
    endpoint = FakeLLM(lambda body: error(502, body={}))
    extractor = make_extractor(endpoint, max_retries=2)
    with pytest.raises(ChunkFailed, match="after 3 attempts: HTTP 502"):
        await extractor.extract_chunk(CHUNK, [])
    assert len(endpoint.requests) == 3


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_other_4xx_are_not_retried(status: int) -> None:
    endpoint = FakeLLM(lambda body: error(status, "no"))
    extractor = make_extractor(endpoint)
    with pytest.raises(ChunkFailed, match=f"HTTP {status}"):
        await extractor.extract_chunk(CHUNK, [])
    assert len(endpoint.requests) == 1


@pytest.mark.parametrize("status", [408, 409])
async def test_408_and_409_are_retried(status: int) -> None:
    endpoint = failing([error(status, body={})])
    extractor = make_extractor(endpoint)
    await extractor.extract_chunk(CHUNK, [])
    assert len(endpoint.requests) == 2


async def test_a_hung_request_times_out_as_a_whole_and_is_retried() -> None:
    calls = 0

    async def respond(body: dict[str, Any]) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.sleep(30)  # a server that never answers
        return completion(tool="emit_chunk_summary", arguments=minimal_summary(body))

    extractor = make_extractor(FakeLLM(respond), timeout_seconds=0.2)
    summary = await asyncio.wait_for(extractor.extract_chunk(CHUNK, []), 5)
    assert summary.chunk_summary and calls == 2


async def test_the_api_key_never_reaches_logs_errors_or_reprs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    echoed = {"error": {"message": f"Incorrect API key provided: {API_KEY}"}}
    endpoint = FakeLLM(lambda body: error(401, body=echoed))
    extractor = make_extractor(endpoint, extra_headers={"X-Api-Key": "proxy-secret-42"})
    caplog.set_level(logging.DEBUG)
    result = await run_pipeline(WINDOW, extractor, chunk_tokens=4000)
    reason = str(result.fallback_chunks[0]["reason"])  # read offline instead
    assert "HTTP 401" in reason
    assert endpoint.exchanges[0].headers["authorization"] == f"Bearer {API_KEY}"  # it was sent
    assert endpoint.exchanges[0].headers["x-api-key"] == "proxy-secret-42"
    texts = [reason, repr(extractor.config), str(extractor.config), caplog.text]
    texts += [str(w) for w in result.warnings] + [r.getMessage() for r in caplog.records]
    for text in texts:
        assert API_KEY not in text and "proxy-secret-42" not in text
        assert "SECRET-0123" not in text
    assert "api_key='***'" in repr(LLMConfig(api_key="sk-abc"))


async def test_extra_headers_are_sent() -> None:
    endpoint = FakeLLM(scripted())
    extractor = make_extractor(
        endpoint, extra_headers={"anthropic-beta": "prompt-caching-2024-07-31"}
    )
    await extractor.extract_chunk(CHUNK, [])
    assert endpoint.exchanges[0].headers["anthropic-beta"] == "prompt-caching-2024-07-31"
    assert extractor.client.max_retries == 0


async def test_cancelling_a_chunk_aborts_its_http_request() -> None:
    entered = asyncio.Event()
    outcome: list[str] = []

    async def respond(body: dict[str, Any]) -> Any:
        entered.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise
        outcome.append("finished")
        return completion(tool="emit_chunk_summary", arguments=minimal_summary(body))

    extractor = make_extractor(FakeLLM(respond))
    task = asyncio.create_task(extractor.extract_chunk(CHUNK, []))
    await asyncio.wait_for(entered.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    assert outcome == ["cancelled"]
