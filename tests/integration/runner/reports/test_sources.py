"""A report's sources through a real report job: a document quoted in several places is ONE
source with its spans listed under it, the Markdown ends with a `## Sources` list (which
sections cite each source) and footnotes naming the document by its file name with its URL, a
message by its author and time; the API reads the same back, and /metrics counts the report's
citations, sources, orphans and audit failures."""

from __future__ import annotations

import re

import asyncpg
import httpx

from db import jobs
from db import reports as report_queries
from db.documents import store_document
from db.models import Report as ReportRow
from runner.documents.ingest import ingest_text
from runner.documents.locators import resolve_locator
from runner.reports.report import Report
from runner.triggers import trigger_report
from schema.types.ids import REPORT as REPORT_NODE
from schema.types.ids import global_id
from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.database import add_channel, messages
from tests.support.digests import make_worker
from tests.support.metrics import samples
from tests.support.reports import assert_audited, stored_report
from tests.support.schema import gql
from tests.support.servers import running_server

QUESTION = "How are database migration rollbacks approved?"
URL = "https://docs.example.org/ops/Handbook.pdf"
HANDBOOK = (
    "Every database migration ships with a rollback plan that the on-call lead approves.\n\n"
    "A rollback of a database migration is approved in the incident channel before it starts.\n\n"
    "Approved rollbacks of a migration are recorded in the incident log with the approver.\n\n"
    "The database team reviews each migration rollback plan at the weekly operations review.\n\n"
    "The coffee machine on the third floor is cleaned every Monday morning."
)
OPS = [
    ("ann", "Morning all, the standup moves to ten today."),
    ("cid", "Rollbacks of the database migration need approval from the on-call lead."),
]
REPORT = """
query($id: ID!) {
  report(id: $id) {
    markdown
    audit { citations orphanSources auditFailures sources }
    sections { heading sentences { text citations { sourceId footnote span { quote locator } } } }
    sources { id kind title url documentTitle citedInSections citationCount author ts
              spans { quote locator charStart charEnd } quote locator }
  }
}"""


async def _report_row(db: asyncpg.Pool, database_url: str) -> tuple[ReportRow, int]:
    ops = await add_channel(db, "ops", messages(OPS))
    # No title of its own: it is named after its file, as an uploaded PDF without one is.
    document = ingest_text(HANDBOOK, source_url=URL, file_name="ops-handbook.pdf")
    async with db.acquire() as connection:
        stored, _ = await store_document(connection, document.as_record())
        job, _ = await trigger_report(
            connection, QUESTION, channel_ids=[ops], document_ids=[stored.id], max_attempts=3
        )
    assert await make_worker(db, database_url).run_once()
    async with db.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
        assert done is not None and done.status == "succeeded" and done.report_id is not None
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id])
    return row, stored.id


async def scrape(http: httpx.AsyncClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = await http.get("/metrics")
    assert response.status_code == 200
    return samples(response.text)


async def test_a_document_quoted_in_several_places_is_one_source_with_its_spans(
    db: asyncpg.Pool, database_url: str, settings: Settings
) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    async with running_server(app) as base_url, httpx.AsyncClient(base_url=base_url) as http:
        before = await scrape(http)
        row, document_id = await _report_row(db, database_url)
        after = await scrape(http)

    documents = [s for s in row.sources if s["kind"] == "document"]
    (handbook,) = documents  # one source, however many of its sentences are cited
    assert handbook["title"] == "ops-handbook.pdf" and handbook["url"] == URL
    spans = handbook["spans"]
    assert len(spans) >= 3
    assert len({span["locator"] for span in spans}) == len(spans)
    for span in spans:
        start, end = resolve_locator(span["locator"], HANDBOOK)
        assert HANDBOOK[start:end] == span["quote"]
    assert handbook["sections"][0] == "Answer" and "In ops-handbook.pdf" in handbook["sections"]
    # Every sentence citing the handbook names the span it rests on, each span once.
    cited_spans = [
        citation["span"]
        for section in row.sections
        for sentence in section["sentences"]
        for citation in sentence["citations"]
        if citation["source_id"] == handbook["id"]
    ]
    assert sorted(cited_spans) == list(range(len(spans))) == sorted(set(cited_spans))
    (message,) = [s for s in row.sources if s["kind"] == "message"]
    assert message["sections"] and message["author"] == "cid"

    markdown = row.markdown
    number = handbook["id"][1:]
    (footnote,) = re.findall(rf"^\[\^{number}\]: (.*)$", markdown, re.M)
    assert footnote.startswith(f"ops-handbook.pdf, <{URL}>, ")
    assert footnote.endswith(f"(document {document_id})")
    for span in spans:
        assert f'{span["locator"]}, "{span["quote"]}"' in footnote
    (message_note,) = re.findall(rf"^\[\^{message['id'][1:]}\]: (.*)$", markdown, re.M)
    assert message_note.startswith("#ops, cid, 2024-05-01 09:01 UTC, ")
    sources_block = markdown.split("\n\n## Sources\n\n", 1)[1].split("\n\n", 1)[0]
    lines = sources_block.splitlines()
    assert len(lines) == len(row.sources) == 2
    cited_in = ", ".join(handbook["sections"])
    assert (
        f"- {handbook['id']} ops-handbook.pdf <{URL}> (document {document_id}): "
        f"{len(spans)} passages; cited in: {cited_in}; "
        f"relevance {handbook['relevance_score']:.2f}, "
        f"credibility {handbook['credibility_score']:.2f}"
    ) in lines, lines
    assert markdown.count("## Sources") == 1
    assert_audited(await _rebuilt(db, row), markdown)

    audit = row.audit
    assert audit["citations"] == len(cited_spans) + message["citation_count"]
    assert audit["sources"] == 2 and audit["orphan_sources"] == 0

    def moved(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert moved("digestd_report_citations_total") == audit["citations"]
    assert moved("digestd_report_sources_total") == 2
    assert moved("digestd_report_orphan_sources_total") == 0
    assert ("digestd_report_orphan_sources_total", ()) in after
    assert ("digestd_report_audit_failures_total", (("code", "low_support"),)) in after
    assert moved("digestd_report_sources_seconds_count") == 1

    # The API reads the same: one source, its spans, where it is cited; each citation its span.
    data = (await gql(db, REPORT, id=global_id(REPORT_NODE, row.id)))["report"]
    assert data["markdown"] == markdown
    assert data["audit"] == {
        "citations": audit["citations"],
        "orphanSources": 0,
        "auditFailures": 0,
        "sources": 2,
    }
    (api_handbook,) = [s for s in data["sources"] if s["kind"] == "document"]
    assert api_handbook["title"] == api_handbook["documentTitle"] == "ops-handbook.pdf"
    assert api_handbook["url"] == URL and api_handbook["citedInSections"] == handbook["sections"]
    assert api_handbook["citationCount"] == len(cited_spans)
    assert [s["locator"] for s in api_handbook["spans"]] == [s["locator"] for s in spans]
    assert api_handbook["quote"] == spans[0]["quote"]  # deprecated: the first span
    (api_message,) = [s for s in data["sources"] if s["kind"] == "message"]
    assert api_message["title"] == "#ops" and api_message["author"] == "cid"
    assert api_message["spans"][0]["charStart"] == 0 and api_message["url"] is None
    for section in data["sections"]:  # the offline writer quotes: a sentence is its span
        for sentence in section["sentences"]:
            for citation in sentence["citations"]:
                assert citation["span"]["quote"] == sentence["text"]


async def _rebuilt(db: asyncpg.Pool, row: ReportRow) -> Report:
    async with db.acquire() as connection:
        return await stored_report(connection, row)
