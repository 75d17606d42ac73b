"""The LLM extractor through the whole pipeline (chunk → map → validate → reduce → validate)
with the real `openai` client talking to a scripted fake model."""

from __future__ import annotations

import asyncio
from typing import Any

from runner.core.contract import ChunkSummary
from runner.digests.pipeline import PipelineHooks, run_pipeline
from runner.extract.llm import LLMExtractor
from runner.grounding.pointers import MatchKind
from runner.llm.breaker import CircuitBreaker
from runner.llm.config import LLMConfig
from runner.llm.fake import FakeLLM, completion, error, tool_of
from tests.support.llm import (
    API_KEY,
    chunk_messages_of,
    grounded_summary,
    make_extractor,
    make_window,
    merged_digest,
    parse_chat_log,
    scripted,
    shared_data,
)

TEXTS = [
    "Our deploy broke after upgrading to compose v2 🚀 — the healthcheck never passes.",
    "Try `docker compose up -d --wait` and check that the healthcheck uses CMD-SHELL.",
    "That fixed it, thanks! We will keep compose v2 and pin the image to 1.4.2.",
    "Café au lait ☕ later? Also the naïve retry loop in the entrypoint should go.",
    "Agreed: remove the retry loop from the entrypoint script before Friday.",
]


def every_pointer(result: Any) -> list[tuple[str, int, int, str]]:
    digest = result.digest
    pointers = [a.pointer for a in digest.artifacts]
    pointers += [k.content_pointer for k in digest.knowledge_items if k.content_pointer]
    return [(p.message_id, p.char_start, p.char_end, p.quote) for p in pointers]


def assert_grounded(result: Any, texts: dict[str, str]) -> None:
    """Nothing that survived validation cites a missing message or a pointer that does not
    slice to its quote."""
    for message_id, start, end, quote in every_pointer(result):
        assert texts[message_id][start:end] == quote
    digest = result.digest
    for field_name in ("decisions", "action_items", "open_questions"):
        for item in getattr(digest, field_name):
            assert item.message_ids and all(i in texts for i in item.message_ids)
    for item in digest.knowledge_items:
        assert all(i in texts for i in item.message_ids)
    assert all(i in texts for i in digest.notable_message_ids)


async def test_full_flow_over_a_local_server_reanchors_wrong_offsets() -> None:
    window = make_window(TEXTS)
    texts = {m.message_id: m.normalized_text for m in window.messages}
    sent_pointers: list[tuple[str, int, int, str]] = []

    def map_and_record(body: dict[str, Any]) -> dict[str, Any]:
        summary = grounded_summary(body)
        p = summary["knowledge_items"][0]["content_pointer"]
        sent_pointers.append((p["message_id"], p["char_start"], p["char_end"], p["quote"]))
        return summary

    fake = FakeLLM(scripted(map_and_record))
    async with fake.serve() as base_url:
        config = LLMConfig(base_url=base_url, api_key=API_KEY, concurrency=2)
        extractor = LLMExtractor(config, breaker=CircuitBreaker("local"))
        try:
            result = await run_pipeline(window, extractor, chunk_tokens=60, concurrency=2)
        finally:
            await extractor.aclose()
    assert result.chunk_count >= 2
    assert [tool_of(body) for body in fake.requests].count("emit_digest") == 1
    assert not result.failed_chunks
    # The model's offsets were all wrong; the map validation re-anchored them by their quotes,
    # so the reduce step saw (and copied) offsets that already slice to the quote.
    assert all(texts[m][s:e] != q for m, s, e, q in sent_pointers)
    stored = every_pointer(result)
    assert stored and {(m, q) for m, _, _, q in stored} <= {(m, q) for m, _, _, q in sent_pointers}
    assert set(result.validation.pointer_matches["knowledge_items"]) == {MatchKind.OFFSETS}
    assert_grounded(result, texts)
    assert extractor.usage.llm_calls == len(fake.requests)
    assert extractor.usage.content_tokens == result.content_tokens


async def test_invalid_model_output_never_survives_validation() -> None:
    window = make_window(TEXTS)
    texts = {m.message_id: m.normalized_text for m in window.messages}

    def lying_summary(body: dict[str, Any]) -> dict[str, Any]:
        sent = chunk_messages_of(body)
        first = sent[0]
        good_quote = first.text.split()[2]
        return {
            "chunk_summary": "x",
            "signal_quality": {"level": "empty", "reason": "nothing here"},
            "decisions": [
                {"text": "ship it", "message_ids": ["999999"]},  # fabricated id
                {"text": "quantum blockchain synergy roadmap", "message_ids": [first.message_id]},
            ],
            "links": [{"url": "https://invented.example", "message_ids": [first.message_id]}],
            "artifacts": [
                {
                    "kind": "code",
                    "title": "out of bounds",
                    "pointer": {
                        "message_id": first.message_id,
                        "char_start": 5000,
                        "char_end": 5010,
                    },
                },
                {
                    "kind": "command",
                    "title": "mismatched",
                    "pointer": {
                        "message_id": first.message_id,
                        "char_start": 0,
                        "char_end": 10,
                        "quote": "rm -rf / --no-preserve-root",
                    },
                },
                {
                    "kind": "other",
                    "title": "right quote, wrong offsets",
                    "pointer": {
                        "message_id": first.message_id,
                        "char_start": 0,
                        "char_end": 2,
                        "quote": good_quote,
                    },
                },
            ],
            "notable_message_ids": ["424242", first.message_id],
        }

    def reduce_with_fabrications(body: dict[str, Any]) -> dict[str, Any]:
        digest = merged_digest(body)
        digest["decisions"] = digest.get("decisions", []) + [
            {"text": "we decided nothing", "message_ids": ["31337"]}
        ]
        digest["notable_message_ids"] = ["31337"]
        return digest

    endpoint = FakeLLM(scripted(lying_summary, reduce_with_fabrications))
    extractor = make_extractor(endpoint)
    result = await run_pipeline(window, extractor, chunk_tokens=60)
    reasons = {r.reason.split(":", 1)[0] for r in result.map_rejections}
    assert {
        "unknown_message_id",
        "low_support",
        "url_not_in_source",
        "pointer_unresolved",
    } <= reasons
    # Only the pointer whose quote is real survives the map step, re-anchored.
    assert all(
        s == "right quote, wrong offsets" for s in (a.title for a in result.digest.artifacts)
    )
    assert_grounded(result, texts)
    assert not result.digest.decisions or all(
        "31337" not in d.message_ids for d in result.digest.decisions
    )
    assert any(r.reason.startswith("unknown_message_id") for r in result.validation.rejections)


async def test_empty_citations_are_sent_back_and_never_stored() -> None:
    """The contract requires citations, so an uncited claim is a schema violation: the model
    gets the concrete error once; whatever it answers, no uncited claim is stored."""
    window = make_window(TEXTS[:3])
    texts = {m.message_id: m.normalized_text for m in window.messages}
    asked = 0

    def uncited_then_fixed(body: dict[str, Any]) -> dict[str, Any]:
        nonlocal asked
        asked += 1
        summary = grounded_summary(body)
        if body["messages"][-1]["role"] != "tool":
            summary["open_questions"] = [{"text": "which healthcheck?", "message_ids": []}]
            summary["knowledge_items"].append(
                {"key": "K2", "kind": "fact", "title": "uncited", "content": "compose v2 works"}
            )
        return summary

    endpoint = FakeLLM(scripted(uncited_then_fixed))
    result = await run_pipeline(window, make_extractor(endpoint), chunk_tokens=4000)
    reask = endpoint.requests[1]["messages"][-1]
    assert reask["role"] == "tool"
    assert "open_questions.0.message_ids" in reask["content"]
    assert "cite the message_ids" in reask["content"]
    assert not result.failed_chunks and asked == 2
    assert all(q.message_ids for q in result.digest.open_questions)
    assert all(k.content_pointer or k.message_ids for k in result.digest.knowledge_items)
    assert_grounded(result, texts)


async def test_signal_inconsistency_is_corrected() -> None:
    window = make_window(TEXTS[:2])

    def empty_but_full(body: dict[str, Any]) -> dict[str, Any]:
        summary = grounded_summary(body)
        summary["signal_quality"] = {"level": "empty", "reason": "claims nothing"}
        return summary

    def empty_digest(body: dict[str, Any]) -> dict[str, Any]:
        digest = merged_digest(body)
        digest["signal_quality"] = {"level": "empty", "reason": "claims nothing"}
        return digest

    extractor = make_extractor(FakeLLM(scripted(empty_but_full, empty_digest)))
    result = await run_pipeline(window, extractor, chunk_tokens=4000)
    assert result.digest.signal_quality.level.value == "low"
    assert any(f.startswith("signal_inconsistent") for f in result.validation.output_flags)


async def test_a_chunk_answered_with_garbage_is_read_offline_and_the_rest_kept() -> None:
    window = make_window(TEXTS)

    def respond(body: dict[str, Any]) -> Any:
        if (
            tool_of(body) == "emit_chunk_summary"
            and '<chunk index="1"' in body["messages"][1]["content"]
        ):
            return completion(tool="emit_chunk_summary", arguments="{not json")
        return scripted()(body)

    extractor = make_extractor(FakeLLM(respond))
    result = await run_pipeline(window, extractor, chunk_tokens=60)
    assert result.failed_chunks == []
    assert [f["chunk"] for f in result.fallback_chunks] == [1]
    reason = str(result.fallback_chunks[0]["reason"])
    assert "not valid JSON" in reason and "after one re-ask" in reason
    [warning] = [w for w in result.warnings if w.code == "CHUNKS_EXTRACTED_OFFLINE"]
    assert "chunk 1: unusable emit_chunk_summary output" in warning.message
    assert "{not json" not in warning.message  # the reason, never the model's output
    assert result.digest.knowledge_items  # the other chunks' items are kept


async def test_cached_chunks_make_zero_map_calls() -> None:
    window = make_window(TEXTS)
    cache: dict[str, ChunkSummary] = {}

    async def load(key: str) -> ChunkSummary | None:
        return cache.get(key)

    async def save(key: str, summary: ChunkSummary) -> None:
        cache[key] = summary

    hooks = PipelineHooks(load_chunk=load, save_chunk=save)
    first = FakeLLM(scripted())
    await run_pipeline(window, make_extractor(first), chunk_tokens=60, hooks=hooks)
    assert first.tools_called().count("emit_chunk_summary") >= 2
    second = FakeLLM(scripted())
    result = await run_pipeline(window, make_extractor(second), chunk_tokens=60, hooks=hooks)
    assert second.tools_called() == ["emit_digest"]
    assert result.chunks_from_cache == result.chunk_count
    # A different map model is a different fingerprint: a miss.
    third = FakeLLM(scripted())
    await run_pipeline(
        window, make_extractor(third, map_model="gpt-4o"), chunk_tokens=60, hooks=hooks
    )
    assert third.tools_called().count("emit_chunk_summary") >= 2


async def test_tree_reduce_on_a_large_real_channel() -> None:
    window = parse_chat_log(shared_data("chat/gitter/manual_docker.txt"))
    texts = {m.message_id: m.normalized_text for m in window.messages}
    endpoint = FakeLLM(scripted())
    extractor = make_extractor(
        endpoint,
        concurrency=8,
        reduce_model="tiny-reducer",
        model_limits={"tiny-reducer": {"context_window": 8000, "max_output_tokens": 1000}},
    )
    result = await run_pipeline(window, extractor, chunk_tokens=1500, concurrency=8)
    called = endpoint.tools_called()
    reduces = called.count("emit_digest")
    assert called.count("emit_chunk_summary") == result.chunk_count > 20
    assert reduces > 2, "the summaries did not fit one reduce call, so it ran in levels"
    codes = {w.code for w in extractor.warnings}
    assert "CONTENT_TRUNCATED" in codes and "LIMITS_DEFAULTED" not in codes
    budget = extractor.reduce_budget.input_tokens
    from runner.llm.budget import count_request_tokens

    for body in endpoint.requests:
        if tool_of(body) == "emit_digest":
            assert count_request_tokens(body["messages"], body["tools"])[0] <= budget
    assert not result.failed_chunks
    assert result.digest.knowledge_items
    assert_grounded(result, texts)


async def test_reduce_failure_falls_back_to_a_deterministic_merge() -> None:
    window = make_window(TEXTS)

    def respond(body: dict[str, Any]) -> Any:
        if tool_of(body) == "emit_digest":
            return error(400, "context too long")
        return scripted()(body)

    extractor = make_extractor(FakeLLM(respond))
    result = await run_pipeline(window, extractor, chunk_tokens=60)
    assert result.digest.knowledge_items, "validated chunk items were kept"
    assert result.digest.coverage.messages_total == len(TEXTS)
    assert any(w.code == "SUMMARY_PROVIDER_FAILED" for w in extractor.warnings)


async def test_cancellation_mid_map_aborts_requests_in_flight() -> None:
    window = make_window(TEXTS * 4)
    started = asyncio.Event()
    in_flight = 0
    aborted = 0

    async def hang(body: dict[str, Any]) -> Any:
        nonlocal in_flight, aborted
        in_flight += 1
        if in_flight >= 2:
            started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            aborted += 1
            raise
        return scripted()(body)

    endpoint = FakeLLM(hang)
    extractor = make_extractor(endpoint, concurrency=3)
    task = asyncio.create_task(run_pipeline(window, extractor, chunk_tokens=60, concurrency=3))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("the pipeline finished although it was cancelled")
    assert aborted == in_flight >= 2
    assert extractor.usage.llm_calls == 0
    assert extractor.breaker.state.value == "closed"  # a cancel is not an endpoint failure
