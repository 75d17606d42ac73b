"""Provider-native token counts: a llama.cpp or llama-cpp-python server counts a request's
prompt with its own tokenizer before the request is sent, the counts are cached by content, a
missing tokenize route is asked once and reported, and no other endpoint is ever asked. The fake
endpoint stands behind the real `openai` client; its tokenizer counts one token per two
characters (per character in the pipeline test), far more than cl100k_base does for English."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from runner.core.contract import CHUNK_SUMMARY_TOOL, ChunkSummary, tool_schema
from runner.core.vocabulary import ExtractionUsage
from runner.digests.pipeline import run_pipeline
from runner.llm import native_tokens
from runner.llm.breaker import CircuitBreaker
from runner.llm.budget import count_request_tokens, request_pieces
from runner.llm.client import ResilientCaller, build_client
from runner.llm.config import LLMConfig
from runner.llm.fake import FakeLLM, char_tokenizer, completion, error
from runner.llm.toolcall import ModelCall, ModelRoute, RequestTooLarge, ToolCaller
from tests.support.llm import API_KEY, make_extractor, make_window, scripted

# llama.cpp's server, one model loaded (tools/server: owned_by and the GGUF's `meta`).
LLAMA_CPP = {
    "object": "list",
    "data": [
        {
            "id": "gemma-3-270m-it-Q4_K_M.gguf",
            "object": "model",
            "owned_by": "llamacpp",
            "meta": {"n_vocab": 262144, "n_ctx_train": 32768, "n_embd": 640},
        }
    ],
}
LLAMA_CPP_PYTHON = {
    "object": "list",
    "data": [{"id": "/models/gemma.gguf", "object": "model", "owned_by": "me", "permissions": []}],
}
OPENAI = {
    "object": "list",
    "data": [{"id": "gpt-4o-mini", "object": "model", "created": 0, "owned_by": "system"}],
}
SUMMARY = {
    "chunk_summary": "the team moved the cluster",
    "signal_quality": {"level": "medium", "reason": "a decision"},
}
# English prose: cl100k_base counts about one token per 4-5 characters.
TEXT = " ".join(["the deploy of the billing service moved to the new cluster on friday"] * 20)
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "Summarize the chunk."},
    {"role": "user", "content": TEXT},
]
TOOLS = [tool_schema(CHUNK_SUMMARY_TOOL)]


def answer(body: dict[str, Any]) -> dict[str, Any]:
    return completion(tool=CHUNK_SUMMARY_TOOL, arguments=SUMMARY)


def tool_caller(fake: FakeLLM, **settings: Any) -> ToolCaller:
    config = LLMConfig(base_url="http://llm.test/v1", api_key=API_KEY, max_retries=0, **settings)
    client = build_client(config, http_client=fake.http_client())
    caller = ResilientCaller(client, config, CircuitBreaker("native-tokens"))
    return ToolCaller(caller, ExtractionUsage(), temperature=0.0, max_tokens_param="max_tokens")


def by_two_chars(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """What the fake's tokenizer makes of a request: the per-message allowance and one token
    per two characters of each piece."""
    overhead, pieces = request_pieces(messages, tools)
    return overhead + sum(-(-len(piece) // 2) for piece in pieces)


async def call(tools: ToolCaller, budget: int) -> ChunkSummary:
    return await tools.call(
        model="gemma",
        messages=MESSAGES,
        tool_name=CHUNK_SUMMARY_TOOL,
        model_type=ChunkSummary,
        max_output_tokens=256,
        input_budget=budget,
    )


async def test_a_llama_cpp_server_counts_the_prompt_with_its_own_tokenizer() -> None:
    fake = FakeLLM(answer, {"/v1/models": LLAMA_CPP}, {"/tokenize": char_tokenizer(2)})
    tools = tool_caller(fake)
    ours, _ = count_request_tokens(MESSAGES, TOOLS)
    theirs = by_two_chars(MESSAGES, TOOLS)
    assert theirs > ours * 1.5  # the two tokenizers differ enough to tell them apart
    checked = await tools.count("gemma", MESSAGES, TOOLS, budget=theirs)
    assert checked.tokens == theirs and checked.fits and not checked.estimated
    # The bodies are llama.cpp's: `content`, no special tokens, at the server root.
    path, body = fake.posted[0]
    assert path == "/tokenize" and body["add_special"] is False and "content" in body
    # A request that fits by cl100k_base but not by the server's count is refused unsent.
    between = (ours + theirs) // 2
    with pytest.raises(RequestTooLarge, match=f"needs {theirs} tokens"):
        await call(tools, between)
    assert fake.requests == []
    assert (await call(tools, theirs)).chunk_summary == SUMMARY["chunk_summary"]
    assert len(fake.requests) == 1
    assert not tools.native_fallback and not tools.count_estimated


async def test_counts_are_cached_by_content_and_model() -> None:
    fake = FakeLLM(answer, {"/v1/models": LLAMA_CPP}, {"/tokenize": char_tokenizer(2)})
    tools = tool_caller(fake)
    _, pieces = request_pieces(MESSAGES, TOOLS)
    await tools.count("gemma", MESSAGES, TOOLS, budget=100_000)
    assert len(fake.posted) == len(pieces)
    await tools.count("gemma", MESSAGES, TOOLS, budget=100_000)
    await call(tools, 100_000)
    assert len(fake.posted) == len(pieces)  # nothing asked again
    changed = [MESSAGES[0], {"role": "user", "content": TEXT + " and on monday"}]
    await tools.count("gemma", changed, TOOLS, budget=100_000)
    assert len(fake.posted) == len(pieces) + 1  # only the new text
    await tools.count("other-model", MESSAGES, TOOLS, budget=100_000)
    assert len(fake.posted) == 2 * len(pieces) + 1  # another model's vocabulary


async def test_llama_cpp_python_is_asked_at_its_extras_route() -> None:
    fake = FakeLLM(
        answer,
        {"/v1/models": LLAMA_CPP_PYTHON},
        {"/extras/tokenize": char_tokenizer(2, field="input")},
    )
    tools = tool_caller(fake)
    checked = await tools.count("gemma", MESSAGES, TOOLS, budget=100_000)
    assert checked.tokens == by_two_chars(MESSAGES, TOOLS)
    path, body = fake.posted[0]
    assert path == "/extras/tokenize" and body["model"] == "gemma" and "input" in body


async def test_a_missing_tokenize_route_falls_back_once_with_a_warning() -> None:
    fake = FakeLLM(
        answer, {"/v1/models": LLAMA_CPP}, {"/tokenize": lambda body: error(404, "Not Found")}
    )
    tools = tool_caller(fake)
    ours, _ = count_request_tokens(MESSAGES, TOOLS)
    counts = await asyncio.gather(
        *(tools.count("gemma", MESSAGES, TOOLS, budget=100_000) for _ in range(4))
    )
    await call(tools, 100_000)
    assert [c.tokens for c in counts] == [ours] * 4  # cl100k_base, as before
    assert len(fake.posted) == 1  # asked once, although four requests counted at once
    assert tools.native_fallback
    # A tool call through a ModelCall reports it on the route, as the report writer shows it.
    route = ModelRoute()
    model_call = ModelCall(tools.caller, "gemma")
    await model_call.call_tool(MESSAGES, ExtractionUsage(), TOOLS[0], ChunkSummary, route)
    codes = [warning.code for warning in route.warnings(model_call)]
    assert "TOKEN_COUNT_ESTIMATE_USED" in codes
    assert len(fake.posted) == 1


async def test_a_timing_out_tokenize_route_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_tokens, "TOKENIZE_TIMEOUT_SECONDS", 0.1)

    async def slow(body: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(5)
        return {"tokens": []}

    fake = FakeLLM(answer, {"/v1/models": LLAMA_CPP}, {"/tokenize": slow})
    tools = tool_caller(fake)
    ours, _ = count_request_tokens(MESSAGES, TOOLS)
    checked = await tools.count("gemma", MESSAGES, TOOLS, budget=100_000)
    assert checked.tokens == ours and tools.native_fallback


@pytest.mark.parametrize("listing", [OPENAI, None])
async def test_other_endpoints_are_never_asked_to_tokenize(listing: dict[str, Any] | None) -> None:
    fake = FakeLLM(
        answer,
        {"/v1/models": listing} if listing else None,
        {"/tokenize": char_tokenizer(2), "/extras/tokenize": char_tokenizer(2, "input")},
    )
    tools = tool_caller(fake)
    ours, _ = count_request_tokens(MESSAGES, TOOLS)
    checked = await tools.count("gpt-4o-mini", MESSAGES, TOOLS, budget=100_000)
    await call(tools, 100_000)
    assert checked.tokens == ours
    assert fake.posted == [] and not tools.native_fallback


async def test_chunks_are_cut_to_what_the_server_counts() -> None:
    """A chunk that fits the map budget by cl100k_base but not by the server's tokenizer (one
    token per character) is cut again until it fits, and every map request sent fits it."""
    window = make_window(
        [f"we decided to move service {i} to the new cluster on friday" for i in range(250)]
    )
    tokenizer = char_tokenizer(1)
    fake = FakeLLM(scripted(), {"/v1/models": LLAMA_CPP}, {"/tokenize": tokenizer})
    # The map budget holds the static prefix (system prompt and tool schema) even by the
    # server's count, and a chunk of 4,000 cl100k_base tokens only by cl100k_base's.
    contexts: dict[str, Any] = {"map_context_tokens": 24_000, "reduce_context_tokens": 128_000}
    extractor = make_extractor(fake, **contexts)
    try:
        budget = extractor.map_budget.input_tokens
        result = await run_pipeline(window, extractor, chunk_tokens=4_000)
    finally:
        await extractor.aclose()
    assert result.failed_chunks == []
    assert extractor.server_token_ratio > 2  # learned from the first chunk that did not fit
    maps = [
        body
        for body in fake.requests
        if body["tools"][0]["function"]["name"] == "emit_chunk_summary"
    ]
    assert len(maps) == result.chunk_count >= 2
    for body in maps:
        overhead, pieces = request_pieces(body["messages"], body["tools"])
        assert overhead + sum(len(piece) for piece in pieces) <= budget
    assert "TOKEN_COUNT_ESTIMATE_USED" not in {w.code for w in result.warnings}


async def test_a_pipeline_against_a_server_without_tokenize_warns() -> None:
    window = make_window([f"the deploy of service {i} failed at step two" for i in range(10)])
    fake = FakeLLM(scripted(), {"/v1/models": LLAMA_CPP})  # /tokenize answers 404
    extractor = make_extractor(fake, map_context_tokens=128_000, reduce_context_tokens=128_000)
    try:
        result = await run_pipeline(window, extractor, chunk_tokens=400)
    finally:
        await extractor.aclose()
    assert result.failed_chunks == []
    warned = [w for w in result.warnings if w.code == "TOKEN_COUNT_ESTIMATE_USED"]
    assert len(warned) == 1 and "tokenize" in warned[0].message


async def test_the_tokenize_route_sees_what_the_model_would_see_redacted() -> None:
    """The tokenize route is the model's own server: with redaction on it is sent the
    placeholders, never an address or a token from the messages."""
    secret_text = TEXT + " mail ops@billing.example.com the key ghp_" + "a1B2c3D4" * 5
    messages = [MESSAGES[0], {"role": "user", "content": secret_text}]
    for redact, leaks in (("always", False), ("never", True)):
        fake = FakeLLM(answer, {"/v1/models": LLAMA_CPP}, {"/tokenize": char_tokenizer(2)})
        tools = tool_caller(fake, redact=redact)
        checked = await tools.count("gemma", messages, TOOLS, budget=100_000)
        assert not checked.estimated
        sent = " ".join(str(body) for _, body in fake.posted)
        assert ("ops@billing.example.com" in sent) is leaks
        assert ("ghp_a1B2" in sent) is leaks
