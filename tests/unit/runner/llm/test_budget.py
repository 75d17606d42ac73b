"""Token budgets: model limits, effective budget, preflight of every request."""

from __future__ import annotations

import pytest

from runner.core.chunks import chunk_messages
from runner.core.extractor import ChunkFailed, KnownItem
from runner.llm.budget import (
    FALLBACK_LIMITS,
    FINAL_FIT_MAX_ITERATIONS,
    BudgetingMode,
    ModelLimits,
    Preflight,
    count_request_tokens,
    effective_budget,
    final_fit,
    get_model_limits,
)
from runner.llm.fake import FakeLLM
from tests.support.llm import make_extractor, make_window, minimal_summary, scripted


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o-mini", 128_000),
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("openai/gpt-4.1-mini", 1_047_576),
        ("claude-3-5-sonnet-20241022", 200_000),
        ("gemini-2.5-flash", 1_048_576),
    ],
)
def test_known_models_resolve_by_longest_prefix(model: str, window: int) -> None:
    limits, defaulted = get_model_limits(model)
    assert limits.context_window == window and not defaulted


def test_unknown_models_get_conservative_flagged_defaults_and_overrides_win() -> None:
    assert get_model_limits("llama3.1:8b") == (FALLBACK_LIMITS, True)
    limits, defaulted = get_model_limits(
        "llama3.1:8b", {"llama3.1:8b": {"context_window": 131072, "budgeting_mode": "input_only"}}
    )
    assert not defaulted
    assert limits == ModelLimits(
        131072, FALLBACK_LIMITS.max_output_tokens, BudgetingMode.INPUT_ONLY
    )
    gpt, _ = get_model_limits("gpt-4o", {"gpt-4o": {"max_output_tokens": 1000}})
    assert (gpt.context_window, gpt.max_output_tokens) == (128_000, 1000)


def test_effective_budget_reserves_output_only_for_combined_models() -> None:
    combined = ModelLimits(128_000, 16_384, BudgetingMode.COMBINED)
    separate = ModelLimits(128_000, 16_384, BudgetingMode.INPUT_ONLY)
    assert effective_budget(combined, 4096, 256, 0.15) == int((128_000 - 4096 - 256) * 0.85)
    assert effective_budget(separate, 4096, 256, 0.15) == int((128_000 - 256) * 0.85)
    assert effective_budget(ModelLimits(1000, 100), 2000, 0, 0.1) == 0


def test_estimated_counts_get_an_extra_margin() -> None:
    assert Preflight(tokens=950, budget=1000, estimated=False).fits
    assert not Preflight(tokens=950, budget=1000, estimated=True).fits


def test_request_count_includes_tools_and_per_message_overhead() -> None:
    messages = [{"role": "system", "content": "hello"}, {"role": "user", "content": "world"}]
    bare, _ = count_request_tokens(messages)
    with_tools, estimated = count_request_tokens(messages, [{"type": "function", "name": "x" * 40}])
    assert bare == 2 + 8 and with_tools > bare and not estimated


def test_unknown_model_is_flagged_on_the_job() -> None:
    extractor = make_extractor(FakeLLM(scripted()), map_model="my-local-model")
    assert [w.code for w in extractor.warnings] == ["LIMITS_DEFAULTED"]
    assert "my-local-model" in extractor.warnings[0].message


async def test_chunks_over_the_map_budget_fail_with_the_size_to_use() -> None:
    small = {"small": {"context_window": 6000, "max_output_tokens": 1000}}
    endpoint = FakeLLM(scripted(minimal_summary))
    extractor = make_extractor(endpoint, map_model="small", model_limits=small, max_known_items=10)
    limit = extractor.max_chunk_tokens()
    assert 500 < limit < 6000 - extractor.static_prefix_tokens()
    window = make_window(
        [f"log line {i}: container exited with code 137 (OOMKilled)" for i in range(400)]
    )
    fitting = chunk_messages(list(window.messages), limit)[0]
    known = [
        KnownItem(f"c000000.K{i}", "fact", "an earlier item with a long title " * 3)
        for i in range(10)
    ]
    await extractor.extract_chunk(fitting, known)
    too_big = chunk_messages(list(window.messages), limit + 1500)[0]
    with pytest.raises(ChunkFailed, match=f"chunk at most {limit} tokens"):
        await extractor.extract_chunk(too_big, [])
    assert len(endpoint.requests) == 1  # the oversized chunk was never sent


async def test_known_items_are_trimmed_before_a_chunk_is_refused() -> None:
    small = {"small": {"context_window": 5000, "max_output_tokens": 500}}
    endpoint = FakeLLM(scripted(minimal_summary))
    extractor = make_extractor(endpoint, map_model="small", model_limits=small, max_known_items=400)
    window = make_window([f"message {i} on swarm overlay networks" for i in range(60)])
    chunk = chunk_messages(list(window.messages), 600)[0]
    known = [
        KnownItem(f"c000000.K{i}", "howto", f"earlier item number {i} " * 4) for i in range(400)
    ]
    await extractor.extract_chunk(chunk, known)
    sent = endpoint.requests[0]
    user = sent["messages"][1]["content"]
    shown = user.count(" howto: earlier item number ")
    assert 0 < shown < 400
    assert "earlier item number 399 " in user  # the most recent ones are kept
    assert "earlier item number 0 " not in user
    tokens, _ = count_request_tokens(sent["messages"], sent["tools"])
    assert tokens <= extractor.map_budget.input_tokens


def test_final_fit_shrinks_the_content_budget_by_the_overshoot_and_stops_when_it_fits() -> None:
    budgets: list[int] = []

    def assemble(budget: int) -> int:
        budgets.append(budget)
        return budget

    # The request costs 300 tokens beyond its content: over a limit of 1000 once.
    fitted = final_fit(assemble, lambda content: content + 300, 800, 1000)
    assert fitted.fits and fitted.iterations == 1 and fitted.first_tokens == 1100
    assert budgets == [800, 800 - 100 - 10] and fitted.tokens <= 1000


def test_final_fit_gives_up_after_two_iterations_with_an_overshooting_counter() -> None:
    budgets: list[int] = []

    def assemble(budget: int) -> int:
        budgets.append(budget)
        return budget

    fitted = final_fit(assemble, lambda content: content + 10_000, 800, 1000)
    assert not fitted.fits and fitted.iterations == FINAL_FIT_MAX_ITERATIONS == 2
    assert len(budgets) == 3 and budgets[-1] == 0


def test_a_request_that_fits_is_assembled_once() -> None:
    calls: list[int] = []

    def assemble(budget: int) -> int:
        calls.append(budget)
        return budget

    fitted = final_fit(assemble, lambda content: content, 500, 1000)
    assert fitted.fits and fitted.iterations == 0 and calls == [500]
