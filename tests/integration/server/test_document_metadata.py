"""What documents say about themselves, through the service: a real PDF's /Author and
/CreationDate and real web pages' author, site name and date (../shared/data) are read at ingest
and shown as `Document.author`, `publisher` and `publishedAt`; a PDF whose metadata is hostile
(a Markdown heading, HTML, NUL bytes, a megabyte) is stored on one capped line, and a report
citing it renders it as inert text in its `## Sources` line and footnote."""

from __future__ import annotations

import io
import re
from typing import Any

import asyncpg
import httpx
from pypdf import PdfReader, PdfWriter

from db import jobs
from db import reports as report_queries
from db.documents import store_document
from runner.documents.ingest import ingest_bytes
from runner.documents.metadata import MAX_METADATA_CHARS
from runner.triggers import trigger_report
from schema.types.ids import DOCUMENT, global_id
from tests.support.api import gql
from tests.support.digests import make_worker
from tests.support.documents import HTML_DIR, PDF_DIR, docs_file, upload
from tests.support.schema import gql as gql_pool

INGEST = """mutation($input: DocumentInput!) { ingestDocument(input: $input) {
  ... on Document { id title author publisher publishedAt nearDuplicateOf { id } }
  ... on InvalidInputError { message } } }"""
DOCUMENT_QUERY = """query($id: ID!) { document(id: $id) { title author publisher publishedAt } }"""
MEGABYTE = "A" * 1_000_000
HOSTILE_TITLE = f"# Owned\x00 <img src=x onerror=alert(1)> [click](javascript:alert(1)) {MEGABYTE}"
HOSTILE_AUTHOR = (
    f"\n## Eve\x00 <script>alert(1)</script> *bold* [x](http://evil.example) {MEGABYTE}"
)


async def _ingest(http: httpx.AsyncClient, source: dict[str, Any]) -> dict[str, Any]:
    document: dict[str, Any] = (await gql(http, INGEST, {"input": source}))["ingestDocument"]
    assert "id" in document, document
    return document


async def test_pdf_and_web_page_metadata_are_read_at_ingest_and_shown(
    client: httpx.AsyncClient,
) -> None:
    pdf = await _ingest(
        client, upload(docs_file(PDF_DIR / "tricky_scanned_ocr_Seige_of_Vicksburg.pdf"))
    )
    # /Author (DSI) and /CreationDate (D:20100802090958-05'00'); a PDF names no publisher.
    assert (pdf["author"], pdf["publisher"], pdf["publishedAt"]) == ("DSI", None, "2010-08-02")
    rfc = await _ingest(client, upload(docs_file(HTML_DIR / "ietf-1" / "source.html"), "text/html"))
    assert "Kooman" in rfc["author"] and rfc["publishedAt"] == "2014-12-15"
    wiki = await _ingest(
        client, upload(docs_file(HTML_DIR / "wikipedia" / "source.html"), "text/html")
    )
    assert (wiki["author"], wiki["publisher"], wiki["publishedAt"]) == (
        None,
        "en.wikipedia.org",
        "1998-02-28",
    )
    # A PDF that states no author (acl19irc.pdf's /Author is empty) has none, but its date.
    paper = await _ingest(client, upload(docs_file(PDF_DIR / "acl19irc.pdf")))
    assert (paper["author"], paper["publishedAt"]) == (None, "2019-06-03")
    assert all(d["nearDuplicateOf"] is None for d in (pdf, rfc, wiki, paper))
    read = await gql(client, DOCUMENT_QUERY, {"id": pdf["id"]})
    assert read["document"]["author"] == "DSI"


def _hostile_pdf() -> bytes:
    writer = PdfWriter(clone_from=PdfReader(docs_file(PDF_DIR / "crazyones.pdf")))
    writer.add_metadata(
        {"/Title": HOSTILE_TITLE, "/Author": HOSTILE_AUTHOR, "/CreationDate": "D:99991399"}
    )
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


# A character that would start a tag, an autolink or a link, not escaped by a backslash.
UNESCAPED_MARKUP = re.compile(r"(?<!\\)[<>\[\]]")


def _inert(text: str) -> None:
    """One line whose every `<`, `>`, `[` and `]` is escaped: no HTML, no link, no footnote."""
    assert "\x00" not in text and "\n" not in text
    assert UNESCAPED_MARKUP.search(text) is None, UNESCAPED_MARKUP.search(text)
    assert r"\<script\>" in text or r"\<img" in text


async def test_hostile_metadata_is_stored_capped_and_rendered_inert(
    db: asyncpg.Pool, database_url: str
) -> None:
    data = _hostile_pdf()
    assert len(data) > 2_000_000  # both megabytes reach the ingest
    document = ingest_bytes(data, "application/pdf")
    async with db.acquire() as connection:
        stored, _ = await store_document(connection, document.as_record())
        job, _ = await trigger_report(
            connection,
            "Who are the crazy ones that see things differently?",
            channel_ids=[],
            document_ids=[stored.id],
            max_attempts=3,
        )
    shown = (await gql_pool(db, DOCUMENT_QUERY, id=global_id(DOCUMENT, stored.id)))["document"]
    for value in (shown["title"], shown["author"]):
        assert 0 < len(value) <= MAX_METADATA_CHARS and "\x00" not in value and "\n" not in value
    assert shown["author"].startswith("## Eve ") and shown["publishedAt"] is None

    assert await make_worker(db, database_url).run_once()
    async with db.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
        assert done is not None and done.status == "succeeded" and done.report_id is not None
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id])
    markdown = row.markdown
    (source_line,) = [line for line in markdown.splitlines() if line.startswith("- S1 ")]
    (footnote,) = re.findall(r"^\[\^1\]: (.*)$", markdown, re.M)
    for line in (source_line, footnote):
        _inert(line)
        assert r"\# Owned" in line and r"\## Eve" in line and " — " in line
        assert len(line) < 2_000
    # Only the report's own headings start a line with `#`.
    headings = [line for line in markdown.splitlines() if line.startswith("#")]
    assert all(not h.startswith(("# Owned", "## Eve")) for h in headings), headings
