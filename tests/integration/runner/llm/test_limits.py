"""Local endpoints with small contexts: the context is learned from the 400 a server answers
(llama-cpp-python / OpenAI / vLLM and llama.cpp wordings) or from its model list (vLLM
`max_model_len`, llama.cpp `/props`), chunks that do not fit are cut again, and the settings
DIGEST_MAP/REDUCE_CONTEXT/OUTPUT_TOKENS win over all of it. The servers are real local HTTP servers
behind the real `openai` client."""

from __future__ import annotations

from typing import Any

import pytest

from runner.digests.pipeline import run_pipeline
from runner.extract.llm import LLMExtractor
from runner.llm.breaker import CircuitBreaker
from runner.llm.config import LLMConfig
from runner.llm.fake import FakeLLM, tool_of
from server.runtime import llm_config
from server.settings import Settings
from tests.support.llm import API_KEY, make_window, summaries_of
from tests.support.small_context import (
    CONTEXT,
    SERVER_TOKENS_PER_OURS,
    SmallContextModel,
    unique_model,
)


def window_of(messages: int) -> Any:
    return make_window(
        [
            f"message {i}: the deploy pipeline of service {i % 7} failed at step {i % 5} because "
            f"the cache volume was full; we cleaned it and reran build {1000 + i} on a big runner"
            for i in range(messages)
        ]
    )


def extractor_for(base_url: str, model: str, **config: Any) -> LLMExtractor:
    settings = LLMConfig(
        base_url=base_url, api_key=API_KEY, map_model=model, reduce_model=model, **config
    )
    return LLMExtractor(settings, breaker=CircuitBreaker(f"limits-{model}"))


@pytest.mark.parametrize("wording", ["llama-cpp-python", "llama.cpp", "vllm"])
async def test_a_small_context_is_learned_from_the_400_and_chunks_are_cut_again(
    wording: str,
) -> None:
    window = window_of(400)
    model = SmallContextModel(wording)
    name = unique_model(wording)
    async with FakeLLM(model).serve() as base_url:
        extractor = extractor_for(base_url, name)
        first_size = extractor.max_chunk_tokens()
        try:
            result = await run_pipeline(window, extractor, chunk_tokens=6000, concurrency=4)
        finally:
            await extractor.aclose()
        refused_in_first_job = len(model.refused)
        # Remembered for the process: the next job sizes its chunks right from the start.
        again = extractor_for(base_url, name)
        try:
            assert again.max_chunk_tokens() < first_size
            await run_pipeline(window, again, chunk_tokens=6000, concurrency=4)
        finally:
            await again.aclose()
    assert result.failed_chunks == [], result.failed_chunks
    assert 1 <= refused_in_first_job <= 4  # only the chunks in flight before it was learned
    assert len(model.refused) == refused_in_first_job
    assert model.mapped_message_ids() >= {m.message_id for m in window.messages}
    codes = [w.code for w in result.warnings]
    assert "SUMMARY_PROVIDER_FAILED" not in codes
    note = next(w.message for w in result.warnings if w.code == "LIMITS_DEFAULTED")
    assert "HTTP 400" in note and "DIGEST_MAP_CONTEXT_TOKENS=" in note
    # The learned context accounts for the server's tokenizer counting more than cl100k_base.
    learned = extractor.map_budget.limits.context_window
    assert learned < CONTEXT / SERVER_TOKENS_PER_OURS + 1
    assert f"DIGEST_MAP_CONTEXT_TOKENS={learned}" in note
    assert result.digest.knowledge_items


async def test_vllm_max_model_len_is_read_before_the_first_request() -> None:
    name = unique_model("vllm-listed")
    listing = {
        "object": "list",
        "data": [
            {
                "id": name,
                "object": "model",
                "created": 0,
                "owned_by": "vllm",
                "root": name,
                "parent": None,
                "max_model_len": CONTEXT,
                "permission": [],
            },
            {"id": "other-model", "object": "model", "max_model_len": 131072},
        ],
    }
    model = SmallContextModel()
    async with FakeLLM(model, {"/v1/models": listing}).serve() as base_url:
        extractor = extractor_for(base_url, name)
        try:
            result = await run_pipeline(window_of(300), extractor, chunk_tokens=6000, concurrency=4)
        finally:
            await extractor.aclose()
    assert model.refused == [] and result.failed_chunks == []
    assert extractor.map_budget.limits.context_window == CONTEXT
    note = next(w.message for w in result.warnings if w.code == "LIMITS_DEFAULTED")
    assert "/v1/models" in note and f"DIGEST_MAP_CONTEXT_TOKENS={CONTEXT}" in note


async def test_llama_cpp_running_context_is_read_from_props() -> None:
    # /v1/models only states the trained context (131072); the running one is in /props.
    routes = {
        "/v1/models": {
            "object": "list",
            "data": [
                {
                    "id": "/models/llama-3.1-8b-instruct-q4_k_m.gguf",
                    "object": "model",
                    "created": 0,
                    "owned_by": "llamacpp",
                    "meta": {
                        "vocab_type": 2,
                        "n_vocab": 128256,
                        "n_ctx_train": 131072,
                        "n_embd": 4096,
                        "n_params": 8030261248,
                        "size": 4912898304,
                    },
                }
            ],
        },
        "/props": {
            "default_generation_settings": {"n_ctx": CONTEXT, "n_predict": -1},
            "total_slots": 1,
            "chat_template": "...",
        },
    }
    model = SmallContextModel("llama.cpp")
    async with FakeLLM(model, routes).serve() as base_url:
        extractor = extractor_for(base_url, unique_model("llama-props"))
        try:
            result = await run_pipeline(window_of(300), extractor, chunk_tokens=6000, concurrency=2)
        finally:
            await extractor.aclose()
    assert model.refused == [] and result.failed_chunks == []
    assert extractor.map_budget.limits.context_window == CONTEXT
    assert any("/props" in w.message for w in result.warnings if w.code == "LIMITS_DEFAULTED")


async def test_a_refused_reduce_is_planned_again_with_the_learned_context() -> None:
    # Map on a model whose limits are known; the reduce model is a small local one whose
    # refusal must not end in the deterministic fallback.
    model = SmallContextModel()
    reduce_name = unique_model("reducer")
    async with FakeLLM(model).serve() as base_url:
        settings = LLMConfig(
            base_url=base_url,
            api_key=API_KEY,
            map_model="gpt-4o-mini",
            reduce_model=reduce_name,
            reduce_max_output_tokens=7000,
            reduce_output_tokens=None,
        )
        extractor = LLMExtractor(settings, breaker=CircuitBreaker("limits-reduce"))
        try:
            result = await run_pipeline(window_of(260), extractor, chunk_tokens=500, concurrency=4)
        finally:
            await extractor.aclose()
    assert result.failed_chunks == []
    assert model.refused, "the reduce request was expected to be refused once"
    codes = [w.code for w in result.warnings]
    assert "SUMMARY_PROVIDER_FAILED" not in codes, result.warnings
    assert tool_of(model.accepted[-1]) == "emit_digest"
    # The model's digest (titled by its first topic), not the deterministic fallback's.
    assert result.digest.title == summaries_of(model.accepted[-1])[0]["topics"][0]["title"]


async def test_settings_give_the_limits_and_win_over_the_endpoint() -> None:
    listing = {"object": "list", "data": [{"id": "x", "object": "model", "max_model_len": 4096}]}
    model = SmallContextModel()
    async with FakeLLM(model, {"/v1/models": listing}).serve() as base_url:
        settings = Settings(
            digest_llm_base_url=base_url,
            digest_map_model="x",
            digest_reduce_model="x",
            digest_map_context_tokens=CONTEXT,
            digest_map_output_tokens=1000,
            digest_reduce_context_tokens=CONTEXT,
            digest_reduce_output_tokens=1500,
        )
        config = llm_config(settings)
        assert (config.map_context_tokens, config.map_output_tokens) == (CONTEXT, 1000)
        assert (config.reduce_context_tokens, config.reduce_output_tokens) == (CONTEXT, 1500)
        extractor = LLMExtractor(config, breaker=CircuitBreaker("limits-settings"))
        try:
            result = await run_pipeline(window_of(200), extractor, chunk_tokens=6000, concurrency=4)
        finally:
            await extractor.aclose()
    assert extractor.map_budget.limits.context_window == CONTEXT  # not the listed 4096
    assert extractor.map_budget.max_output_tokens == 1000
    assert extractor.reduce_budget.max_output_tokens == 1500
    assert all(body.get("max_tokens") in (1000, 1500) for body in model.accepted)
    assert "LIMITS_DEFAULTED" not in [w.code for w in result.warnings]
    assert model.refused == [] and result.failed_chunks == []


def test_an_unknown_model_names_the_settings_to_use() -> None:
    extractor = LLMExtractor(
        LLMConfig(base_url="http://llm.test/v1", map_model="mystery-7b", reduce_model="mystery-7b"),
        breaker=CircuitBreaker("limits-unknown"),
    )
    [note] = [w.message for w in extractor.warnings if w.code == "LIMITS_DEFAULTED"]
    assert "DIGEST_MAP_CONTEXT_TOKENS" in note and "DIGEST_REDUCE_CONTEXT_TOKENS" in note


@pytest.mark.parametrize(
    ("message", "body", "context", "prompt"),
    [
        (  # newer vLLM, refusing max_tokens
            "'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum "
            "context length is 8192 tokens and your request has 9285 input tokens "
            "(4096 > 8192 - 9285).",
            None,
            8192,
            9285,
        ),
        (  # llama.cpp server, newer message
            "Error code: 400",
            {
                "error": {
                    "code": 400,
                    "type": "exceed_context_size_error",
                    "message": "request (9285 tokens) exceeds the available context size "
                    "(8192 tokens), try increasing it",
                }
            },
            8192,
            9285,
        ),
        ("Requested tokens (9285) exceed context window of 8192", None, 8192, 9285),
        (
            "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8192. "
            "Given: 9285 `inputs` tokens and 4096 `max_new_tokens`",
            None,
            8192,
            9285,
        ),
        (
            "The input (9285 tokens) is longer than the model's context length (8192 tokens).",
            None,
            8192,
            9285,
        ),
        ("prompt is too long: 209285 tokens > 200000 maximum", None, 200000, 209285),
        (  # says what, not how much: still an overflow
            "the request exceeds the available context size, try increasing it",
            {"error": {"type": "exceed_context_size_error"}},
            None,
            None,
        ),
    ],
)
def test_context_overflow_wordings(
    message: str, body: Any, context: int | None, prompt: int | None
) -> None:
    from runner.llm.limits import ContextOverflow, parse_context_overflow

    assert parse_context_overflow(message, body) == ContextOverflow(context, prompt)


@pytest.mark.parametrize(
    "message",
    ["Invalid value for 'tool_choice'", "model `x` does not exist", "maximum 8 tools allowed"],
)
def test_other_400s_are_not_overflows(message: str) -> None:
    from runner.llm.limits import parse_context_overflow

    assert parse_context_overflow(message, {"error": {"message": message}}) is None


def test_budget_resolution_order() -> None:
    from runner.llm.budget import RequestBudget

    def budget(model: str, **kwargs: Any) -> Any:
        return RequestBudget.for_model(
            model,
            wanted_output_tokens=4096,
            overrides=None,
            runtime_overhead=256,
            safety_margin=0.15,
            **kwargs,
        )

    # A learned context lowers a known model's (a proxy serving it with less), never raises it.
    assert budget("gpt-4o-mini", learned_context=8192).limits.context_window == 8192
    assert budget("gpt-4o-mini", learned_context=10**7).limits.context_window == 128_000
    assert not budget("gpt-4o-mini", learned_context=10**7).defaulted
    # The setting wins over both; an explicit output is used as given.
    chosen = budget("gpt-4o-mini", learned_context=4096, context_tokens=16_000, output_tokens=3000)
    assert (chosen.limits.context_window, chosen.max_output_tokens) == (16_000, 3000)
    assert not chosen.defaulted
    # Unknown model, small learned context: the output leaves room for the input.
    small = budget("mystery", learned_context=8192)
    assert small.defaulted and small.max_output_tokens == 2048
    assert small.input_tokens == int((8192 - 2048 - 256) * 0.85)
    assert budget("mystery").defaulted and budget("mystery").limits.context_window == 32_768
