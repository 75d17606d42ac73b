"""Document jobs with the LLM summarizer, over HTTP, against a fake OpenAI-compatible server on
127.0.0.1 reached through the real `openai` client. What the server receives is the proof:
the query is in the prompt, a cache hit sends nothing, a different query is a new call. A model
that fails still gives a digest: garbage output twice, an endpoint answering errors until its
circuit breaker opens (and then nothing is sent), an endpoint on a closed port and a model that
answers only after the digest's time limit all end the job PARTIAL at its first attempt, with the
offline digest and a SUMMARY_EXTRACTED_OFFLINE warning saying why; a later job asks the model
again, and cached digests are served while the breaker is open. An open breaker skips the model
without a call (`breaker_open`) and serves the offline digest an earlier job stored for the same
key; after its cooldown the model is asked again."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import httpx
import pytest

from db import jobs
from db.documents import store_document
from db.models import DigestJob
from runner.documents.ingest import ingest_text
from runner.documents.job import DocumentJobRunner
from runner.documents.llm_summary import LLMSummarizer, resilient_tool_call
from runner.documents.policy import DigestConfig, DigestPolicy
from runner.extract.offline import OfflineExtractor
from runner.llm.breaker import CircuitBreaker
from runner.llm.client import ResilientCaller, build_client
from runner.llm.config import LLMConfig
from runner.llm.fake import FakeLLM, completion, delayed, error, tool_of
from runner.triggers import trigger_document_digest, trigger_document_digests
from runner.worker import Worker, WorkerConfig
from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.api import gql
from tests.support.documents import (
    DIGEST,
    DOCUMENT_TEXT,
    INGEST,
    assert_grounded,
    digest_stored_document,
    map_reduce_model,
    passages_of,
    quoting_digest,
    run_job,
    upload,
)
from tests.support.paths import shared_data
from tests.support.servers import free_port, running_server


async def test_llm_summarizer_cache_failures_and_breaker(
    db: asyncpg.Pool, settings: Settings
) -> None:
    mode = {"answer": "good"}

    def respond(body: dict[str, Any]) -> Any:
        if mode["answer"] == "garbage":
            return garbage(body)
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

            # Unusable output twice (the answer is fed back once): the offline digest, PARTIAL.
            mode["answer"] = "garbage"
            bad = await run_job(http, document["id"], "What is Firefox?")
            reason = await assert_offline_digest(db, http, bad)
            assert reason.startswith("unusable summarizer output"), reason
            assert GARBAGE not in reason, "the model's output is never shown"
            assert len(fake.requests) == 4
            # The model is back: the same request asks it again (the offline digest is stored
            # under the offline summarizer's key, not the model's).
            mode["answer"] = "good"
            again = await run_job(http, document["id"], "What is Firefox?")
            assert again["status"] == "SUCCEEDED" and again["stats"]["cacheHit"] is False
            assert again["stats"]["summaryOffline"] is False and again["warnings"] == []
            assert again["documentDigestId"] != bad["documentDigestId"]
            assert len(fake.requests) == 5

            # The endpoint goes down: each job falls back, until the breaker opens.
            mode["answer"] = "down"
            # (It opens when at least seven of its last ten calls failed.)
            for question in [f"What is product {number}?" for number in range(12)]:
                down = await run_job(http, document["id"], question)
                reason = await assert_offline_digest(db, http, down)
                assert "LLM request failed" in reason or "circuit open" in reason, reason
                if "circuit open" in reason:
                    break
            else:
                pytest.fail("the breaker never opened")
            calls_when_open = len(fake.requests)
            refused = await run_job(http, document["id"], "What is SpiderMonkey?")
            assert "circuit open" in await assert_offline_digest(db, http, refused)
            assert len(fake.requests) == calls_when_open, "an open breaker sends nothing"

            # Cached digests are still served while it is open.
            served = await run_job(http, document["id"], query)
            assert served["status"] == "SUCCEEDED" and served["stats"]["cacheHit"] is True
            assert served["documentDigestId"] == first["documentDigestId"]


async def test_a_model_endpoint_that_is_down_still_gives_the_offline_digest(
    db: asyncpg.Pool, settings: Settings
) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"  # bound, then released: nothing listens
    llm_settings = settings.model_copy(
        update={
            "digest_extractor": "llm",
            "digest_llm_base_url": closed,
            "digest_llm_max_retries": 1,
        }
    )
    app = create_app(llm_settings, AppOptions(run_workers=1))
    async with running_server(app) as api, httpx.AsyncClient(base_url=api, timeout=60) as http:
        source = upload(shared_data("docs/html/readability/wikipedia/source.html"), "text/html")
        document = (await gql(http, INGEST, {"input": source}))["ingestDocument"]
        job = await run_job(http, document["id"], "Which products does Mozilla make?")
        reason = await assert_offline_digest(db, http, job)
    assert reason.startswith("LLM request failed after 2 attempts: connection error"), reason


GARBAGE = "GARBAGE-FROM-THE-MODEL"


def garbage(body: dict[str, Any]) -> Any:
    """A tool call whose arguments break the schema (a number for the summary)."""
    return completion(tool="emit_document_digest", arguments={"summary": 5, "key_points": GARBAGE})


async def assert_offline_digest(
    db: asyncpg.Pool, http: httpx.AsyncClient, job: dict[str, Any]
) -> str:
    """The job ended PARTIAL with a grounded digest the offline summarizer wrote, its first
    warning says so; returns the reason the warning gives."""
    assert job["status"] == "PARTIAL" and job["error"] is None, job
    assert job["stats"]["summaryOffline"] is True and job["stats"]["cacheHit"] is False
    warning = job["warnings"][0]
    assert warning["code"] == "SUMMARY_EXTRACTED_OFFLINE", job["warnings"]
    opening = "the summary and key points were extracted by the offline rules; the model failed: "
    assert warning["message"].startswith(opening), warning
    assert "Traceback" not in warning["message"] and "Error:" not in warning["message"]
    digest = (await gql(http, DIGEST, {"id": job["documentDigestId"]}))["documentDigest"]
    assert digest["summarizer"] == "offline" and digest["summary"]
    text = digest["document"]["canonicalText"]
    assert digest["keyPoints"] and all(point in text for point in digest["keyPoints"])
    await assert_grounded(db, digest)
    return str(warning["message"][len(opening) :])


def single_try_summarizer(endpoint: FakeLLM) -> LLMSummarizer:
    """The production summarizer over the real `openai` client, answered by `endpoint`, with no
    retry: each test's model behaviour is seen once."""
    config = LLMConfig(base_url="http://llm.test/v1", api_key="sk-test", max_retries=0)
    caller = ResilientCaller(build_client(config, endpoint.http_client()), config, CircuitBreaker())
    return LLMSummarizer(resilient_tool_call(caller, config.reduce_model), config.reduce_model)


async def test_a_model_that_does_not_answer_in_time_gives_the_offline_digest(
    db: asyncpg.Pool, database_url: str
) -> None:
    endpoint = FakeLLM(delayed(quoting_digest, 30.0))
    summarizer = single_try_summarizer(endpoint)
    # One source at a time, half a second each: the model's answer comes far too late.
    digest_config = DigestConfig(policy=DigestPolicy.ALWAYS, timeout=0.5, max_concurrent=1)
    runner = DocumentJobRunner(config=digest_config, summarizer_factory=lambda: summarizer)
    worker = Worker(db, database_url, WorkerConfig(), OfflineExtractor, documents=runner)
    text = f"{DOCUMENT_TEXT}\n\nHandbook edition {uuid.uuid4().hex}."
    async with db.acquire() as connection:
        row, _ = await store_document(connection, ingest_text(text).as_record())
        job, _ = await trigger_document_digest(
            connection, row.id, "How are load tests run?", config=digest_config, max_attempts=3
        )
    assert await worker.run_once()
    async with db.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
    assert done is not None and done.status == "partial", done
    assert done.attempts == 1 and done.document_digest_id is not None
    assert done.stats["summary_offline"] is True and done.stats["summarizer"] == "offline"
    warning = done.warnings[0]
    assert warning["code"] == "SUMMARY_EXTRACTED_OFFLINE"
    assert warning["message"].endswith("the model failed: no answer within the digest's 0.5 s")
    assert len(endpoint.requests) <= 1


async def test_an_open_breaker_skips_the_model_and_serves_the_offline_digest_it_stored(
    db: asyncpg.Pool, database_url: str
) -> None:
    config = LLMConfig(base_url="http://llm.test/v1", api_key="sk-test", max_retries=0)
    endpoint = FakeLLM(quoting_digest)
    now = [1000.0]
    breaker = CircuitBreaker(min_samples=1, cooldown_seconds=60, clock=lambda: now[0])
    breaker.record_failure()  # one failure in one sample: open
    caller = ResilientCaller(build_client(config, endpoint.http_client()), config, breaker)
    summarizer = LLMSummarizer(
        resilient_tool_call(caller, config.reduce_model), config.reduce_model
    )
    digest_config = DigestConfig(policy=DigestPolicy.ALWAYS)
    runner = DocumentJobRunner(config=digest_config, summarizer_factory=lambda: summarizer)
    worker = Worker(db, database_url, WorkerConfig(), OfflineExtractor, documents=runner)
    text = f"{DOCUMENT_TEXT}\n\nHandbook edition {uuid.uuid4().hex}."
    async with db.acquire() as connection:
        row, _ = await store_document(connection, ingest_text(text).as_record())

    async def digest_once() -> DigestJob:
        return await digest_stored_document(
            db, worker, row.id, "How are load tests run?", digest_config
        )

    # Open: the model is skipped at once (nothing sent, no retry), the offline digest stored.
    skipped = await digest_once()
    assert skipped.status == "partial" and skipped.attempts == 1, skipped
    assert skipped.stats["model_skipped"] == "breaker_open"
    assert skipped.stats["summarizer"] == "offline" and skipped.stats["cache_hit"] is False
    assert skipped.warnings[0]["code"] == "SUMMARY_EXTRACTED_OFFLINE"
    assert "the model failed: breaker_open: circuit open" in skipped.warnings[0]["message"]
    assert endpoint.requests == []

    # Still open: the offline digest stored for this key is served, not written again.
    served = await digest_once()
    assert served.status == "partial" and served.stats["cache_hit"] is True, served
    assert served.document_digest_id == skipped.document_digest_id
    assert served.stats["model_skipped"] == "breaker_open"
    assert served.warnings[0]["code"] == "SUMMARY_EXTRACTED_OFFLINE"
    assert endpoint.requests == []

    # The cooldown passes: the probe goes to the model, whose digest is a new one.
    now[0] += 61
    probed = await digest_once()
    assert probed.status == "succeeded" and probed.stats["summarizer"] == "llm", probed
    assert "model_skipped" not in probed.stats and probed.warnings == []
    assert probed.document_digest_id != skipped.document_digest_id
    assert len(endpoint.requests) == 1


async def _batch_job(
    db: asyncpg.Pool, database_url: str, endpoint: FakeLLM, batch: DigestConfig, wait: float
) -> Any:
    """Queue one document through `trigger_document_digests` under `batch`'s time budget, wait
    `wait` seconds, and run the job with a worker whose own per-source timeout is 9 s."""
    summarizer = single_try_summarizer(endpoint)
    worker_config = DigestConfig(policy=DigestPolicy.ALWAYS, timeout=9.0, max_concurrent=1)
    runner = DocumentJobRunner(config=worker_config, summarizer_factory=lambda: summarizer)
    worker = Worker(db, database_url, WorkerConfig(), OfflineExtractor, documents=runner)
    text = f"{DOCUMENT_TEXT}\n\nHandbook edition {uuid.uuid4().hex}."
    async with db.acquire() as connection:
        row, _ = await store_document(connection, ingest_text(text).as_record())
        [job], skipped = await trigger_document_digests(
            connection, [row.id], "How are load tests run?", config=batch, max_attempts=3
        )
    assert skipped == [] and job.options["batch_deadline"], job.options
    await asyncio.sleep(wait)
    assert await worker.run_once()
    async with db.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
    assert done is not None
    return done


async def test_a_batch_whose_time_is_up_skips_the_model_and_gives_the_offline_digest(
    db: asyncpg.Pool, database_url: str
) -> None:
    endpoint = FakeLLM(quoting_digest)
    batch = DigestConfig(policy=DigestPolicy.ALWAYS, timeout=0.2, max_concurrent=1)
    done = await _batch_job(db, database_url, endpoint, batch, wait=0.5)
    assert done.status == "partial" and done.attempts == 1, done
    assert done.document_digest_id is not None
    assert done.stats["model_skipped"] == "batch_deadline"
    assert done.stats["summarizer"] == "offline" and done.stats["summary_offline"] is True
    warning = done.warnings[0]
    assert warning["code"] == "SUMMARY_EXTRACTED_OFFLINE"
    assert "the model failed: batch_deadline: the batch's time budget" in warning["message"]
    assert "DIGESTD_DOC_TIMEOUT_SECONDS" in warning["message"]
    assert warning["message"].endswith("before the model was asked")
    assert endpoint.requests == []


async def test_a_batch_deadline_cuts_a_slow_model_short_of_its_per_source_timeout(
    db: asyncpg.Pool, database_url: str
) -> None:
    endpoint = FakeLLM(delayed(quoting_digest, 30.0))
    # A 1.5 s batch: its end comes long before the worker's own 9 s per-source timeout.
    batch = DigestConfig(policy=DigestPolicy.ALWAYS, timeout=1.5, max_concurrent=1)
    started = asyncio.get_running_loop().time()
    done = await _batch_job(db, database_url, endpoint, batch, wait=0.0)
    assert asyncio.get_running_loop().time() - started < 6.0
    assert done.status == "partial" and done.attempts == 1, done
    assert done.stats["summary_offline"] is True and "model_skipped" not in done.stats
    warning = done.warnings[0]
    assert warning["code"] == "SUMMARY_EXTRACTED_OFFLINE"
    assert "the model failed: batch_deadline: the batch's time budget" in warning["message"]
    assert warning["message"].endswith("while the model was writing")
    assert len(endpoint.requests) <= 1


PROGRESS = (
    """query($id: ID!) { job(id: $id) { phase progress { chunksDone chunksTotal fraction } } }"""
)


async def test_a_large_pdf_is_map_reduced_with_progress_and_a_failing_part_read_offline(
    db: asyncpg.Pool, settings: Settings
) -> None:
    """acl19irc.pdf with requests of at most 8,000 characters: its parts are mapped (the job's
    progress counts them), one of them fails at the endpoint and is summarized by the offline
    rules, the reduce merges them all; the job ends PARTIAL naming that part, and the stored
    digest is the model's, grounded in the paper."""
    poisoned: list[str] = []

    def respond(body: dict[str, Any]) -> Any:
        passages = dict(passages_of(body))
        if tool_of(body) == "emit_chunk_summary" and not poisoned:
            poisoned.extend(passages)  # the first part asked fails, each time it is asked
        if tool_of(body) == "emit_chunk_summary" and poisoned[0] in passages:
            return error(503, "overloaded")
        return map_reduce_model(body)

    fake = FakeLLM(respond)
    async with fake.serve() as base_url:
        llm_settings = settings.model_copy(
            update={
                "digest_extractor": "llm",
                "digest_llm_base_url": base_url,
                "digest_llm_max_retries": 0,
                "digestd_doc_llm_excerpt_chars": 8000,
            }
        )
        app = create_app(llm_settings, AppOptions(run_workers=1))
        async with running_server(app) as api, httpx.AsyncClient(base_url=api, timeout=60) as http:
            source = upload(shared_data("docs/pdf/acl19irc.pdf"), "application/pdf")
            document = (await gql(http, INGEST, {"input": source}))["ingestDocument"]
            job = await run_job(http, document["id"], "How was the dataset annotated?")
            progress = (await gql(http, PROGRESS, {"id": job["id"]}))["job"]
            digest = (await gql(http, DIGEST, {"id": job["documentDigestId"]}))["documentDigest"]

    maps = [body for body in fake.requests if tool_of(body) == "emit_chunk_summary"]
    assert len(maps) >= 5 and fake.tools_called().count("emit_digest") == 1
    assert job["status"] == "PARTIAL" and job["error"] is None, job
    assert job["stats"]["summaryOffline"] is False
    assert progress["progress"]["chunksTotal"] == len(maps) == progress["progress"]["chunksDone"]
    assert progress["progress"]["fraction"] == 1.0
    warning = next(w for w in job["warnings"] if w["code"] == "CHUNKS_EXTRACTED_OFFLINE")
    assert (
        f"1 of {len(maps)} chunk of the document summarized by the offline rules"
        in (warning["message"])
    )
    assert "overloaded" in warning["message"] or "503" in warning["message"]
    assert digest["summarizer"] == "llm" and digest["summary"] and digest["keyPoints"]
    await assert_grounded(db, digest)
