"""One LLM stack: the document summarizer goes through the chat extractor's tool-call path
(preflight against the model's budget, usage figures, the re-ask as a `tool` message), its prompt is
a versioned file, the extractor and the summarizer share one client and one breaker per endpoint,
and neither `runner/llm` nor `runner/documents` imports `runner/extractors`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from runner.documents.digest import summary_request
from runner.documents.llm_summary import (
    LLMSummarizer,
    SummarizerError,
    resilient_tool_call,
)
from runner.documents.policy import DigestConfig
from runner.extract.llm import LLMExtractor
from runner.llm.breaker import CircuitBreaker
from runner.llm.client import ResilientCaller, build_client
from runner.llm.config import LLMConfig
from runner.llm.fake import FakeLLM
from runner.llm.prompts import DOC_SUMMARY_PROMPT, load_prompt
from server.runtime import extractor_factory, summarizer_factory
from server.settings import Settings
from tests.support.documents import _document, document_endpoint
from tests.support.paths import REPO_ROOT


def _summarizer(endpoint: FakeLLM, config: LLMConfig) -> LLMSummarizer:
    http = endpoint.http_client()
    caller = ResilientCaller(build_client(config, http), config, CircuitBreaker())
    return LLMSummarizer(resilient_tool_call(caller, config.reduce_model), config.reduce_model)


def _config(reduce_context_tokens: int | None = None) -> LLMConfig:
    return LLMConfig(
        base_url="http://llm.test/v1",
        api_key="sk-test",
        max_retries=0,
        reduce_context_tokens=reduce_context_tokens,
    )


async def test_the_summarizer_counts_usage_and_re_asks_like_the_extractor() -> None:
    fixed = {"summary": "Sharding reviews happen weekly.", "key_points": []}
    endpoint = document_endpoint([{"summary": 5}, fixed])
    request = summary_request(_document(), "sharding", DigestConfig())
    result = await _summarizer(endpoint, _config()).summarize(request)

    assert result.summary == fixed["summary"]
    assert result.usage is not None
    assert (result.usage.llm_calls, result.usage.prompt_tokens) == (2, 20)  # 10 per answer
    first, reask = (sent["messages"] for sent in endpoint.requests)
    assert first[0] == {"role": "system", "content": load_prompt(DOC_SUMMARY_PROMPT, "v1").text}
    # The bad call is answered with a `tool` message, as the chat extractor's re-ask does.
    assert [m["role"] for m in reask[len(first) :]] == ["assistant", "tool"]
    assert "schema violations" in reask[-1]["content"]
    # A string: llama-cpp-python's server refuses an assistant message with null content.
    assert isinstance(reask[len(first)]["content"], str)


async def test_a_request_over_the_models_budget_is_refused_before_it_is_sent() -> None:
    endpoint = document_endpoint([])
    request = summary_request(_document(), "sharding", DigestConfig())
    summarizer = _summarizer(endpoint, _config(reduce_context_tokens=800))
    with pytest.raises(SummarizerError) as refused:
        await summarizer.summarize(request)
    assert refused.value.code == "request_too_large" and endpoint.requests == []


async def test_extractor_and_summarizer_share_one_client_and_breaker(tmp_path: Path) -> None:
    settings = Settings(
        digestd_home=tmp_path,
        digest_extractor="llm",
        digest_llm_base_url="http://llm.test/v1",
    )
    extractor = extractor_factory(settings)()
    summarizer = summarizer_factory(settings)()
    assert isinstance(extractor, LLMExtractor) and isinstance(summarizer, LLMSummarizer)
    assert summarizer.call.caller.client is extractor.client
    assert summarizer.call.caller.breaker is extractor.breaker
    again = extractor_factory(settings)()
    assert isinstance(again, LLMExtractor) and again.client is extractor.client  # one per endpoint


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_llm_and_documents_do_not_import_the_extractors() -> None:
    for package in ("runner/llm", "runner/documents"):
        for path in sorted((REPO_ROOT / package).glob("*.py")):
            uphill = {name for name in _imports(path) if name.startswith("runner.extractors")}
            assert not uphill, f"{path.relative_to(REPO_ROOT)} imports {uphill}"
