"""Summaries for the query: the offline extractive summarizer, and the LLM summarizer through the
real `openai` client (over the fake endpoint, in-process) with the query in the prompt, a forced
tool call, validation with one re-ask, ungrounded key points dropped, and the circuit breaker."""

from __future__ import annotations

import pytest

from runner.documents.digest import digest_document, digest_document_offline
from runner.documents.ingest import ingest_bytes
from runner.documents.llm_summary import (
    DOCUMENT_DIGEST_TOOL,
    LLMSummarizer,
    SummarizerError,
    resilient_tool_call,
)
from runner.documents.terms import tokens
from runner.llm.breaker import CircuitBreaker, CircuitOpen
from runner.llm.client import ResilientCaller, build_client
from runner.llm.config import LLMConfig
from runner.llm.fake import FakeLLM
from tests.support.documents import HTML_DIR, _document, docs_file, document_endpoint


def test_offline_key_points_and_summary_follow_the_query() -> None:
    document = _document()
    for topic in ("replication", "monitoring"):
        payload = digest_document_offline(document, f"{topic} practices", source_id="h").payload
        assert payload.key_points and all(topic in tokens(p) for p in payload.key_points)
        assert topic in payload.summary
        other = {"replication": "monitoring", "monitoring": "replication"}[topic]
        assert other not in " ".join(payload.key_points)
        assert len(set(payload.key_points)) == len(payload.key_points)  # repeats removed


def test_offline_summary_and_key_points_do_not_repeat_each_other_on_a_real_page() -> None:
    page = HTML_DIR / "google-sre-book-1" / "source.html"
    document = ingest_bytes(docs_file(page).read_bytes(), "text/html")
    payload = digest_document_offline(document, "symptoms versus causes", source_id="s").payload
    assert len(payload.key_points) >= 5
    assert not any(point in payload.summary for point in payload.key_points)
    assert all(point in document.canonical_text for point in payload.key_points)  # verbatim


def _summarizer(endpoint: FakeLLM, breaker: CircuitBreaker | None = None) -> LLMSummarizer:
    config = LLMConfig(base_url="http://llm.test/v1", api_key="sk-test", max_retries=0)
    http = endpoint.http_client()
    caller = ResilientCaller(build_client(config, http), config, breaker or CircuitBreaker())
    return LLMSummarizer(resilient_tool_call(caller, "fake-model"), "fake-model")


async def test_llm_summary_has_the_query_in_the_prompt_and_a_forced_tool_call() -> None:
    good = {
        "summary": "Replication needs clear ownership and regular load tests.",
        "key_points": [
            "Teams that adopt replication early report fewer incidents.",
            "Quantum blockchain synergy accelerates revenue.",  # not in the document
        ],
    }
    endpoint = document_endpoint([good])
    outcome = await digest_document(
        _document(),
        "How do teams run replication?",
        source_id="h",
        summarizer=_summarizer(endpoint),
    )
    request = endpoint.requests[0]
    assert request["tool_choice"] == {
        "type": "function",
        "function": {"name": DOCUMENT_DIGEST_TOOL},
    }
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    assert "Research question: How do teams run replication?" in user
    assert "replication" in user and "<excerpt locator=" in user
    assert outcome.payload.summary == good["summary"]
    assert outcome.payload.key_points == [good["key_points"][0]]
    assert "unsupported_key_point" in [w.code for w in outcome.warnings]
    assert (
        outcome.cache_key
        != digest_document_offline(
            _document(), "How do teams run replication?", source_id="h"
        ).cache_key
    )  # another summarizer, another cache entry


async def test_bad_output_is_fed_back_once_then_refused() -> None:
    fixed = {"summary": "Sharding reviews happen weekly.", "key_points": []}
    endpoint = document_endpoint([{"summary": 5}, fixed])
    outcome = await digest_document(
        _document(), "sharding", source_id="h", summarizer=_summarizer(endpoint)
    )
    assert outcome.payload.summary == fixed["summary"] and len(endpoint.requests) == 2
    assert "schema violations" in endpoint.requests[1]["messages"][-1]["content"]

    broken = document_endpoint(["not json", {"key_points": ["x" * 600]}])
    with pytest.raises(SummarizerError) as caught:
        await digest_document(
            _document(), "sharding", source_id="h", summarizer=_summarizer(broken)
        )
    assert caught.value.code == "malformed_output"


async def test_open_breaker_skips_new_digests() -> None:
    breaker = CircuitBreaker(min_samples=2, window=4)
    endpoint = document_endpoint([], status=503)
    summarizer = _summarizer(endpoint, breaker)
    for _ in range(2):
        with pytest.raises(Exception):  # noqa: B017 - LLMCallError from the client
            await digest_document(_document(), "caching", source_id="h", summarizer=summarizer)
    sent = len(endpoint.requests)
    with pytest.raises(CircuitOpen):
        await digest_document(_document(), "caching", source_id="h", summarizer=summarizer)
    assert len(endpoint.requests) == sent  # no request while open
