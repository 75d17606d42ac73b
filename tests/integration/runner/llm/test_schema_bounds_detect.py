"""Grammar-building servers found by what they say in `GET /v1/models`: llama.cpp's server and
llama-cpp-python's get tool schemas without length and count bounds from the first request on
(DIGEST_LLM_SCHEMA_BOUNDS=auto), any other endpoint gets them, the model list is asked once per
client, and the answers are still checked against every bound. The listings are the shapes the
servers' sources write; the fake endpoint stands behind the real `openai` client."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from runner.core.contract import CHUNK_SUMMARY_TOOL, ChunkSummary, tool_schema
from runner.core.vocabulary import ExtractionUsage
from runner.digests.pipeline import run_pipeline
from runner.extract.llm import LLMExtractor
from runner.llm.bounds import BOUND_KEYWORDS, detect_server, grammar_server
from runner.llm.breaker import CircuitBreaker
from runner.llm.client import ResilientCaller, build_client
from runner.llm.config import LLMConfig
from runner.llm.fake import FakeLLM, completion, error
from runner.llm.toolcall import MalformedOutput, ToolCaller
from tests.support.llm import API_KEY, make_extractor, make_window, scripted
from tests.support.small_context import unique_model

# llama.cpp's server, one model loaded (tools/server: owned_by and the GGUF's `meta`).
LLAMA_CPP = {
    "object": "list",
    "data": [
        {
            "id": "gemma-3-270m-it-Q4_K_M.gguf",
            "object": "model",
            "created": 0,
            "owned_by": "llamacpp",
            "meta": {
                "vocab_type": 2,
                "n_vocab": 262144,
                "n_ctx_train": 32768,
                "n_embd": 640,
                "n_params": 268098176,
                "size": 253113344,
            },
        }
    ],
}
# llama.cpp's server as a router of several models: no `meta`, a status per model.
LLAMA_CPP_ROUTER = {
    "object": "list",
    "data": [
        {
            "id": "qwen3-0.6b",
            "object": "model",
            "owned_by": "llamacpp",
            "created": 0,
            "status": {"value": "loaded"},
        }
    ],
}
# llama-cpp-python's server (llama_cpp/server/app.py, get_models).
LLAMA_CPP_PYTHON = {
    "object": "list",
    "data": [
        {"id": "/models/gemma-3-270m.gguf", "object": "model", "owned_by": "me", "permissions": []}
    ],
}
OPENAI = {
    "object": "list",
    "data": [
        {"id": "gpt-4o-mini", "object": "model", "created": 1721172741, "owned_by": "system"},
        {"id": "gpt-4o", "object": "model", "created": 1715367049, "owned_by": "system"},
    ],
}
VLLM = {
    "object": "list",
    "data": [
        {
            "id": "Qwen/Qwen2.5-7B-Instruct",
            "object": "model",
            "owned_by": "vllm",
            "max_model_len": 32768,
            "permission": [{"id": "modelperm-1", "object": "model_permission"}],
        }
    ],
}


# The models' contexts given, so the limits discovery (runner.llm.limits) does not read the model
# list too: what is counted here is the bounds' own look.
CONTEXTS: dict[str, Any] = {"map_context_tokens": 128_000, "reduce_context_tokens": 128_000}


def bounds_sent(body: dict[str, Any]) -> set[str]:
    """The bound keywords in a request's tool schema."""
    schema = json.dumps(body["tools"][0]["function"]["parameters"])
    return {keyword for keyword in BOUND_KEYWORDS if f'"{keyword}":' in schema}


@pytest.mark.parametrize(
    ("listing", "server"),
    [
        (LLAMA_CPP, "llama.cpp"),
        (LLAMA_CPP_ROUTER, "llama.cpp"),
        (LLAMA_CPP_PYTHON, "llama-cpp-python"),
        (OPENAI, None),
        (VLLM, None),
        ({"object": "list", "data": [{"id": "x", "owned_by": "me"}]}, None),
        ({"data": "not a list"}, None),
        ("<html>", None),
        (None, None),
    ],
)
def test_the_listing_names_the_server(listing: Any, server: str | None) -> None:
    assert grammar_server(listing) == server


@pytest.mark.parametrize("listing", [LLAMA_CPP, LLAMA_CPP_ROUTER, LLAMA_CPP_PYTHON])
async def test_a_grammar_server_never_gets_bounds(listing: dict[str, Any]) -> None:
    window = make_window(
        [f"we decided to move service {i} to the new cluster on friday" for i in range(60)]
    )
    fake = FakeLLM(scripted(), {"/v1/models": listing})
    extractor = make_extractor(fake, **CONTEXTS)
    try:
        result = await run_pipeline(window, extractor, chunk_tokens=400, concurrency=4)
    finally:
        await extractor.aclose()
    assert result.failed_chunks == [] and result.chunk_count >= 3
    assert len(fake.requests) > result.chunk_count  # the map calls and the reduce
    assert [bounds_sent(body) for body in fake.requests] == [set()] * len(fake.requests)
    # Asked once, although four chunks went out at once.
    assert fake.gets == ["/v1/models"]
    # Expected of such a server, like DIGEST_LLM_SCHEMA_BOUNDS=omit: no warning about it.
    assert "SCHEMA_BOUNDS_OMITTED" not in {w.code for w in result.warnings}


@pytest.mark.parametrize("listing", [OPENAI, VLLM, None])
async def test_other_endpoints_get_the_bounds(listing: dict[str, Any] | None) -> None:
    window = make_window([f"the deploy of service {i} failed at step two" for i in range(20)])
    fake = FakeLLM(scripted(), {"/v1/models": listing} if listing else None)
    extractor = make_extractor(fake, **CONTEXTS)
    try:
        result = await run_pipeline(window, extractor, chunk_tokens=400)
    finally:
        await extractor.aclose()
    assert result.failed_chunks == []
    assert fake.requests and all(bounds_sent(body) for body in fake.requests)
    assert {"maxLength", "maxItems"} <= bounds_sent(fake.requests[0])


@pytest.mark.parametrize("setting", ["send", "omit"])
async def test_the_setting_wins_over_what_the_server_says(setting: str) -> None:
    window = make_window([f"the deploy of service {i} failed at step two" for i in range(10)])
    fake = FakeLLM(scripted(), {"/v1/models": LLAMA_CPP})
    extractor = make_extractor(fake, schema_bounds=setting, **CONTEXTS)
    try:
        await run_pipeline(window, extractor, chunk_tokens=400)
    finally:
        await extractor.aclose()
    assert fake.requests
    assert all(bool(bounds_sent(body)) is (setting == "send") for body in fake.requests)
    assert fake.gets == []  # nothing to decide: the endpoint is not asked


def tool_caller(fake: FakeLLM, **settings: Any) -> ToolCaller:
    config = LLMConfig(base_url="http://llm.test/v1", api_key=API_KEY, max_retries=0, **settings)
    client = build_client(config, http_client=fake.http_client())
    caller = ResilientCaller(client, config, CircuitBreaker("bounds-detect"))
    return ToolCaller(caller, ExtractionUsage(), temperature=0.0, max_tokens_param="max_tokens")


async def test_what_the_server_was_not_told_is_still_enforced() -> None:
    # A decision of 600 characters: over the contract's 500, a bound llama.cpp was not sent.
    too_long = {
        "chunk_summary": "the team moved the cluster",
        "signal_quality": {"level": "medium", "reason": "a decision"},
        "decisions": [{"text": "we move the cluster " + "x" * 600, "message_ids": ["1000"]}],
    }
    fake = FakeLLM(
        lambda body: completion(tool=CHUNK_SUMMARY_TOOL, arguments=too_long),
        {"/v1/models": LLAMA_CPP},
    )
    tools = tool_caller(fake)
    with pytest.raises(MalformedOutput, match="at most 500 characters"):
        await tools.call(
            model="gemma",
            messages=[{"role": "user", "content": "summarize"}],
            tool_name=CHUNK_SUMMARY_TOOL,
            model_type=ChunkSummary,
            max_output_tokens=512,
            input_budget=8000,
        )
    # The first answer and the re-ask's, both refused by the validator; neither request bounded.
    assert len(fake.requests) == 2
    assert [bounds_sent(body) for body in fake.requests] == [set(), set()]
    assert "at most 500 characters" in fake.requests[1]["messages"][-1]["content"]


async def test_a_model_list_that_never_answers_keeps_the_bounds_and_the_call() -> None:
    hanging = asyncio.Event()

    class Stuck:
        """A client whose `get` never returns, like an endpoint that accepts and stays silent."""

        async def get(self, *args: Any, **kwargs: Any) -> Any:
            await hanging.wait()

    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await detect_server(Stuck(), timeout=0.2) is None
    assert loop.time() - started < 5.0


async def test_concurrent_first_calls_share_one_look() -> None:
    fake = FakeLLM(
        lambda body: completion(tool=CHUNK_SUMMARY_TOOL, arguments={}),
        {"/v1/models": LLAMA_CPP_PYTHON},
    )
    tools = tool_caller(fake)
    results = await asyncio.gather(*(detect_server(tools.caller.client) for _ in range(8)))
    assert results == ["llama-cpp-python"] * 8
    assert fake.gets == ["/v1/models"]
    assert tool_schema(CHUNK_SUMMARY_TOOL)  # the contract's schema keeps its bounds


async def test_a_llama_cpp_server_gets_each_call_once() -> None:
    """llama.cpp refuses a bounded schema with a 400: told by its model list, every call is sent
    once, none refused and sent again (four at once, each used to go twice)."""
    refused: list[dict[str, Any]] = []
    model = scripted()

    def llama_cpp(body: dict[str, Any]) -> Any:
        if bounds_sent(body):
            refused.append(body)
            return error(400, "Failed to parse grammar")
        return model(body)

    window = make_window(
        [f"we decided to move service {i} to the new cluster on friday" for i in range(60)]
    )
    fake = FakeLLM(llama_cpp, {"/v1/models": LLAMA_CPP})
    extractor = make_extractor(fake, concurrency=4, **CONTEXTS)
    try:
        result = await run_pipeline(window, extractor, chunk_tokens=400, concurrency=4)
    finally:
        await extractor.aclose()
    assert result.failed_chunks == [] and result.chunk_count >= 4
    assert refused == []
    assert len(fake.requests) == extractor.usage.llm_calls == result.chunk_count + 1


async def test_the_limits_discovery_and_the_bounds_read_one_model_list() -> None:
    """Without the context settings the extractor also asks the model list for the context
    (runner.llm.limits): one request serves both."""
    name = unique_model("bounds-and-limits")
    window = make_window([f"the deploy of service {i} failed at step two" for i in range(10)])
    fake = FakeLLM(scripted(), {"/v1/models": LLAMA_CPP})
    async with fake.serve() as base_url:
        config = LLMConfig(base_url=base_url, api_key=API_KEY, map_model=name, reduce_model=name)
        extractor = LLMExtractor(config, breaker=CircuitBreaker("bounds-and-limits"))
        try:
            await run_pipeline(window, extractor, chunk_tokens=400)
        finally:
            await extractor.aclose()
    assert fake.requests and not any(bounds_sent(body) for body in fake.requests)
    assert fake.gets == ["/v1/models"]
    # The trained context the list states was read from the same answer.
    assert extractor.map_budget.limits.context_window <= 32768
