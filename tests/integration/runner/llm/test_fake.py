"""The fake OpenAI-compatible endpoint (runner/llm/fake.py) through the real `openai` client, over a
loopback port and in-process: a forced tool call round trip, an error status, Retry-After waited
for by the production caller, a body that is not a completion, a slow model, static GET routes,
and the server on a thread of its own for synchronous callers."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionMessageFunctionToolCall

from runner.llm.breaker import CircuitBreaker
from runner.llm.client import LLMCallError, ResilientCaller, build_client
from runner.llm.config import LLMConfig
from runner.llm.fake import FakeLLM, completion, delayed, error, raw, tool_of

TOOL = {
    "type": "function",
    "function": {
        "name": "emit_answer",
        "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}},
    },
}
REQUEST: dict[str, Any] = {
    "model": "fake-model",
    "messages": [{"role": "user", "content": "What is the answer?"}],
    "tools": [TOOL],
    "tool_choice": {"type": "function", "function": {"name": "emit_answer"}},
}


def echo(body: dict[str, Any]) -> dict[str, Any]:
    """Calls the forced tool with the user's question in its arguments."""
    question = body["messages"][-1]["content"]
    return completion(tool=tool_of(body), arguments={"answer": f"you asked: {question}"})


def tool_call(response: ChatCompletion) -> tuple[str, str]:
    """(name, arguments) of the one function call of a response."""
    (call,) = response.choices[0].message.tool_calls or []
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    return call.function.name, call.function.arguments


def config(base_url: str, **settings: Any) -> LLMConfig:
    return LLMConfig(base_url=base_url, api_key="sk-fake-key-0123456789", **settings)


async def test_a_tool_call_round_trip_over_a_loopback_port() -> None:
    fake = FakeLLM(echo)
    async with fake.serve() as base_url:
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        client = build_client(config(base_url))
        try:
            response = await client.chat.completions.create(**REQUEST)
        finally:
            await client.close()
    name, arguments = tool_call(response)
    assert name == "emit_answer"
    assert json.loads(arguments) == {"answer": "you asked: What is the answer?"}
    assert response.usage is not None and response.usage.total_tokens == 120
    # What the client sent, as the fake received it.
    assert fake.requests == [REQUEST]
    (exchange,) = fake.exchanges
    assert exchange.path == "/v1/chat/completions" and exchange.status == 200
    assert exchange.headers["authorization"] == "Bearer sk-fake-key-0123456789"
    assert exchange.received <= exchange.answered
    assert fake.tools_called() == ["emit_answer"]


async def test_the_same_model_answers_in_process() -> None:
    fake = FakeLLM(echo)
    client = build_client(config("http://llm.test/v1"), http_client=fake.http_client())
    try:
        response = await client.chat.completions.create(**REQUEST)
    finally:
        await client.close()
    assert "you asked" in tool_call(response)[1]
    assert len(fake.requests) == 1


@pytest.mark.parametrize("in_process", [False, True], ids=["port", "in-process"])
async def test_an_error_status_reaches_the_client(in_process: bool) -> None:
    fake = FakeLLM(lambda body: error(503, "overloaded, try later"))
    async with fake.serve() as base_url:
        http = fake.http_client() if in_process else None
        client = build_client(config(base_url), http_client=http)
        try:
            with pytest.raises(openai.APIStatusError) as raised:
                await client.chat.completions.create(**REQUEST)
        finally:
            await client.close()
    assert raised.value.status_code == 503
    assert "overloaded, try later" in str(raised.value.message)
    assert [e.status for e in fake.exchanges] == [503]


async def test_retry_after_is_waited_for_by_the_production_caller() -> None:
    answers: list[Any] = [error(429, "slow down", retry_after=0.6)]

    def limited(body: dict[str, Any]) -> Any:
        return answers.pop(0) if answers else echo(body)

    fake = FakeLLM(limited)
    async with fake.serve() as base_url:
        # Backoff alone would wait ~10 ms: only the header can make the caller wait 0.6 s.
        settings = config(base_url, max_retries=2, backoff_base_seconds=0.01)
        caller = ResilientCaller(build_client(settings), settings, CircuitBreaker("fake-retry"))
        try:
            response = await caller.create(**REQUEST)
        finally:
            await caller.client.close()
    assert tool_call(response)[0] == "emit_answer" and caller.retries == 1
    refused, answered = fake.exchanges
    assert refused.status == 429 and answered.status == 200
    assert 0.6 <= answered.received - refused.answered < 5


async def test_a_body_that_is_not_a_completion_is_a_malformed_response() -> None:
    page = "<!DOCTYPE html><html><title>Sign in</title></html>"
    fake = FakeLLM(lambda body: raw(page, "text/html; charset=utf-8"))
    async with fake.serve() as base_url:
        settings = config(base_url, max_retries=0)
        caller = ResilientCaller(build_client(settings), settings, CircuitBreaker("fake-html"))
        try:
            with pytest.raises(LLMCallError, match="malformed response") as raised:
                await caller.create(**REQUEST)
        finally:
            await caller.client.close()
    assert "text/html" in str(raised.value) and "Sign in" in str(raised.value)


async def test_a_slow_model_answers_after_its_delay_and_can_be_timed_out() -> None:
    fake = FakeLLM(delayed(echo, 0.3))
    async with fake.serve() as base_url:
        client = build_client(config(base_url))
        impatient = build_client(config(base_url, timeout_seconds=0.05))
        try:
            started = time.perf_counter()
            await client.chat.completions.create(**REQUEST)
            assert time.perf_counter() - started >= 0.3
            with pytest.raises(openai.APITimeoutError):
                await impatient.chat.completions.create(**REQUEST)
        finally:
            await client.close()
            await impatient.close()
    assert fake.exchanges[0].answered - fake.exchanges[0].received >= 0.3


async def test_an_exception_of_the_model_reaches_an_in_process_client_as_is() -> None:
    def timing_out(body: dict[str, Any]) -> Any:
        raise httpx.ReadTimeout("the model never answered")

    fake = FakeLLM(timing_out)
    client = build_client(config("http://llm.test/v1"), http_client=fake.http_client())
    try:
        with pytest.raises(openai.APITimeoutError):
            await client.chat.completions.create(**REQUEST)
    finally:
        await client.close()


def test_a_server_on_its_own_thread_serves_synchronous_callers() -> None:
    listing = {"object": "list", "data": [{"id": "local-model", "object": "model"}]}
    fake = FakeLLM(echo, routes={"/v1/models": listing})
    with fake.serve_in_thread() as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
        assert [model.id for model in client.models.list()] == ["local-model"]
        client.chat.completions.create(**REQUEST)
        with httpx.Client() as http:
            assert http.get(base_url.replace("/v1", "/props")).status_code == 404
            timings = http.get(base_url.replace("/v1", "/fake/exchanges")).json()
            assert [(t["tool"], t["status"]) for t in timings] == [("emit_answer", 200)]
            http.post(base_url.replace("/v1", "/fake/reset"))
        client.close()
    assert fake.exchanges == [] and fake.requests == []
    with pytest.raises(httpx.ConnectError):  # stopped with the context
        httpx.get(base_url.replace("/v1", "/fake/exchanges"), timeout=2)
