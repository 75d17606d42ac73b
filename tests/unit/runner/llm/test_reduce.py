"""The reduce step's degradation order and fallbacks: tree reduce, shortened summaries, dropping
the lowest-signal ones, and deterministic merges when a reduce call fails."""

from __future__ import annotations

import asyncio
from typing import Any

from runner.core.contract import ChunkSummary, Digest
from runner.core.merge import merge_outputs
from runner.grounding.validate import words_of_window
from runner.llm.budget import count_request_tokens
from runner.llm.fake import FakeLLM, completion, error, tool_of
from runner.llm.reduce import TreeReducer
from tests.support.llm import make_extractor, make_window, mapped, merged_digest

TEXTS = [f"message {i}: set DOCKER_BUILDKIT=1 to speed up builds of image {i}" for i in range(40)]
WINDOW = make_window(TEXTS)


def summary(i: int, level: str = "medium", padding: int = 0) -> ChunkSummary:
    message_id = str(1000 + i)
    return ChunkSummary.model_validate(
        {
            "chunk_summary": f"chunk {i} talks about buildkit. " + "more words " * padding,
            "signal_quality": {"level": level, "reason": "test"},
            "decisions": [
                {"text": f"set DOCKER_BUILDKIT=1 for image {i}", "message_ids": [message_id]}
            ],
            "knowledge_items": [
                {
                    "key": f"c{i:06d}.K1",
                    "kind": "config",
                    "title": f"buildkit for image {i}",
                    "content_pointer": {
                        "message_id": message_id,
                        "char_start": 0,
                        "char_end": len(f"message {i}: set DOCKER_BUILDKIT=1"),
                        "quote": f"message {i}: set DOCKER_BUILDKIT=1",
                    },
                    "context_version": "docker 24",
                }
            ],
            "notable_message_ids": [message_id],
        }
    )


def reducer_for(
    endpoint: FakeLLM,
    *,
    context: int,
    max_levels: int = 3,
    output: int = 600,
    retries: int = 4,
) -> tuple[Any, list[Any]]:
    extractor = make_extractor(
        endpoint,
        reduce_model="small",
        model_limits={"small": {"context_window": context, "max_output_tokens": output}},
        max_reduce_levels=max_levels,
        max_retries=retries,
    )
    return extractor, extractor.warnings


def faithful(body: dict[str, Any]) -> dict[str, Any]:
    return completion(tool=tool_of(body), arguments=merged_digest(body))


async def test_everything_that_fits_goes_in_one_call() -> None:
    endpoint = FakeLLM(faithful)
    extractor, warnings = reducer_for(endpoint, context=100_000, output=8000)
    digest = await extractor.synthesize_digest(mapped([summary(i) for i in range(5)]), WINDOW, [])
    assert len(endpoint.requests) == 1 and warnings == []
    assert len(digest.knowledge_items) == 5
    assert digest.coverage.messages_total == 40 and digest.coverage.first_message_id == "1000"


async def test_empty_signal_summaries_are_not_sent() -> None:
    endpoint = FakeLLM(faithful)
    extractor, _ = reducer_for(endpoint, context=100_000)
    empty = ChunkSummary.model_validate(
        {"chunk_summary": "hi", "signal_quality": {"level": "empty", "reason": "greetings"}}
    )
    await extractor.synthesize_digest(mapped([empty, summary(1), empty]), WINDOW, [])
    assert endpoint.requests[0]["messages"][1]["content"].count("<summary ") == 1
    digest = await extractor.synthesize_digest(mapped([empty, empty]), WINDOW, [])
    assert len(endpoint.requests) == 1  # nothing to merge: no call
    assert digest.signal_quality.level.value == "empty"


async def test_without_levels_summaries_are_shortened_then_the_lowest_signal_dropped() -> None:
    endpoint = FakeLLM(faithful)
    extractor, warnings = reducer_for(endpoint, context=5200, max_levels=0)
    levels = ["high", "low", "medium", "low", "high", "medium"] * 3
    summaries = [summary(i, level, padding=40) for i, level in enumerate(levels)]
    await extractor.synthesize_digest(mapped(summaries), WINDOW, [])
    codes = [w.code for w in warnings]
    assert codes.index("CONTENT_TRUNCATED") < codes.index("CONTENT_DROPPED")
    dropped = next(w.message for w in warnings if w.code == "CONTENT_DROPPED")
    dropped_positions = [int(p.split()[-1]) - 1 for p in dropped.split(": ", 1)[1].split(", ")]
    rank = {"low": 1, "medium": 2, "high": 3}
    kept = [levels[i] for i in range(len(levels)) if i not in dropped_positions]
    assert dropped_positions and kept
    assert max(rank[levels[i]] for i in dropped_positions) <= min(rank[level] for level in kept)
    body = endpoint.requests[0]
    assert (
        count_request_tokens(body["messages"], body["tools"])[0]
        <= extractor.reduce_budget.input_tokens
    )
    assert "more words " * 30 not in body["messages"][1]["content"]  # shortened


async def test_a_failed_partial_merge_is_replaced_by_a_deterministic_one() -> None:
    def respond(body: dict[str, Any]) -> Any:
        content = body["messages"][1]["content"]
        if "partial merge" in content and 'of="chunk 1"' in content:
            return error(500, "down")
        return faithful(body)

    endpoint = FakeLLM(respond)
    extractor, warnings = reducer_for(endpoint, context=7000, retries=0)
    summaries = [summary(i, padding=20) for i in range(30)]
    digest = await extractor.synthesize_digest(mapped(summaries), WINDOW, [])
    assert any(
        w.code == "SUMMARY_PROVIDER_FAILED" and "merge of chunks" in w.message for w in warnings
    )
    final = endpoint.requests[-1]["messages"][1]["content"]
    assert "partial merge" not in final
    assert 'of="chunks 1-' in final  # the deterministic merge of the failed group went up
    assert "c000000.K1" in final  # with its items
    assert digest.title


async def test_a_failed_final_reduce_uses_the_offline_reduce_of_all_summaries() -> None:
    endpoint = FakeLLM(lambda body: completion(content="I refuse", finish_reason="stop"))
    extractor, warnings = reducer_for(endpoint, context=100_000)
    summaries = [summary(i) for i in range(8)]
    digest = await extractor.synthesize_digest(mapped(summaries), WINDOW, [])
    assert len(endpoint.requests) == 2  # the call and its re-ask
    assert [w.code for w in warnings] == ["SUMMARY_PROVIDER_FAILED"]
    assert "The reduce step failed" in digest.coverage.notes
    assert {k.content_pointer.message_id for k in digest.knowledge_items if k.content_pointer} == {
        str(1000 + i) for i in range(8)
    }


async def test_a_broken_offline_reduce_falls_back_to_the_plain_merge() -> None:
    async def broken(*args: Any) -> Digest:
        raise RuntimeError("not today")

    endpoint = FakeLLM(lambda body: error(503, body={}))
    extractor, warnings = reducer_for(endpoint, context=100_000)
    reducer = TreeReducer(
        extractor.tools,
        extractor.reduce_budget,
        extractor.reduce_prompt.text,
        WINDOW,
        max_levels=3,
        min_overlap=0.5,
        warn=extractor._warn,
        fallback=broken,
    )
    digest = await reducer.reduce(mapped([summary(i) for i in range(4)]), [])
    assert len(digest.knowledge_items) == 4 and len(digest.decisions) == 4
    assert "The reduce step failed" in digest.coverage.notes


def test_plain_merge_dedupes_keeps_keys_unique_and_counts_the_cut() -> None:
    twin = summary(1).model_copy(update={"knowledge_items": summary(1).knowledge_items})
    other = summary(2)
    clash = other.model_copy(
        update={
            "knowledge_items": [
                other.knowledge_items[0].model_copy(
                    update={"key": summary(1).knowledge_items[0].key}
                )
            ]
        }
    )
    many: list[ChunkSummary | Digest] = [*(summary(i % 40) for i in range(40)), twin, clash]
    digest, dropped = merge_outputs(many, WINDOW, "note")
    keys = [k.key for k in digest.knowledge_items]
    assert len(keys) == len(set(keys)) == 40
    assert dropped == 15  # 40 distinct decisions, the Digest keeps 25
    assert len(digest.decisions) == 25 and digest.coverage.notes == "note"


async def test_a_reduce_model_too_small_for_its_prompt_falls_back_without_calling() -> None:
    endpoint = FakeLLM(faithful)
    # (1,900 - 100 output - 256 overhead) x 0.85 = 1,312 input tokens, under the reduce prompt
    # and schema (about 1,750).
    extractor, warnings = reducer_for(endpoint, context=1900, output=100)
    digest = await extractor.synthesize_digest(mapped([summary(i) for i in range(3)]), WINDOW, [])
    assert endpoint.requests == []
    assert "cannot hold the reduce prompt" in warnings[0].message
    assert len(digest.knowledge_items) == 3


async def test_the_window_words_are_found_once_for_every_partial_merge(monkeypatch: Any) -> None:
    """Each partial digest's title and keywords are checked against the window's words: found
    once for all of them, or not at all when the pipeline handed them over."""
    found: list[int] = []

    def counted(texts: Any, channel_name: str = "") -> set[str]:
        found.append(1)
        return words_of_window(texts, channel_name)

    monkeypatch.setattr("runner.llm.reduce.words_of_window", counted)
    summaries = [summary(i, padding=20) for i in range(30)]
    endpoint = FakeLLM(faithful)
    extractor, _ = reducer_for(endpoint, context=7000)
    alone = await extractor.synthesize_digest(mapped(summaries), WINDOW, [])
    partials = sum("partial merge" in r["messages"][1]["content"] for r in endpoint.requests)
    assert partials >= 2 and found == [1]

    found.clear()
    extractor, _ = reducer_for(FakeLLM(faithful), context=7000)
    words = asyncio.get_running_loop().create_future()
    words.set_result(words_of_window((m.normalized_text for m in WINDOW.messages), "general"))
    extractor.use_window_words(WINDOW, words)
    assert await extractor.synthesize_digest(mapped(summaries), WINDOW, []) == alone
    assert found == []
