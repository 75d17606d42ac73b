"""Documents through the service as a user drives it: a live HTTP server with an in-process
worker and a real Postgres. Ingest a real HTML page and a real PDF, trigger digests, poll, read
them, and check every locator against the stored canonical text; the same query again is served
from the Postgres cache, a different query is a miss; bad PDFs and hostile URLs are refused with
a clear typed error."""

from __future__ import annotations

import base64
import logging
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.api import gql
from tests.support.database import row_id
from tests.support.documents import (
    INGEST,
    PDF_FILE,
    TRIGGER,
    assert_grounded,
    digest_for,
    upload,
)
from tests.support.paths import shared_data
from tests.support.servers import running_server

HTML_PAGE = "docs/html/readability/wikipedia/source.html"


async def ingest(http: httpx.AsyncClient, source: dict[str, Any]) -> dict[str, Any]:
    document: dict[str, Any] = (await gql(http, INGEST, {"input": source}))["ingestDocument"]
    return document


async def digest_rows(pool: asyncpg.Pool) -> int:
    async with pool.acquire() as connection:
        return int(await connection.fetchval("SELECT count(*) FROM document_digests"))


async def test_html_and_pdf_digest_over_http_with_postgres_cache(
    client: httpx.AsyncClient, db: asyncpg.Pool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="runner")
    caplog.set_level(logging.DEBUG, logger="schema")
    html = await ingest(client, upload(shared_data(HTML_PAGE), "text/html; charset=utf-8"))
    assert html["contentType"] == "text/html" and html["chars"] > 10_000, html
    assert html["sourceTextHash"].startswith("sha256:") and html["pageCount"] is None
    pdf = await ingest(client, upload(shared_data(PDF_FILE)) | {"title": "IRC disentanglement"})
    assert pdf["contentType"] == "application/pdf" and pdf["pageCount"] == 11, pdf
    assert pdf["title"] == "IRC disentanglement"

    query = "Which browser engines and platforms does Mozilla develop?"
    first_job, first = await digest_for(client, html["id"], query)
    assert first_job["stats"]["cacheHit"] is False and first_job["stats"]["summarizerCalls"] == 1
    assert first_job["query"] == query
    assert first["summary"] and first["keyPoints"], first
    assert first["archived"] is False  # no DIGESTD_ARCHIVE_DIR in these settings
    assert first["fidelity"]["level"] == "digest"
    assert first["fidelity"]["finalTokens"] < first["fidelity"]["originalTokens"]
    assert first["compressionRatio"] < 0.5 and first["digestChars"] < first["originalChars"] / 2
    await assert_grounded(db, first)
    rows_after_first = await digest_rows(db)

    # The same query again: a new job, served from the table, no summarizer work, no new row.
    again_job, again = await digest_for(client, html["id"], query)
    assert again_job["id"] != first_job["id"]
    assert again_job["stats"]["cacheHit"] is True and again_job["stats"]["summarizerCalls"] == 0
    assert again_job["resultMessage"] == "served from the digest cache"
    assert again["id"] == first["id"] and await digest_rows(db) == rows_after_first

    # A different query is a miss with its own evidence.
    other_job, other = await digest_for(client, html["id"], "history of the Firefox web browser")
    assert other_job["stats"]["cacheHit"] is False and other["id"] != first["id"]
    assert other["cacheKey"] != first["cacheKey"] and other["queryHash"] != first["queryHash"]
    assert [s["locator"] for s in other["evidenceSnippets"]] != [
        s["locator"] for s in first["evidenceSnippets"]
    ]
    await assert_grounded(db, other)

    _, pdf_digest = await digest_for(client, pdf["id"], "conversation disentanglement dataset")
    await assert_grounded(db, pdf_digest)
    assert all(s["locator"].startswith("page:") for s in pdf_digest["evidenceSnippets"])

    # The document shows its latest digests, newest first; the list pages with a cursor.
    shown = await gql(
        client,
        "query($id: ID!) { document(id: $id) { id latestDigests(first: 5) { id query } } }",
        {"id": html["id"]},
    )
    assert [d["id"] for d in shown["document"]["latestDigests"]] == [other["id"], first["id"]]
    page = "query($after: String) { documents(first: 1, after: $after) { nodes { id } pageInfo { hasNextPage endCursor } } }"
    one = (await gql(client, page))["documents"]
    two = (await gql(client, page, {"after": one["pageInfo"]["endCursor"]}))["documents"]
    assert [n["id"] for n in one["nodes"] + two["nodes"]] == [pdf["id"], html["id"]]
    assert one["pageInfo"]["hasNextPage"] and not two["pageInfo"]["hasNextPage"]
    pdfs = await gql(
        client, '{ documents(filter: {contentType: "application/pdf"}) { nodes { id } } }'
    )
    assert [n["id"] for n in pdfs["documents"]["nodes"]] == [pdf["id"]]

    jobs = await gql(
        client,
        "query($id: ID!) { digestJobs(filter: {documentId: $id}) { nodes { id query } } }",
        {"id": pdf["id"]},
    )
    assert [job["query"] for job in jobs["digestJobs"]["nodes"]] == [
        "conversation disentanglement dataset"
    ]

    # Re-ingesting the same content returns the stored document.
    assert (await ingest(client, upload(shared_data(PDF_FILE))))["id"] == pdf["id"]
    await assert_no_private_content(db)
    # Logs carry ids, sizes and hashes, never document text.
    assert "digest.completed" in caplog.text and "document.ingested" in caplog.text
    for digest in (first, other, pdf_digest):
        for snippet in digest["evidenceSnippets"]:
            assert snippet["text"][:60] not in caplog.text


async def assert_no_private_content(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as connection:
        for table in ("documents", "document_digests", "digest_jobs"):
            dumped = await connection.fetchval(
                f"SELECT coalesce(json_agg(t)::text, '') FROM {table} t"
            )
            assert "_raw_content" not in dumped and '"_digest' not in dumped


async def test_bad_input_gets_a_clear_typed_error(client: httpx.AsyncClient) -> None:
    encrypted = await ingest(
        client, upload(shared_data("docs/pdf/tricky_encrypted_libreoffice-writer-password.pdf"))
    )
    assert (
        encrypted["code"] == "BAD_USER_INPUT"
        and encrypted["reason"] == "encrypted"
        and "password" in encrypted["message"].lower()
    )
    image_only = await ingest(
        client, upload(shared_data("docs/pdf/tricky_image_only_no_text_layer.pdf"))
    )
    assert (
        image_only["code"] == "BAD_USER_INPUT"
        and image_only["reason"] == "no_text_layer"
        and image_only["message"]
    )

    hostile = {
        "http://127.0.0.1/": "blocked_address",
        "http://169.254.169.254/latest/meta-data/": "blocked_address",
        "http://[::1]:8000/graphql": "blocked_address",
        "http://localhost/": "blocked_address",
        "file:///etc/passwd": "bad_scheme",
    }
    for url, reason in hostile.items():
        refused = await ingest(client, {"url": url})
        assert (refused["code"], refused["reason"]) == ("BAD_USER_INPUT", reason), (url, refused)
        assert refused["message"]
    metadata = await ingest(client, {"url": "http://169.254.169.254/"})
    assert "metadata" in metadata["message"]

    both = await ingest(client, {"url": "http://example.com/", "text": "x"})
    assert both["code"] == "BAD_USER_INPUT" and "exactly one" in both["message"]
    not_base64 = await ingest(client, {"contentBase64": "%%%"})
    assert not_base64["code"] == "BAD_USER_INPUT"

    short = await ingest(client, {"text": "A short note about nothing much at all."})
    refused = (await gql(client, TRIGGER, {"id": short["id"], "q": "notes"}))[
        "triggerDocumentDigest"
    ]
    assert (
        refused["code"] == "BAD_USER_INPUT"
        and refused["reason"] == "not_eligible:too_small"
        and "DIGESTD_DOC_MIN_CHARS" in refused["message"]
        and refused["message"].startswith("the document is ")  # no row id a client never saw
    )
    missing = (await gql(client, TRIGGER, {"id": "999999", "q": "x"}))["triggerDocumentDigest"]
    assert "no document" in missing["message"]
    response = await client.post("/graphql", json={"query": '{ document(id: "abc") { id } }'})
    assert "ids are numeric" in response.json()["errors"][0]["message"]


async def test_a_reader_cannot_ingest_or_trigger(db: asyncpg.Pool, settings: Settings) -> None:
    from pydantic import SecretStr

    guarded = settings.model_copy(
        update={"digestd_api_tokens": SecretStr("reader:reader-token-1,writer:writer-token-1")}
    )
    app = create_app(guarded, AppOptions(run_workers=0))
    async with running_server(app) as base_url, httpx.AsyncClient(base_url=base_url) as http:
        body = {"query": INGEST, "variables": {"input": {"text": "x" * 20}}}
        denied = await http.post(
            "/graphql", json=body, headers={"Authorization": "Bearer reader-token-1"}
        )
        assert denied.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
        allowed = await gql(http, INGEST, {"input": {"text": "y" * 20}}, token="writer-token-1")
        assert allowed["ingestDocument"]["id"]


async def test_a_document_naming_nothing_is_titled_after_its_file(
    client: httpx.AsyncClient,
) -> None:
    text = f"Notes {uuid.uuid4().hex}: the cache keeps an answer for an hour."
    encoded = base64.b64encode(text.encode()).decode()
    named = await ingest(
        client, {"contentBase64": encoded, "contentType": "text/plain", "fileName": "notes.txt"}
    )
    assert named["title"] == "notes.txt", named
    given = await ingest(client, {"text": text + " Again.", "title": "Cache", "fileName": "x.txt"})
    assert given["title"] == "Cache"
    refused = await ingest(client, {"text": text, "fileName": "two\nlines.txt"})
    assert refused["code"] == "BAD_USER_INPUT" and "fileName" in refused["message"]


async def test_url_ingest_when_private_hosts_are_allowed(
    db: asyncpg.Pool, settings: Settings
) -> None:
    """A trusted deployment may fetch from its own network; metadata stays refused, also behind
    a redirect, and the stored document records the URL it came from."""
    from tests.support.documents import Route, local_server

    page = shared_data("docs/html/readability/lwn-1/source.html").read_bytes()
    routes = {
        "/article": Route(headers={"Content-Type": "text/html; charset=utf-8"}, body=page),
        "/sneaky": Route(status=302, headers={"Location": "http://169.254.169.254/latest/"}),
        "/files/cache%20notes.txt": Route(
            headers={"Content-Type": "text/plain"},
            body=f"Notes {uuid.uuid4().hex} on the cache and its limits.".encode(),
        ),
    }
    trusted = settings.model_copy(update={"digestd_fetch_allow_private": True})
    app = create_app(trusted, AppOptions(run_workers=0))
    with local_server(routes) as origin:
        async with running_server(app) as base_url, httpx.AsyncClient(base_url=base_url) as http:
            fetched = await ingest(http, {"url": origin.url("/article")})
            assert fetched["contentType"] == "text/html" and fetched["chars"] > 10_000, fetched
            shown = await gql(
                http,
                "query($id: ID!) { document(id: $id) { sourceUrl title } }",
                {"id": fetched["id"]},
            )
            assert shown["document"]["sourceUrl"] == origin.url("/article")
            # A document naming nothing itself is titled after the last segment of its URL.
            notes = await ingest(http, {"url": origin.url("/files/cache%20notes.txt")})
            assert notes["title"] == "cache notes.txt", notes
            refused = await ingest(http, {"url": origin.url("/sneaky")})
            assert (
                refused["code"] == "BAD_USER_INPUT"
                and refused["reason"] == "blocked_address"
                and "metadata" in refused["message"]
            )


async def test_opt_in_archive_meets_the_verification_contract(
    db: asyncpg.Pool, settings: Settings, tmp_path: Path
) -> None:
    from runner.documents.archive import archive_path, verify_archive
    from runner.documents.payload import DigestPayload

    archive = tmp_path / "archive"
    archived = settings.model_copy(update={"digestd_archive_dir": archive})
    app = create_app(archived, AppOptions(run_workers=1))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as http,
    ):
        pdf = await ingest(http, upload(shared_data("docs/pdf/pdflatex-4-pages.pdf")))
        _, digest = await digest_for(http, pdf["id"], "page layout of the document")
    path = archive_path(archive, f"doc-{row_id(pdf['id'])}", pdf["sourceTextHash"])
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    assert digest["archived"] is True
    payload = DigestPayload.from_dict(digest["payload"])
    verify_archive(
        archive, f"doc-{row_id(pdf['id'])}", payload
    )  # sha256 of the file + every locator
    assert path.read_text(encoding="utf-8") == digest["document"]["canonicalText"]
