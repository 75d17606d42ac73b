"""Document jobs with the LLM summarizer, over HTTP, against a fake OpenAI-compatible server on
127.0.0.1 reached through the real `openai` client. What the server receives is the proof:
the query is in the prompt, a cache hit sends nothing, a different query is a new call, garbage
output FAILS the job at once with its reason, and while the endpoint's circuit breaker is open
new digests fail fast but cached digests are still served."""

from __future__ import annotations

from typing import Any

import asyncpg
import httpx
import pytest

from runner.llm.fake import FakeLLM, completion, error
from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.api import gql
from tests.support.documents import (
    DIGEST,
    INGEST,
    assert_grounded,
    quoting_digest,
    run_job,
    upload,
)
from tests.support.paths import shared_data
from tests.support.servers import running_server


async def test_llm_summarizer_cache_failures_and_breaker(
    db: asyncpg.Pool, settings: Settings
) -> None:
    mode = {"answer": "good"}

    def respond(body: dict[str, Any]) -> Any:
        if mode["answer"] == "garbage":
            return completion(tool="emit_document_digest", arguments={"summary": 5})
        if mode["answer"] == "down":
            return error(500, "overloaded")
        return quoting_digest(body)

    fake = FakeLLM(respond)
    async with fake.serve() as base_url:
        llm_settings = settings.model_copy(
            update={
                "digest_extractor": "llm",
                "digest_llm_base_url": base_url,
                "digest_llm_max_retries": 0,
            }
        )
        app = create_app(llm_settings, AppOptions(run_workers=1))
        async with running_server(app) as api, httpx.AsyncClient(base_url=api, timeout=60) as http:
            source = upload(shared_data("docs/html/readability/wikipedia/source.html"), "text/html")
            document = (await gql(http, INGEST, {"input": source}))["ingestDocument"]

            query = "Which products does Mozilla make?"
            first = await run_job(http, document["id"], query)
            assert first["status"] == "SUCCEEDED", first
            assert len(fake.requests) == 1
            prompt = next(m["content"] for m in fake.requests[0]["messages"] if m["role"] == "user")
            assert f"Research question: {query}" in prompt
            assert fake.requests[0]["tool_choice"]["function"]["name"] == "emit_document_digest"
            digest = (await gql(http, DIGEST, {"id": first["documentDigestId"]}))["documentDigest"]
            assert digest["summarizer"] == "llm" and digest["keyPoints"]
            assert digest["summary"] in prompt.replace("&amp;", "&").replace("&lt;", "<").replace(
                "&gt;", ">"
            )
            await assert_grounded(db, digest)

            cached = await run_job(http, document["id"], query)
            assert (
                cached["stats"]["cacheHit"] is True
                and cached["documentDigestId"] == first["documentDigestId"]
            )
            assert len(fake.requests) == 1, "a cache hit must not call the model"

            other = await run_job(http, document["id"], "Who founded the Mozilla Foundation?")
            assert (
                other["status"] == "SUCCEEDED"
                and other["documentDigestId"] != first["documentDigestId"]
            )
            assert len(fake.requests) == 2
            assert (
                "Who founded the Mozilla Foundation?" in fake.requests[1]["messages"][1]["content"]
            )

            # Unusable output twice (the answer is fed back once): FAILED at the first attempt.
            mode["answer"] = "garbage"
            bad = await run_job(http, document["id"], "What is Firefox?")
            assert bad["status"] == "FAILED" and bad["error"].startswith("malformed_output:"), bad
            assert len(fake.requests) == 4

            # The endpoint goes down: transient failures are retried, then the breaker opens.
            mode["answer"] = "down"
            questions = ["What is Thunderbird?", "What is Rust?", "What is Servo?", "What is MDN?"]
            for question in questions:
                down = await run_job(http, document["id"], question)
                assert down["status"] == "FAILED", down
                assert "LLMCallError" in down["error"] or "circuit open" in down["error"], down
                if "circuit open" in down["error"]:
                    break
            else:
                pytest.fail("the breaker never opened")
            calls_when_open = len(fake.requests)
            refused = await run_job(http, document["id"], "What is SpiderMonkey?")
            assert refused["status"] == "FAILED" and "circuit open" in refused["error"], refused
            assert len(fake.requests) == calls_when_open, "an open breaker sends nothing"

            # Cached digests are still served while it is open.
            served = await run_job(http, document["id"], query)
            assert served["status"] == "SUCCEEDED" and served["stats"]["cacheHit"] is True
            assert served["documentDigestId"] == first["documentDigestId"]
