"""/metrics moves while digests run: a channel digest and a document digest (fresh, then from the
cache) through the real app, its in-process worker, the real `openai` client and a fake
OpenAI-compatible server on 127.0.0.1. Job and phase durations, chunk-cache lookups, LLM calls and
tokens by endpoint, the breaker's state, and the document metrics under their `digest_*` names."""

from __future__ import annotations

from typing import Any

import asyncpg
import httpx

from runner.llm.fake import FakeLLM, tool_of
from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.api import gql, poll_job, sample_messages
from tests.support.documents import INGEST, quoting_digest, run_job, upload
from tests.support.llm import scripted
from tests.support.metrics import samples
from tests.support.paths import shared_data
from tests.support.servers import running_server

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]

INGEST_MESSAGES = """mutation($c: ChannelInput!, $m: [MessageInput!]!) { ingestMessages(channel: $c, messages: $m) {
  ... on IngestResult { channel { id } } } }"""
TRIGGER = "mutation($id: ID!) { triggerDigest(channelId: $id) { ... on DigestJob { id } } }"


def value(found: Samples, name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


async def scrape(http: httpx.AsyncClient) -> Samples:
    return samples((await http.get("/metrics")).text)


async def test_metrics_move_during_channel_and_document_digests(
    db: asyncpg.Pool, settings: Settings
) -> None:
    chat = scripted()

    def respond(body: dict[str, Any]) -> Any:
        return quoting_digest(body) if tool_of(body) == "emit_document_digest" else chat(body)

    fake = FakeLLM(respond)
    async with fake.serve() as base_url:
        endpoint = base_url.removesuffix("/v1")
        llm = settings.model_copy(
            update={"digest_extractor": "llm", "digest_llm_base_url": base_url}
        )
        app = create_app(llm, AppOptions(run_workers=1))
        async with running_server(app) as api, httpx.AsyncClient(base_url=api, timeout=60) as http:
            before = await scrape(http)

            channel = {"name": "metrics-team", "server": "acme"}
            ingested = await gql(http, INGEST_MESSAGES, {"c": channel, "m": sample_messages()})
            job = (await gql(http, TRIGGER, {"id": ingested["ingestMessages"]["channel"]["id"]}))[
                "triggerDigest"
            ]
            assert (await poll_job(http, job["id"]))["status"] == "SUCCEEDED"

            source = upload(shared_data("docs/html/readability/wikipedia/source.html"), "text/html")
            document = (await gql(http, INGEST, {"input": source}))["ingestDocument"]
            for _ in range(2):  # fresh, then served from the digest cache
                assert (await run_job(http, document["id"], "Which products does Mozilla make?"))[
                    "status"
                ] == "SUCCEEDED"
            after = await scrape(http)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("digestd_job_duration_seconds_count", kind="channel", outcome="succeeded") == 1
    assert moved("digestd_job_duration_seconds_count", kind="document", outcome="succeeded") == 2
    for phase in ("map", "reduce", "store"):
        assert moved("digestd_job_phase_seconds_count", kind="channel", phase=phase) == 1, phase
    assert moved("digestd_chunk_cache_lookups_total", result="miss") >= 1

    chat_calls = sum(1 for body in fake.requests if tool_of(body) != "emit_document_digest")
    models = {body["model"] for body in fake.requests}
    calls = sum(
        moved("digestd_llm_calls_total", endpoint=endpoint, model=m, result="ok") for m in models
    )
    assert calls == len(fake.requests) == chat_calls + 1
    assert (
        sum(
            moved("digestd_llm_tokens_total", endpoint=endpoint, model=m, kind="prompt")
            for m in models
        )
        > 0
    )
    assert value(after, "digestd_llm_breaker_state", endpoint=endpoint) == 0

    assert moved("digest_sources_processed_total", outcome="completed") == 2
    assert moved("digest_cache_hits_total") == 1
    assert moved("digest_duration_seconds_count", policy="auto", cache_hit="false") == 1
    assert moved("digest_duration_seconds_count", policy="auto", cache_hit="true") == 1
    assert moved("digest_compression_ratio_count") == 1
    assert moved("digest_evidence_snippets_count") == 1


async def test_pdf_extraction_metrics_after_ingesting_real_pdfs(
    db: asyncpg.Pool, settings: Settings
) -> None:
    """A real PDF ingested through the API moves the extraction metrics by its own figures (its
    pages and characters, as the API reports them); an image-only PDF is a `no_text_layer`
    failure, timed under `outcome="error"`."""
    paper = shared_data("docs/pdf/acl19irc.pdf")
    scanned = shared_data("docs/pdf/tricky_image_only_no_text_layer.pdf")
    app = create_app(settings, AppOptions(run_workers=0))
    async with running_server(app) as api, httpx.AsyncClient(base_url=api, timeout=60) as http:
        before = await scrape(http)
        document = (await gql(http, INGEST, {"input": upload(paper, "application/pdf")}))[
            "ingestDocument"
        ]
        assert document["pageCount"] > 1 and document["chars"] > 10_000, document
        refused = (await gql(http, INGEST, {"input": upload(scanned, "application/pdf")}))[
            "ingestDocument"
        ]
        assert refused["reason"] == "no_text_layer", refused
        after = await scrape(http)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("pdf_extraction_pages_total") == document["pageCount"]
    assert moved("pdf_extraction_characters_total") == document["chars"]
    assert moved("pdf_extraction_duration_seconds_count", outcome="ok") == 1
    assert moved("pdf_extraction_duration_seconds_sum", outcome="ok") > 0
    assert moved("pdf_extraction_duration_seconds_count", outcome="error") == 1
    assert moved("pdf_extraction_failures_total", code="no_text_layer") == 1
    assert value(after, "pdf_extraction_failures_total", code="timeout") == value(
        before, "pdf_extraction_failures_total", code="timeout"
    )
