"""Near-duplicate documents in a real report job: a real web page (LWN's weekly edition, from
../shared/data) and the same article saved as plain text with an editor's note are stored as two
documents, the second `nearDuplicateOf` the first, and a report citing both lists them as ONE
source whose spans each point into their own document's text (the citation audit passes); a
distinct page in the same report stays a source of its own."""

from __future__ import annotations

import re

import asyncpg

from db import jobs
from db import reports as report_queries
from db.documents import document_by_id, store_document
from runner.documents.ingest import ingest_bytes, ingest_text
from runner.documents.locators import resolve_locator
from runner.triggers import trigger_report
from schema.types.ids import DOCUMENT, global_id
from tests.support.digests import make_worker
from tests.support.documents import HTML_DIR, docs_file
from tests.support.reports import assert_audited, stored_report
from tests.support.schema import gql

QUESTION = "Who owns the rights to the Arduino trademark?"
NOTE = (
    "Editor's note: the rights to the Arduino trademark were the subject of a court case "
    "between Arduino LLC and Arduino SRL."
)
DUPLICATES = """query($a: ID!, $b: ID!, $c: ID!) {
  a: document(id: $a) { id nearDuplicateOf { id } }
  b: document(id: $b) { id nearDuplicateOf { id title } }
  c: document(id: $c) { id nearDuplicateOf { id } } }"""


async def test_a_page_and_its_text_copy_are_one_source_and_a_distinct_page_is_not(
    db: asyncpg.Pool, database_url: str
) -> None:
    page = docs_file(HTML_DIR / "lwn-1" / "source.html").read_bytes()
    other = docs_file(HTML_DIR / "wikipedia" / "source.html").read_bytes()
    html = ingest_bytes(page, "text/html", source_url="https://lwn.net/Articles/637755/")
    # The article as someone saved it: its text, re-wrapped, with a note added at the end.
    copy = ingest_text(html.canonical_text + "\n\n" + NOTE, file_name="arduino-trademark.txt")
    distinct = ingest_bytes(other, "text/html")
    async with db.acquire() as connection:
        first, _ = await store_document(connection, html.as_record())
        second, _ = await store_document(connection, copy.as_record())
        third, _ = await store_document(connection, distinct.as_record())
        job, _ = await trigger_report(
            connection,
            QUESTION,
            channel_ids=[],
            document_ids=[first.id, second.id, third.id],
            max_attempts=3,
        )
    assert (second.near_duplicate_of, first.near_duplicate_of, third.near_duplicate_of) == (
        first.id,
        None,
        None,
    )
    shown = await gql(
        db,
        DUPLICATES,
        a=global_id(DOCUMENT, first.id),
        b=global_id(DOCUMENT, second.id),
        c=global_id(DOCUMENT, third.id),
    )
    assert shown["a"]["nearDuplicateOf"] is None and shown["c"]["nearDuplicateOf"] is None
    assert shown["b"]["nearDuplicateOf"]["id"] == global_id(DOCUMENT, first.id)

    assert await make_worker(db, database_url).run_once()
    async with db.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
        assert done is not None and done.status == "succeeded" and done.report_id is not None
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id])
        report = await stored_report(connection, row)
        texts = {
            str(d.id): d.canonical_text
            for d in [await document_by_id(connection, i) for i in (first.id, second.id)]
            if d is not None
        }

    sources = [s for s in row.sources if s["kind"] == "document"]
    cited = {span["document_id"] for s in sources for span in s["spans"]}
    assert {str(first.id), str(second.id)} <= cited, sources
    (merged,) = [s for s in sources if {span["document_id"] for span in s["spans"]} & set(texts)]
    assert {span["document_id"] for span in merged["spans"]} == set(texts)
    for span in merged["spans"]:  # each span still slices its own document's text
        start, end = resolve_locator(span["locator"], texts[span["document_id"]])
        assert texts[span["document_id"]][start:end] == span["quote"]
    assert any(span["quote"] in NOTE for span in merged["spans"])
    for source in sources:  # the distinct page, when cited, is a source of its own
        if source is not merged:
            assert {span["document_id"] for span in source["spans"]} == {str(third.id)}
    assert_audited(report, row.markdown)
    number = merged["id"][1:]
    (footnote,) = re.findall(rf"^\[\^{number}\]: (.*)$", row.markdown, re.M)
    listed = re.search(r"\(documents (\d+), (\d+)\)$", footnote)
    assert listed and {int(listed[1]), int(listed[2])} == {first.id, second.id}, footnote
    assert f"of document {listed[2]}, " in footnote and f"of document {listed[1]}" not in footnote
