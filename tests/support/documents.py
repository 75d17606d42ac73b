"""Helpers for the document tests: the real fixtures under ../shared/data/docs and a tiny HTTP
server on 127.0.0.1 for fetch tests (the only address those tests ever contact)."""

from __future__ import annotations

import base64
import json
import re
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from xml.sax.saxutils import unescape

import asyncpg
import httpx
import jsonschema
import pytest

from db import jobs
from db.models import DigestJob
from runner.documents.canonical import CanonicalDocument
from runner.documents.fetch import Resolver
from runner.documents.ingest import ingest_text
from runner.documents.llm_summary import (
    DOCUMENT_DIGEST_TOOL,
)
from runner.documents.locators import resolve_locator
from runner.documents.policy import DigestConfig
from runner.llm.fake import Answer, FakeLLM, completion, error, tool_of
from runner.triggers import trigger_document_digest
from runner.worker import Worker
from tests.support.api import gql, poll_job
from tests.support.database import row_id
from tests.support.paths import DATA_DIR, REPO_ROOT

DOCS_DIR = DATA_DIR / "docs"
HTML_DIR = DOCS_DIR / "html" / "readability"
PDF_DIR = DOCS_DIR / "pdf"
PDF_PASSWORDS = {
    "tricky_encrypted_aes256_r6-user-password.pdf": "asdfzxcv",
    "tricky_encrypted_libreoffice-writer-password.pdf": "openpassword",
}


def html_pages() -> list[str]:
    return (
        sorted(p.parent.name for p in HTML_DIR.glob("*/source.html")) if HTML_DIR.is_dir() else []
    )


def pdf_files() -> list[str]:
    return sorted(p.name for p in PDF_DIR.glob("*.pdf")) if PDF_DIR.is_dir() else []


def docs_file(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is absent (real data lives in ../shared/data beside the repo)")
    return path


@dataclass
class Route:
    """What the server answers on one path."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: list[bytes] | None = None  # sent one by one with `delay` seconds between them
    delay: float = 0.0


@dataclass
class LocalServer:
    port: int
    routes: dict[str, Route]
    seen_hosts: list[str]

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


def _handler(routes: dict[str, Route], seen_hosts: list[str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen_hosts.append(self.headers.get("Host", ""))
            route = routes.get(self.path)
            if route is None:
                self.send_error(404)
                return
            self.send_response(route.status)
            for name, value in route.headers.items():
                self.send_header(name, value)
            if route.chunks is None:
                self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            try:
                if route.chunks is None:
                    self.wfile.write(route.body)
                    return
                for piece in route.chunks:
                    self.wfile.write(piece)
                    self.wfile.flush()
                    time.sleep(route.delay)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up, as the size and time limits tell it to

    return Handler


@contextmanager
def local_server(
    routes: dict[str, Route], tls: ssl.SSLContext | None = None
) -> Iterator[LocalServer]:
    seen_hosts: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(routes, seen_hosts))
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    thread = threading.Thread(target=lambda: server.serve_forever(poll_interval=0.02), daemon=True)
    thread.start()
    try:
        yield LocalServer(port=server.server_address[1], routes=routes, seen_hosts=seen_hosts)
    finally:
        server.shutdown()
        server.server_close()


def static_resolver(table: dict[str, list[str]]) -> Resolver:
    """A DNS stand-in: names map to fixed addresses, nothing touches the network."""

    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"unknown test host {host}")
        return table[host]

    return resolve


PAYLOAD_SCHEMA = REPO_ROOT / "runner" / "documents" / "digest_payload_v1.schema.json"


PDF_FILE = "docs/pdf/acl19irc.pdf"


INGEST = """mutation($input: DocumentInput!) { ingestDocument(input: $input) {
  ... on Document { id title contentType sourceTextHash chars pageCount warnings { code } }
  ... on InvalidInputError { message code reason } } }"""


TRIGGER = """mutation($id: ID!, $q: String!) { triggerDocumentDigest(documentId: $id, query: $q) {
  ... on DigestJob { id status kind documentId query }
  ... on NotFoundError { message }
  ... on InvalidInputError { message code reason } } }"""


JOB = """query($id: ID!) { job(id: $id) { id kind status error resultMessage documentId
  documentDigestId query warnings { code message } stats { cacheHit summarizerCalls
  summaryOffline originalChars digestChars compressionRatio evidenceSnippets } } }"""


DIGEST = """query($id: ID!) { documentDigest(id: $id) {
  id documentId query queryHash cacheKey summary keyPoints originalChars digestChars
  compressionRatio sourceTextHash version contentType payload summarizer evidenceMode archived
  fidelity { level originalTokens finalTokens }
  evidenceSnippets { text locator relevanceScore page charRange verified contextBefore contextAfter }
  document { id canonicalText } } }"""


def upload(path: Path, content_type: str | None = None) -> dict[str, Any]:
    encoded = base64.b64encode(path.read_bytes()).decode()
    return {"contentBase64": encoded, "contentType": content_type}


async def digest_for(
    http: httpx.AsyncClient, document_id: str, query: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Trigger, poll to the end, read: (finished job, digest)."""
    job = (await gql(http, TRIGGER, {"id": document_id, "q": query}))["triggerDocumentDigest"]
    assert job["kind"] == "document" and job["documentId"] == document_id, job
    await poll_job(http, job["id"])
    done = (await gql(http, JOB, {"id": job["id"]}))["job"]
    assert done["status"] == "SUCCEEDED", done
    digest = (await gql(http, DIGEST, {"id": done["documentDigestId"]}))["documentDigest"]
    return done, digest


async def assert_grounded(pool: asyncpg.Pool, digest: dict[str, Any]) -> None:
    """The payload is valid against the seed's schema and every locator slices the canonical
    text STORED in Postgres to exactly its snippet (page-relative for PDFs)."""
    jsonschema.Draft7Validator(json.loads(PAYLOAD_SCHEMA.read_text())).validate(digest["payload"])
    async with pool.acquire() as connection:
        row = await connection.fetchrow(
            "SELECT canonical_text, page_spans FROM documents WHERE id = $1",
            row_id(digest["documentId"]),
        )
    text: str = row["canonical_text"]
    spans = [tuple(span) for span in row["page_spans"]] if row["page_spans"] else None
    assert digest["document"]["canonicalText"] == text
    assert digest["evidenceSnippets"], "a digest of a long document quotes evidence"
    for snippet in digest["evidenceSnippets"]:
        start, end = resolve_locator(snippet["locator"], text, spans)
        assert text[start:end] == snippet["text"]
        assert snippet["charRange"] == [start, end] and snippet["verified"] is True
        if spans is not None:
            page_start, page_end = spans[snippet["page"] - 1]
            assert snippet["locator"].startswith(f"page:{snippet['page']}:")
            assert page_start <= start < end <= page_end  # within its page
        assert text[:start].endswith(snippet["contextBefore"])
        assert text[end:].startswith(snippet["contextAfter"])
    assert digest["sourceTextHash"] == digest["payload"]["source_text_hash"]


_EXCERPT = re.compile(r"<excerpt locator=\"([^\"]+)\">(.*?)</excerpt>", re.DOTALL)


def quoting_digest(body: dict[str, Any]) -> dict[str, Any]:
    """An answer built from what was sent: the summary and key points quote the excerpts."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    excerpts = [unescape(text) for _, text in _EXCERPT.findall(user)]
    return completion(
        tool="emit_document_digest",
        arguments={
            "summary": excerpts[0][:300],
            "key_points": [excerpt[:200] for excerpt in excerpts[1:4]],
        },
    )


_PASSAGE = re.compile(r'<passage id="(p\d+)" locator="[^"]*">(.*?)</passage>', re.S)
_SUMMARY_ELEMENT = re.compile(r"<summary [^>]*>(.*?)</summary>", re.S)


def passages_of(body: dict[str, Any]) -> list[tuple[str, str]]:
    """`(id, text)` of the passages a document map request shows, unescaped."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return [(passage, unescape(text)) for passage, text in _PASSAGE.findall(user)]


def _first_words(text: str, limit: int = 240) -> str:
    cut = text[:limit]
    return cut[: cut.rfind(" ")] if len(text) > limit and " " in cut else cut


def passage_summary(body: dict[str, Any]) -> dict[str, Any]:
    """A faithful map answer for a document part: a fact in the words of its longest passage,
    citing it."""
    passages = passages_of(body)
    passage, text = max(passages, key=lambda item: len(item[1]))
    return {
        "chunk_summary": f"{len(passages)} passages.",
        "signal_quality": {"level": "medium", "reason": "scripted"},
        "knowledge_items": [
            {
                "key": "K1",
                "kind": "fact",
                "title": _first_words(text, 80),
                "content": _first_words(text),
                "message_ids": [passage],
            }
        ],
    }


def passage_digest(body: dict[str, Any]) -> dict[str, Any]:
    """A faithful reduce answer: the parts' facts as cited overview sentences and highlights."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    summaries = [json.loads(unescape(raw)) for raw in _SUMMARY_ELEMENT.findall(user)]
    facts = [item for summary in summaries for item in summary.get("knowledge_items", [])]
    cited = [
        {"sentence": _first_words(item["content"], 380), "message_ids": item["message_ids"][:8]}
        for item in facts
        if item.get("content")
    ]
    return {
        "title": "Scripted document digest",
        "overview": cited[:4],
        "highlights": cited[4:9],
        "coverage": {"messages_total": 0, "messages_covered": 0},
        "signal_quality": {"level": "medium", "reason": "scripted"},
        "knowledge_items": facts[:60],
    }


def map_reduce_model(body: dict[str, Any]) -> Answer:
    """The document model of the map-reduce: `passage_summary` for a part, `passage_digest` for
    a merge, `quoting_digest` for a document read in one request."""
    tool = tool_of(body)
    if tool == "emit_chunk_summary":
        return completion(tool=tool, arguments=passage_summary(body))
    if tool == "emit_digest":
        return completion(tool=tool, arguments=passage_digest(body))
    return quoting_digest(body)


async def run_job(http: httpx.AsyncClient, document_id: str, query: str) -> dict[str, Any]:
    job = (await gql(http, TRIGGER, {"id": document_id, "q": query}))["triggerDocumentDigest"]
    await poll_job(http, job["id"], timeout=60)
    finished: dict[str, Any] = (await gql(http, JOB, {"id": job["id"]}))["job"]
    return finished


TOPICS = ["caching", "replication", "sharding", "monitoring"]


DOCUMENT_TEXT = "\n\n".join(
    f"Section {i} on {topic}. The {topic} design keeps {topic} decisions simple and explicit. "
    f"Teams that adopt {topic} early report fewer incidents, and {topic} reviews happen weekly. "
    f"Good {topic} needs clear ownership, documented limits and regular load tests."
    for i, topic in enumerate(TOPICS * 6)
)


def _document() -> CanonicalDocument:
    return ingest_text(DOCUMENT_TEXT, title="Systems handbook")


def document_endpoint(answers: list[Any], status: int = 200) -> FakeLLM:
    """The fake endpoint answering `emit_document_digest` calls with `answers` in order, or
    every request with `status` (an error) when it is not 200."""
    queue = list(answers)

    def respond(body: dict[str, Any]) -> Answer:
        if status != 200:
            return error(status, "down")
        arguments = queue.pop(0)
        return completion(
            tool=DOCUMENT_DIGEST_TOOL, arguments=arguments, prompt_tokens=10, completion_tokens=5
        )

    return FakeLLM(respond)


async def digest_stored_document(
    db: asyncpg.Pool, worker: Worker, document_id: int, query: str, config: DigestConfig
) -> DigestJob:
    """Queue a digest of a stored document for `query`, let `worker` run it, and return the
    finished job as stored (the cache and breaker tests digest the same document twice)."""
    async with db.acquire() as connection:
        job, created = await trigger_document_digest(
            connection, document_id, query, config=config, max_attempts=3
        )
    assert created
    assert await worker.run_once()
    async with db.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
    assert done is not None
    return done
