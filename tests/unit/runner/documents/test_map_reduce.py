"""A document too large for one request is summarized whole: map requests over consecutive
parts that together show every passage exactly once, one reduce, the result grounded; a part the
model fails on is summarized by the offline rules and named in a CHUNKS_EXTRACTED_OFFLINE
warning. The real `openai` client talks to the fake OpenAI-compatible server in-process; the
document is a real paper (acl19irc.pdf)."""

from __future__ import annotations

import re
from typing import Any

from runner.core.tokens import count_tokens
from runner.documents.canonical import CanonicalDocument
from runner.documents.digest import digest_document
from runner.documents.evidence_chunks import chunk_document
from runner.documents.ingest import ingest_bytes
from runner.documents.llm_summary import LLMSummarizer, resilient_tool_call
from runner.llm.breaker import CircuitBreaker
from runner.llm.client import ResilientCaller, build_client
from runner.llm.config import LLMConfig
from runner.llm.fake import Answer, FakeLLM, error, tool_of
from runner.llm.redaction import RedactionSession
from tests.support.documents import PDF_DIR, docs_file, map_reduce_model, passages_of

QUERY = "How was the dataset annotated?"


def _paper() -> CanonicalDocument:
    return ingest_bytes(docs_file(PDF_DIR / "acl19irc.pdf").read_bytes(), "application/pdf")


def _summarizer(endpoint: FakeLLM, excerpt_chars: int) -> LLMSummarizer:
    config = LLMConfig(base_url="http://llm.test/v1", api_key="sk-test", max_retries=0)
    caller = ResilientCaller(build_client(config, endpoint.http_client()), config, CircuitBreaker())
    return LLMSummarizer(
        resilient_tool_call(caller, "fake-model"), "fake-model", excerpt_chars=excerpt_chars
    )


def _map_requests(endpoint: FakeLLM) -> list[dict[str, Any]]:
    return [body for body in endpoint.requests if tool_of(body) == "emit_chunk_summary"]


async def test_every_part_of_a_long_document_is_mapped_then_reduced_once() -> None:
    document = _paper()
    chunks = chunk_document(document.canonical_text, document.page_spans)
    assert len(document.canonical_text) > 40_000
    endpoint = FakeLLM(map_reduce_model)
    seen: list[tuple[str, int, int]] = []

    async def progress(phase: str, done: int, total: int) -> None:
        seen.append((phase, done, total))

    outcome = await digest_document(
        document,
        QUERY,
        source_id="paper",
        summarizer=_summarizer(endpoint, excerpt_chars=8000),
        progress=progress,
    )

    maps = _map_requests(endpoint)
    reduces = [body for body in endpoint.requests if tool_of(body) == "emit_digest"]
    assert len(maps) >= 5 and len(reduces) == 1, endpoint.tools_called()
    assert not any(tool_of(body) == "emit_document_digest" for body in endpoint.requests)
    # Every region of the text was shown to the model, once, in order, within the part size.
    # (Up to DIGEST_LLM_CONCURRENCY parts are asked at once: they arrive in any order.)
    shown = sorted((passages_of(body) for body in maps), key=lambda part: int(part[0][0][1:]))
    ids = [passage for part in shown for passage, _ in part]
    assert ids == [f"p{chunk.index}" for chunk in chunks]
    # As the model saw them: the authors' e-mail addresses replaced (the endpoint is not on
    # loopback), each request with placeholders of its own (no job scope here).
    by_id = {f"p{chunk.index}": chunk.text for chunk in chunks}
    expected: list[str] = []
    for part in shown:
        session = RedactionSession()
        expected += [session.redact(by_id[passage]) for passage, _ in part]
    assert [text for part in shown for _, text in part] == expected
    assert "«EMAIL_1»" in "".join(expected)
    addresses = {a for c in chunks for a in re.findall(r"[\w.]+@[\w.]+\.[a-z]+", c.text)}
    assert addresses and not any(a in str(body) for a in addresses for body in endpoint.requests)
    assert all(sum(len(text) for _, text in part) <= 8000 for part in shown)
    assert document.canonical_text[chunks[-1].start :].strip() in shown[-1][-1][1]
    for body in endpoint.requests:  # the question opens every request's data
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        assert user.startswith(f"Research question: {QUERY}")
    # The job's progress: map 0/N .. N/N, then the reduce.
    total = len(maps)
    assert seen[0] == ("map", 0, total) and seen[-1] == ("reduce", 0, 0)
    assert sorted(done for phase, done, _ in seen if phase == "map") == list(range(total + 1))

    payload = outcome.payload
    assert payload.summary and payload.key_points
    text = " ".join(document.canonical_text.split())
    for sentence in [payload.summary, *payload.key_points]:  # grounded: the passages' words
        assert sentence.removesuffix("…").strip() in text or all(
            part in text for part in sentence.split(" ")[:5]
        ), sentence
    assert not outcome.partial and outcome.map_chunks == total
    assert outcome.llm_calls == total + 1
    codes = [warning.code for warning in outcome.warnings]
    assert "CHUNKS_EXTRACTED_OFFLINE" not in codes


async def test_a_small_document_keeps_one_request() -> None:
    document = _paper()
    endpoint = FakeLLM(map_reduce_model)
    outcome = await digest_document(
        document, QUERY, source_id="paper", summarizer=_summarizer(endpoint, 400_000)
    )
    assert endpoint.tools_called() == ["emit_document_digest"]
    assert outcome.map_chunks == 0 and outcome.llm_calls == 1


async def test_a_failing_part_is_summarized_offline_and_named() -> None:
    document = _paper()
    chunks = chunk_document(document.canonical_text, document.page_spans)
    # The part holding the passage in the middle of the paper fails every time.
    poisoned = f"p{chunks[len(chunks) // 2].index}"

    def respond(body: dict[str, Any]) -> Answer:
        if tool_of(body) == "emit_chunk_summary" and poisoned in dict(passages_of(body)):
            return error(500, "overloaded")
        return map_reduce_model(body)

    endpoint = FakeLLM(respond)
    outcome = await digest_document(
        document, QUERY, source_id="paper", summarizer=_summarizer(endpoint, excerpt_chars=8000)
    )
    maps = _map_requests(endpoint)
    parts = sorted((passages_of(body) for body in maps), key=lambda part: int(part[0][0][1:]))
    failed = next(number for number, part in enumerate(parts, 1) if poisoned in dict(part))
    assert outcome.partial
    warning = next(w for w in outcome.warnings if w.code == "CHUNKS_EXTRACTED_OFFLINE")
    assert warning.message.startswith(
        f"1 of {len(maps)} chunk of the document summarized by the offline rules ({failed})"
    ), warning.message
    assert "overloaded" in warning.message or "500" in warning.message
    # The offline summary of that part reached the reduce, citing its passages.
    reduce = next(body for body in endpoint.requests if tool_of(body) == "emit_digest")
    user = next(m["content"] for m in reduce["messages"] if m["role"] == "user")
    assert f"o{failed}.K1" in user
    assert outcome.payload.summary


async def test_the_part_size_follows_the_model_budget() -> None:
    """A small context window cuts smaller parts than `excerpt_chars` allows: each map request
    fits the model's input budget."""
    document = _paper()
    endpoint = FakeLLM(map_reduce_model)
    config = LLMConfig(
        base_url="http://llm.test/v1",
        api_key="sk-test",
        max_retries=0,
        model_limits={"small-model": {"context_window": 6000, "max_output_tokens": 1500}},
    )
    caller = ResilientCaller(build_client(config, endpoint.http_client()), config, CircuitBreaker())
    summarizer = LLMSummarizer(
        resilient_tool_call(caller, "small-model"), "small-model", excerpt_chars=400_000
    )
    await digest_document(document, QUERY, source_id="paper", summarizer=summarizer)
    maps = _map_requests(endpoint)
    assert len(maps) >= 5
    for body in maps:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        assert count_tokens(user).tokens < 6000


async def test_a_failing_reduce_keeps_the_parts_statements() -> None:
    """The reduce call fails: the chat path's deterministic merge stands in (its warning on the
    digest), and the parts' validated statements still make the summary."""
    document = _paper()

    def respond(body: dict[str, Any]) -> Answer:
        if tool_of(body) == "emit_digest":
            return error(500, "reduce down")
        return map_reduce_model(body)

    endpoint = FakeLLM(respond)
    outcome = await digest_document(
        document, QUERY, source_id="paper", summarizer=_summarizer(endpoint, excerpt_chars=8000)
    )
    codes = [warning.code for warning in outcome.warnings]
    assert "SUMMARY_PROVIDER_FAILED" in codes and not outcome.partial
    assert outcome.payload.summary and outcome.payload.key_points
    text = " ".join(document.canonical_text.split())
    assert all(point in text for point in outcome.payload.key_points)
