"""Endpoints that answer 200 with something other than a chat completion: an HTML page (a proxy's
login page, a captive portal), JSON of another shape, a body that is not JSON at all. Each is a
failed attempt - retried, counted by the circuit breaker - whose error says what came back (content
type and a short prefix) without the API key or the whole body."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.responses import Response

from runner.core.chunks import chunk_messages
from runner.core.extractor import ChunkFailed
from runner.digests.pipeline import run_pipeline
from runner.documents.llm_summary import document_tool_schema, resilient_tool_call
from runner.llm.breaker import BreakerState, CircuitBreaker
from runner.llm.client import LLMCallError, ResilientCaller, build_client
from runner.llm.config import LLMConfig
from runner.llm.fake import FakeLLM, completion, raw
from tests.support.llm import API_KEY, Sleeps, make_extractor, make_window, minimal_summary

WINDOW = make_window(["the build fails on arm64 with exit code 137", "raise the memory limit"])
CHUNK = chunk_messages(list(WINDOW.messages), 4000)[0]
SECRET_MARKER = "the-rest-of-the-page-" * 200
HTML = (
    "<!DOCTYPE html>\n<html><head><title>Sign in - Corporate Proxy</title></head>\n<body>"
    f"<p>Your key {API_KEY} is not allowed.</p>{SECRET_MARKER}</body></html>"
)


def html_page(body: dict[str, Any]) -> Response:
    return raw(HTML, "text/html; charset=utf-8")


def json_body(value: Any) -> Response:
    """A 200 whose JSON body is `value`, whatever its shape."""
    return raw(json.dumps(value), "application/json")


def then_valid(first: list[Response]) -> FakeLLM:
    queue = list(first)

    def respond(body: dict[str, Any]) -> Any:
        if queue:
            return queue.pop(0)
        return completion(tool="emit_chunk_summary", arguments=minimal_summary(body))

    return FakeLLM(respond)


async def test_an_html_page_fails_the_chunk_with_what_came_back() -> None:
    endpoint = FakeLLM(html_page)
    breaker = CircuitBreaker("html", min_samples=5)
    extractor = make_extractor(endpoint, breaker=breaker, max_retries=2)
    with pytest.raises(ChunkFailed) as failure:
        await extractor.extract_chunk(CHUNK, [])
    reason = failure.value.reason
    assert len(endpoint.requests) == 3  # retried like a 5xx
    assert "after 3 attempts" in reason and "text/html" in reason
    assert "<!DOCTYPE html> <html><head><title>Sign in - Corporate Proxy" in reason
    assert API_KEY not in reason and "the-rest-of-the-page" not in reason
    assert len(reason) < 400
    # Counted against the endpoint: more of them open the breaker.
    for _ in range(2):
        with pytest.raises(ChunkFailed):
            await extractor.extract_chunk(CHUNK, [])
    assert breaker.state is BreakerState.OPEN


async def test_one_html_answer_is_retried_and_the_chunk_succeeds() -> None:
    endpoint = then_valid([html_page({})])
    sleeps = Sleeps()
    extractor = make_extractor(endpoint, sleeps=sleeps)
    summary = await extractor.extract_chunk(CHUNK, [])
    assert summary.chunk_summary and len(endpoint.requests) == 2 and len(sleeps.delays) == 1


@pytest.mark.parametrize(
    ("response", "said"),
    [
        (json_body({"error": {"message": "upstream busy"}}), "without choices"),
        (json_body({"object": "list", "choices": []}), "without choices"),
        (json_body({"choices": ["x"]}), "without choices"),
        (raw("{not json", "application/json"), "application/json: '{not json'"),
        (raw("", "text/plain"), "empty body"),
        (json_body("just a string"), "not a chat completion"),
    ],
)
async def test_other_malformed_answers_are_failed_attempts(response: Response, said: str) -> None:
    endpoint = FakeLLM(lambda body: response)
    extractor = make_extractor(endpoint, max_retries=1)
    with pytest.raises(ChunkFailed) as failure:
        await extractor.extract_chunk(CHUNK, [])
    assert said in failure.value.reason and "HTTP 200" in failure.value.reason
    assert len(endpoint.requests) == 2


async def test_a_job_against_an_html_endpoint_records_the_reason() -> None:
    extractor = make_extractor(FakeLLM(html_page), max_retries=0)
    result = await run_pipeline(WINDOW, extractor, chunk_tokens=4000)
    # The chunk is read by the offline rules; the reason it was not read by the model is kept.
    assert result.failed_chunks == []
    [failed] = result.fallback_chunks
    assert "malformed response" in str(failed["reason"]) and "text/html" in str(failed["reason"])
    assert "AttributeError" not in str(failed["reason"])


async def test_the_document_summarizer_gets_a_call_error_not_an_attribute_error() -> None:
    config = LLMConfig(base_url="http://llm.test/v1", api_key=API_KEY, max_retries=1)
    client = build_client(
        config,
        http_client=FakeLLM(html_page).http_client(),
    )
    caller = ResilientCaller(client, config, CircuitBreaker("doc-html"), sleep=Sleeps())
    call = resilient_tool_call(caller, "gpt-4o-mini")
    with pytest.raises(LLMCallError, match="text/html") as failure:
        await call([{"role": "user", "content": "summarize"}], document_tool_schema())
    assert API_KEY not in str(failure.value)


async def test_a_tool_call_without_its_type_field_is_still_the_call() -> None:
    # Some local servers leave `"type": "function"` out of their tool calls.
    def untyped(body: dict[str, Any]) -> dict[str, Any]:
        answer = completion(tool="emit_chunk_summary", arguments=minimal_summary(body))
        del answer["choices"][0]["message"]["tool_calls"][0]["type"]
        del answer["choices"][0]["finish_reason"]
        return answer

    endpoint = FakeLLM(untyped)
    summary = await make_extractor(endpoint).extract_chunk(CHUNK, [])
    assert summary.chunk_summary and len(endpoint.requests) == 1
