"""Seeding for the console's browser tests: a channel (the sample plus messages with emoji before
a verbatim command), its offline digest made by a real worker, and a document digest."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
from playwright.async_api import Locator, Page, expect

from server.app import AppOptions, create_app
from server.runtime import Runtime
from server.settings import Settings
from tests.support.api import gql, sample_messages
from tests.support.servers import running_server

# The command is a verbatim knowledge item; astral emoji before it make code-point offsets
# differ from UTF-16 ones (each emoji is one Python character, two JavaScript units).
EMOJI_MESSAGE_ID = "emoji-1"
EMOJI_MESSAGES = [
    {
        "id": EMOJI_MESSAGE_ID,
        "author": "Zoë Dubois",
        "ts": "2025-03-10T11:30:00Z",
        "text": "🚀🎉 Fixed 👍 To restart the ingest worker run "
        "`kubectl rollout restart deployment/ingest-worker -n platform` and watch the logs.",
    },
    # Chat text is untrusted: markup in it must show as text.
    {
        "id": "emoji-2",
        "author": "Ana Souza",
        "ts": "2025-03-10T11:31:00Z",
        "text": "thanks 🙏 that worked <img src=x onerror=alert(1)><b>really</b>",
    },
]
DOCUMENT_TEXT = (
    "Release notes 🚀 for the ingest service.\n\n"
    "The nightly ingest job now retries the batch fetch three times with exponential backoff. "
    "Timeouts of the upstream API no longer abort the whole run.\n\n"
    "The Grafana panel shows the p99 latency of the upstream API; alerts fire above 30 seconds.\n\n"
    "Operators restart the worker with kubectl rollout restart when the queue is stuck. 🎉"
)

# The digest page's sections, in order, each a heading in its table of contents (a multi-day
# digest adds its periods after the overview).
DIGEST_SECTIONS = [
    "Overview",
    "Topics",
    "Decisions",
    "Action items",
    "Open questions",
    "Links",
    "Artifacts",
    "Knowledge items",
    "Left out",
    "Rejected by validation",
]

INGEST = """mutation($c: ChannelInput!, $m: [MessageInput!]!) { ingestMessages(channel: $c, messages: $m) {
  ... on IngestResult { accepted channel { id messageCount } } } }"""
TRIGGER = (
    """mutation($id: ID!) { triggerDigest(channelId: $id) { ... on DigestJob { id status } } }"""
)
INGEST_DOCUMENT = """mutation($input: DocumentInput!) { ingestDocument(input: $input) {
  ... on Document { id } ... on InvalidInputError { message } } }"""
TRIGGER_DOCUMENT = """mutation($id: ID!, $q: String!) { triggerDocumentDigest(documentId: $id, query: $q) {
  ... on DigestJob { id } } }"""


@contextlib.asynccontextmanager
async def worker_runtime(settings: Settings) -> AsyncIterator[Runtime]:
    runtime = Runtime(settings)
    await runtime.open()
    try:
        yield runtime
    finally:
        await runtime.close()


async def run_queued_jobs(settings: Settings) -> None:
    """A real worker (the one `digestd worker` runs) takes every queued job to its end."""
    async with worker_runtime(settings) as runtime:
        worker = runtime.new_worker()
        while await worker.run_once():
            pass


async def seed_channel(http: httpx.AsyncClient, token: str | None) -> tuple[str, int]:
    """Ingests the channel; returns (channel id, message count)."""
    messages = sample_messages() + EMOJI_MESSAGES
    result = await gql(
        http, INGEST, {"c": {"name": "team-platform", "server": "acme"}, "m": messages}, token
    )
    ingested = result["ingestMessages"]
    assert ingested["accepted"] == len(messages), ingested
    return ingested["channel"]["id"], ingested["channel"]["messageCount"]


async def trigger_digest(http: httpx.AsyncClient, channel_id: str, token: str | None) -> str:
    job = (await gql(http, TRIGGER, {"id": channel_id}, token))["triggerDigest"]
    assert job["status"] == "QUEUED", job
    return str(job["id"])


@contextlib.asynccontextmanager
async def console_app(settings: Settings) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    """The app on a loopback port, no worker of its own (run_queued_jobs does the work): its
    base URL and a client of its API."""
    app = create_app(settings, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as http,
    ):
        yield base_url, http


async def digested_sample(http: httpx.AsyncClient, settings: Settings) -> tuple[str, str]:
    """The sample channel ingested and digested by a real worker: (channel id, digest id)."""
    channel_id, _ = await seed_channel(http, None)
    job_id = await trigger_digest(http, channel_id, None)
    await run_queued_jobs(settings)
    job = (await gql(http, "query($id: ID!) { job(id: $id) { digestId } }", {"id": job_id}))["job"]
    return channel_id, str(job["digestId"])


async def seed_document(http: httpx.AsyncClient, settings: Settings, query: str) -> str:
    document = await gql(
        http, INGEST_DOCUMENT, {"input": {"text": DOCUMENT_TEXT, "title": "Ingest release notes"}}
    )
    document_id = str(document["ingestDocument"]["id"])
    await gql(http, TRIGGER_DOCUMENT, {"id": document_id, "q": query})
    await run_queued_jobs(settings)
    return document_id


async def messages_by_id(
    http: httpx.AsyncClient, channel_id: str, token: str | None
) -> dict[str, dict[str, Any]]:
    query = """query($c: ID!, $a: String) { messages(filter: {channelId: $c}, first: 100, after: $a) {
      nodes { messageId normalizedText revision } pageInfo { hasNextPage endCursor } } }"""
    found: dict[str, dict[str, Any]] = {}
    after = None
    while True:
        page = (await gql(http, query, {"c": channel_id, "a": after}, token))["messages"]
        found.update({node["messageId"]: node for node in page["nodes"]})
        if not page["pageInfo"]["hasNextPage"]:
            return found
        after = page["pageInfo"]["endCursor"]


async def tab_to(page: Page, target: Locator, presses: int = 10) -> None:
    """Presses Tab until `target` has focus (at most `presses` times): the keyboard path to it."""
    for _ in range(presses):
        if await target.evaluate("t => t === document.activeElement"):
            break
        await page.keyboard.press("Tab")
    await expect(target).to_be_focused()


QUESTION = "How do operators restart the ingest worker when the queue is stuck?"

TRIGGER_REPORT = """mutation($q: String!, $sources: ReportSources!) { triggerReport(question: $q, sources: $sources) {
  __typename ... on DigestJob { id } } }"""

REPORT_JOB = """query($id: ID!) { job(id: $id) { status reportId report { id title
  audit { proposed kept dropped reAsked coverage sources }
  sections { heading sentences { text citations { sourceId footnote } } }
  sources { id footnote kind quote messageId externalId revision revisionText charStart charEnd documentId locator } } } }"""


async def make_report(http: httpx.AsyncClient, settings: Settings) -> dict[str, Any]:
    channel_id, _ = await seed_channel(http, None)
    document = await gql(
        http, INGEST_DOCUMENT, {"input": {"text": DOCUMENT_TEXT, "title": "Ingest release notes"}}
    )
    sources = {"channelIds": [channel_id], "documentIds": [document["ingestDocument"]["id"]]}
    job = (await gql(http, TRIGGER_REPORT, {"q": QUESTION, "sources": sources}))["triggerReport"]
    assert job["__typename"] == "DigestJob", job
    await run_queued_jobs(settings)
    done = (await gql(http, REPORT_JOB, {"id": job["id"]}))["job"]
    assert done["status"] == "SUCCEEDED" and done["report"], done
    return {"job_id": job["id"], "channel_id": channel_id, **done}
