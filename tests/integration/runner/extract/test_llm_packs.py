"""Several chunks in one map request (DIGESTD_CHUNKS_PER_REQUEST), through the whole pipeline
with the real `openai` client and a scripted fake model: each chunk still gets its own summary,
validated and grounded as when it is sent alone; a chunk whose part is missing or invalid is
asked for alone; a pack the budget cannot hold is not sent."""

from __future__ import annotations

from typing import Any

from runner.core.chunks import iter_chunks
from runner.core.window import Window
from runner.digests.pipeline import PipelineResult, run_pipeline
from runner.extract.llm import LLMExtractor
from runner.llm import limits
from runner.llm.budget import count_request_tokens
from runner.llm.fake import Answer, FakeLLM, completion, error, tool_of
from runner.llm.pack import PACK_TOOL
from tests.support.llm import (
    chunk_requests,
    grounded_summary,
    make_extractor,
    make_window,
    merged_digest,
    packed,
    scripted,
)

TEXTS = [
    f"message {i}: the staging rollout of service {i % 4} waits for `kubectl rollout status` "
    f"to pass on node pool {i % 3}"
    for i in range(24)
]


async def run_packed(
    window: Window, fake: FakeLLM, chunks_per_request: int
) -> tuple[PipelineResult, LLMExtractor]:
    """The pipeline over `window` in chunks of 120 tokens, one request at a time, with up to
    `chunks_per_request` chunks a map request to `fake`; the extractor is closed after."""
    extractor = make_extractor(fake, chunks_per_request=chunks_per_request, concurrency=1)
    try:
        return await run_pipeline(window, extractor, chunk_tokens=120, concurrency=1), extractor
    finally:
        await extractor.aclose()


def chunks_sent(fake: FakeLLM) -> list[list[int]]:
    """The chunk indexes of each map request, in the order they were sent."""
    sent = []
    for body in fake.requests:
        if tool_of(body) == PACK_TOOL:
            sent.append([index for index, _ in chunk_requests(body)])
        elif tool_of(body) == "emit_chunk_summary":
            user = [m for m in body["messages"] if m["role"] == "user"][0]["content"]
            sent.append([int(user.split('<chunk index="', 1)[1].split('"', 1)[0])])
    return sent


async def test_two_chunks_in_one_request_each_get_a_grounded_summary() -> None:
    window = make_window(TEXTS[:8])
    texts = {m.message_id: m.normalized_text for m in window.messages}
    fake = FakeLLM(scripted())
    result, extractor = await run_packed(window, fake, 2)
    sent = chunks_sent(fake)
    assert result.chunk_count == 4 and sent == [[0, 1], [2, 3]]
    assert not result.failed_chunks and not result.fallback_chunks and not result.map_rejections
    # The scripted model shifts every offset by 3; each chunk's pointer was re-anchored.
    items = result.digest.knowledge_items
    assert len(items) == 4 and len({item.key for item in items}) == 4
    for item in items:
        pointer = item.content_pointer
        assert pointer is not None
        assert texts[pointer.message_id][pointer.char_start : pointer.char_end] == pointer.quote
    assert extractor.usage.content_tokens == result.content_tokens
    assert extractor.usage.llm_calls == 3  # two map requests, one reduce
    # The second request was given the first one's items once, for both of its chunks.
    second = [b for b in fake.requests if tool_of(b) == PACK_TOOL][1]["messages"][1]["content"]
    assert second.count("<known_items>") == 1 and second.count("P1 fact: quoted") == 1


async def test_a_pack_costs_fewer_prompt_tokens_than_its_chunks_alone() -> None:
    window = make_window(TEXTS)
    tokens: dict[int, int] = {}
    for per_request in (1, 3):
        fake = FakeLLM(scripted())
        extractor = make_extractor(fake, chunks_per_request=per_request, concurrency=2)
        try:
            await run_pipeline(window, extractor, chunk_tokens=150, concurrency=2)
        finally:
            await extractor.aclose()
        tokens[per_request] = sum(
            count_request_tokens(body["messages"], body["tools"])[0]
            for body in fake.requests
            if tool_of(body) != "emit_digest"
        )
    assert tokens[3] < tokens[1] * 0.8


async def test_an_invalid_part_is_asked_for_alone_and_the_others_kept() -> None:
    window = make_window(TEXTS[:12])

    def second_part_broken(body: dict[str, Any]) -> dict[str, Any]:
        tool = tool_of(body)
        if tool == PACK_TOOL:
            arguments = packed(grounded_summary)(body)
            arguments["summaries"][1]["signal_quality"] = {"level": "superb"}
            return completion(tool=tool, arguments=arguments)
        if tool == "emit_chunk_summary":
            return completion(tool=tool, arguments=grounded_summary(body))
        return completion(tool=tool, arguments=merged_digest(body))

    fake = FakeLLM(second_part_broken)
    result, _ = await run_packed(window, fake, 3)
    sent = chunks_sent(fake)
    assert result.chunk_count == 6
    # Each pack's second chunk was sent again on its own, right after its pack.
    assert sent == [[0, 1, 2], [1], [3, 4, 5], [4]]
    assert not result.failed_chunks and not result.fallback_chunks
    assert len(result.digest.knowledge_items) == 6


async def test_a_missing_part_is_asked_for_alone() -> None:
    window = make_window(TEXTS[:6])

    def drops_the_last(body: dict[str, Any]) -> dict[str, Any]:
        tool = tool_of(body)
        if tool == PACK_TOOL:
            arguments = packed(grounded_summary)(body)
            arguments["summaries"].pop()
            return completion(tool=tool, arguments=arguments)
        return scripted()(body)

    fake = FakeLLM(drops_the_last)
    result, _ = await run_packed(window, fake, 2)
    assert chunks_sent(fake) == [[0, 1], [1], [2]]
    assert result.chunk_count == 3 and not result.failed_chunks and not result.fallback_chunks


async def test_a_pack_the_endpoint_fails_is_read_offline_chunk_by_chunk() -> None:
    window = make_window(TEXTS[:6])

    def maps_fail(body: dict[str, Any]) -> Answer:
        if tool_of(body) == "emit_digest":
            return completion(tool="emit_digest", arguments=merged_digest(body))
        return error(400, "bad request")

    fake = FakeLLM(maps_fail)
    result, _ = await run_packed(window, fake, 3)
    # One failed request for the pack, no request per chunk: each was read offline instead.
    assert chunks_sent(fake) == [[0, 1, 2]]
    assert [f["chunk"] for f in result.fallback_chunks] == [0, 1, 2]
    assert not result.failed_chunks
    assert any(w.code == "CHUNKS_EXTRACTED_OFFLINE" for w in result.warnings)


async def test_packs_stay_within_the_map_models_context() -> None:
    """A context too small for three chunks at once: packs hold what fits, and every request
    sent fits the budget it was counted against."""
    window = make_window([f"{text}; " * 6 for text in TEXTS * 3])
    fake = FakeLLM(scripted())
    extractor = make_extractor(
        fake,
        chunks_per_request=3,
        concurrency=1,
        map_context_tokens=12_000,
        map_max_output_tokens=1000,
    )
    try:
        budget = extractor.pack_budget(extractor.chunks_per_request())
        room = extractor.pack_tokens()
        result = await run_pipeline(window, extractor, chunk_tokens=1800, concurrency=1)
    finally:
        await extractor.aclose()
    assert not result.failed_chunks and not result.fallback_chunks
    chunks = list(iter_chunks(window.messages, 1800))
    assert result.chunk_count == len(chunks) >= 4
    assert 2 * 1800 <= room < 3 * min(chunk.token_count for chunk in chunks[:-1])
    packs = chunks_sent(fake)
    assert max(len(pack) for pack in packs) == 2
    assert [index for pack in packs for index in pack] == list(range(len(chunks)))
    for body in fake.requests:
        if tool_of(body) == PACK_TOOL:
            prompt, _ = count_request_tokens(body["messages"], body["tools"])
            assert prompt <= budget.input_tokens
            indexes = [index for index, _ in chunk_requests(body)]
            assert sum(chunks[index].token_count for index in indexes) <= room


async def test_packing_keeps_each_chunks_output_room() -> None:
    """A map model whose output limit cannot hold three chunks' answers gets one a request."""
    fake = FakeLLM(scripted())
    roomy = make_extractor(fake, chunks_per_request=3)
    tight = make_extractor(fake, chunks_per_request=3, map_output_tokens=6000)
    try:
        assert roomy.chunks_per_request() == 3
        assert tight.chunks_per_request() == 1
    finally:
        await roomy.aclose()
        await tight.aclose()


async def test_a_pack_refused_as_over_the_context_is_sent_chunk_by_chunk() -> None:
    """The endpoint says its context is smaller than the table's: the refused pack's chunks are
    sent alone, and the context it taught leaves no room for packs afterwards."""
    window = make_window(TEXTS[:6])
    respond = scripted()

    def small_context(body: dict[str, Any]) -> Answer:
        if tool_of(body) == PACK_TOOL:
            return error(
                400,
                body={
                    "error": {
                        "message": "This model's maximum context length is 16000 tokens. "
                        "However, you requested 20000 tokens.",
                        "type": "invalid_request_error",
                        "code": "context_length_exceeded",
                    }
                },
            )
        return respond(body)

    fake = FakeLLM(small_context)
    extractor = make_extractor(fake, chunks_per_request=3, concurrency=1)
    try:
        assert extractor.chunks_per_request() == 3
        result = await run_pipeline(window, extractor, chunk_tokens=120, concurrency=1)
        assert extractor.chunks_per_request() == 1
    finally:
        await extractor.aclose()
        limits.forget()  # what the endpoint taught is the process's: keep it to this test
    assert chunks_sent(fake) == [[0, 1, 2], [0], [1], [2]]
    assert not result.failed_chunks and not result.fallback_chunks
