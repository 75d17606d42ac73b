"""A deterministic model for the report writer, answered by the fake endpoint of
runner/llm/fake.py in-process behind the real `openai` client, for `digestd eval` and the tests.

What the fake answers (`quoting_answer`): it reads the `<source id="E..">` elements of the
request and writes the report out of them verbatim: the answer is the first `ANSWER` sources
that are statements, a section "What the sources say" the next `BODY` statements, the open
points the first `OPEN` sources that are questions, each sentence citing the one source it
copies; the title is the question. So it is a faithful model: its figures measure the writer's
plumbing (ids, budgets, audit), not a model's judgement.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from xml.sax.saxutils import unescape

from starlette.responses import Response

from runner.llm.breaker import CircuitBreaker
from runner.llm.client import ResilientCaller, build_client
from runner.llm.config import LLMConfig
from runner.llm.fake import Answer, FakeLLM, Model, completion
from runner.reports.llm_writer import REPORT_TOOL, LLMReportWriter, ReportCall

ANSWER, BODY, OPEN = 2, 6, 2
FAKE_MODEL = "fake-report-model"
_SOURCE = re.compile(r"<source id=\"(E\d+)\"[^>]*>(.*?)</source>", re.DOTALL)
_QUESTION = re.compile(r"^Question: (.*)$", re.MULTILINE)


def request_sources(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(id, text) of the sources the request shows, in order."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return [(identifier, unescape(text)) for identifier, text in _SOURCE.findall(user)]


def request_question(body: dict[str, Any]) -> str:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    match = _QUESTION.search(user)
    return match[1] if match else "Report"


def quoting_answer(body: dict[str, Any]) -> dict[str, Any]:
    """The `emit_report` arguments of a faithful model (see the module docstring)."""
    sources = request_sources(body)
    statements = [(i, t) for i, t in sources if not t.rstrip().endswith("?")]
    questions = [(i, t) for i, t in sources if t.rstrip().endswith("?")]

    def cited(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return [{"sentence": text[:600], "source_ids": [identifier]} for identifier, text in pairs]

    body_sentences = cited(statements[ANSWER : ANSWER + BODY])
    return {
        "title": request_question(body).rstrip("?. ")[:160] or "Report",
        "answer": cited(statements[:ANSWER]),
        "sections": (
            [{"heading": "What the sources say", "sentences": body_sentences}]
            if body_sentences
            else []
        ),
        "open_points": cited(questions[:OPEN]),
    }


def report_model(build: Callable[[dict[str, Any]], Any] = quoting_answer) -> Model:
    """A model function calling `emit_report` with `build`'s arguments for each request; a
    Starlette `Response` that `build` returns (an error) is answered as is."""

    def respond(body: dict[str, Any]) -> Answer:
        arguments = build(body)
        if isinstance(arguments, Response):
            return arguments
        return completion(
            tool=REPORT_TOOL,
            arguments=arguments,
            prompt_tokens=0,
            completion_tokens=0,
            model=FAKE_MODEL,
        )

    return respond


def fake_config(**settings: Any) -> LLMConfig:
    values: dict[str, Any] = {
        "base_url": "http://fake-model.test/v1",
        "api_key": "",
        "reduce_model": FAKE_MODEL,
        "max_retries": 0,
        # The fake model is in no limits table: its context is set, as an operator would for a
        # local model, so its reports carry no LIMITS_DEFAULTED (the size assumed for an unknown
        # model, so the same budget).
        "reduce_context_tokens": 32_768,
        **settings,
    }
    return LLMConfig(**values)


def fake_report_writer(
    endpoint: FakeLLM | None = None, *, min_overlap: float | None = None, **settings: Any
) -> tuple[LLMReportWriter, FakeLLM]:
    """The production writer over the real `openai` client, answered in-process by `endpoint`
    (by default the faithful `quoting_answer`)."""
    endpoint = endpoint or FakeLLM(report_model())
    config = fake_config(**settings)
    client = build_client(config, http_client=endpoint.http_client())
    caller = ResilientCaller(client, config, CircuitBreaker("fake-report-model"))
    call = ReportCall(caller, config.reduce_model)
    if min_overlap is None:
        return LLMReportWriter(call), endpoint
    return LLMReportWriter(call, min_overlap=min_overlap), endpoint
