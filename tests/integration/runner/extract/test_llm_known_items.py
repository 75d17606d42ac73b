"""Known items do not depend on timing: at concurrency 4, chunk i is given the knowledge items of
chunks 0 .. i-4, whichever chunk answers first, so the same window and configuration give the same
digest; and the chunk cache key includes the known items a chunk was given, so a cached result is
only reused for the same input."""

from __future__ import annotations

import asyncio
import random
import re
from typing import Any

from runner.core.chunks import Chunk, chunk_messages
from runner.core.contract import ChunkSummary
from runner.core.extractor import KnownItem
from runner.digests.pipeline import PipelineHooks, PipelineResult, chunk_cache_key, run_pipeline
from runner.extract.llm import LLMExtractor
from runner.llm.breaker import CircuitBreaker
from runner.llm.config import LLMConfig
from runner.llm.fake import FakeLLM, tool_of
from tests.support.llm import API_KEY, chunk_messages_of, make_window, scripted

WINDOW = make_window(
    [
        f"note {i}: service {i % 9} needs its retry budget raised to {i * 3} because the "
        f"upstream queue for tenant {i % 4} stalls during the nightly compaction window"
        for i in range(150)
    ]
)
CHUNK_TOKENS = 400
_KNOWN_LINE = re.compile(r"^P\d+ \S+: .*$", re.MULTILINE)


class TimedModel:
    """The scripted model answering each map request after `delay(position)` seconds, recording
    the known-item lines each chunk (named by its first message) was shown."""

    def __init__(self, delay: Any) -> None:
        self.delay = delay
        self.known_by_chunk: dict[str, tuple[str, ...]] = {}
        self._answer = scripted()
        self._positions: dict[str, int] = {}

    async def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if tool_of(body) == "emit_chunk_summary":
            first = chunk_messages_of(body)[0].message_id
            user = body["messages"][1]["content"]
            block = user.split("<chunk", 1)[0]
            self.known_by_chunk[first] = tuple(_KNOWN_LINE.findall(block))
            position = self._positions.setdefault(first, len(self._positions))
            await asyncio.sleep(self.delay(position))
        answer: dict[str, Any] = self._answer(body)
        return answer


class RecordingExtractor(LLMExtractor):
    """The LLM extractor, recording the keys of the known items each chunk was given."""

    given: dict[str, tuple[str, ...]]

    async def extract_chunk(self, chunk: Chunk, known_items: list[KnownItem]) -> ChunkSummary:
        self.given[chunk.message_ids[0]] = tuple(item.key for item in known_items)
        return await super().extract_chunk(chunk, known_items)


async def digest_with(
    delay: Any, concurrency: int = 4
) -> tuple[PipelineResult, TimedModel, dict[str, tuple[str, ...]]]:
    model = TimedModel(delay)
    async with FakeLLM(model).serve() as base_url:
        config = LLMConfig(base_url=base_url, api_key=API_KEY, concurrency=concurrency)
        extractor = RecordingExtractor(config, breaker=CircuitBreaker("known-items"))
        extractor.given = {}
        try:
            result = await run_pipeline(
                WINDOW, extractor, chunk_tokens=CHUNK_TOKENS, concurrency=concurrency
            )
        finally:
            await extractor.aclose()
    return result, model, extractor.given


async def test_the_digest_and_each_chunks_known_items_do_not_depend_on_timing() -> None:
    chunks = chunk_messages(list(WINDOW.messages), CHUNK_TOKENS)
    assert len(chunks) >= 10
    last = len(chunks) - 1
    first_delays, second_delays = random.Random(1), random.Random(7)
    runs = [
        await digest_with(lambda p: first_delays.uniform(0, 0.06)),
        await digest_with(lambda p: second_delays.uniform(0, 0.06)),
        await digest_with(lambda p: 0.01 * (last - p)),  # later chunks answer first
        await digest_with(lambda p: 0.0),
    ]
    reference, reference_model, reference_given = runs[0]
    assert reference.failed_chunks == []
    for result, model, given in runs[1:]:
        assert given == reference_given
        assert model.known_by_chunk == reference_model.known_by_chunk
        assert result.digest.model_dump() == reference.digest.model_dump()
    # The rule itself: chunk i was given the item of each chunk 0 .. i-4, in chunk order
    # (the scripted model finds one item `K1` per chunk, namespaced by the chunk's content),
    # and its request showed each of them, under the aliases P1, P2, ...
    keys = [f"c{chunk.content_hash[:6]}.K1" for chunk in chunks]
    for index, chunk in enumerate(chunks):
        expected = keys[: max(0, index - 3)]
        assert reference_given[chunk.message_ids[0]] == tuple(expected), index
        shown = reference_model.known_by_chunk[chunk.message_ids[0]]
        assert [line.split(" ", 1)[0] for line in shown] == [
            f"P{number}" for number in range(1, len(expected) + 1)
        ], index


async def test_a_cached_chunk_result_is_reused_only_with_the_same_known_items() -> None:
    cache: dict[str, ChunkSummary] = {}
    calls: list[str] = []

    async def load(key: str) -> ChunkSummary | None:
        return cache.get(key)

    async def save(key: str, summary: ChunkSummary) -> None:
        cache[key] = summary

    hooks = PipelineHooks(load_chunk=load, save_chunk=save)

    def counting(body: dict[str, Any]) -> dict[str, Any]:
        if tool_of(body) == "emit_chunk_summary":
            calls.append(chunk_messages_of(body)[0].message_id)
        answer: dict[str, Any] = scripted()(body)
        return answer

    async with FakeLLM(counting).serve() as base_url:
        results = []
        for concurrency in (4, 4, 1):
            config = LLMConfig(base_url=base_url, api_key=API_KEY, concurrency=concurrency)
            extractor = LLMExtractor(config, breaker=CircuitBreaker("known-cache"))
            calls.clear()
            try:
                result = await run_pipeline(
                    WINDOW,
                    extractor,
                    chunk_tokens=CHUNK_TOKENS,
                    concurrency=concurrency,
                    hooks=hooks,
                )
            finally:
                await extractor.aclose()
            results.append((result, list(calls)))
    (first, first_calls), (same, same_calls), (sequential, sequential_calls) = results
    assert len(first_calls) == first.chunk_count and first.chunks_from_cache == 0
    # The same configuration: every chunk's input is the same, so every result is reused.
    assert same.chunks_from_cache == same.chunk_count and same_calls == []
    assert same.digest.model_dump() == first.digest.model_dump()
    # One at a time, chunks 1-3 are given chunk 0's items: not the input their cached
    # results were made from, so they are mapped again; chunk 0 had none either way.
    assert sequential.chunks_from_cache < sequential.chunk_count
    assert WINDOW.messages[0].message_id not in sequential_calls
    assert len(sequential_calls) == sequential.chunk_count - sequential.chunks_from_cache


def test_the_cache_key_includes_the_known_items() -> None:
    extractor = LLMExtractor(
        LLMConfig(base_url="http://llm.test/v1", api_key=API_KEY),
        breaker=CircuitBreaker("known-key"),
    )
    chunk = chunk_messages(list(WINDOW.messages), CHUNK_TOKENS)[1]
    plain = chunk_cache_key(extractor, chunk)
    assert chunk_cache_key(extractor, chunk, None) == plain
    other = {chunk_cache_key(extractor, chunk, "a"), chunk_cache_key(extractor, chunk, "b")}
    assert len({plain, *other}) == 3
