"""Report sources' `credibilityScore` and `relevanceScore` through the API: a report over a real
IRC channel and a real PDF from ../shared/data (skipped when absent) scores every source in
[0, 1], the PDF (the paper the question is about) above the channel's messages, and the stored
JSON and Markdown carry the same numbers; a source stored before scores reads as null."""

from __future__ import annotations

import asyncpg

from db import reports as report_queries
from db.documents import store_document
from runner.documents.ingest import ingest_bytes
from schema.types.ids import CHANNEL, DOCUMENT, global_id
from schema.types.report import ReportSource
from tests.support.database import Msg, add_channel, row_id
from tests.support.digests import make_worker
from tests.support.offline import parse_irc
from tests.support.paths import shared_data
from tests.support.reports import TRIGGER
from tests.support.schema import gql

QUESTION = "How do people get help with Ubuntu, and how are chat conversations disentangled?"

SCORES = """
query($id: ID!) {
  job(id: $id) {
    status
    report { id markdown sources { id kind channelName documentTitle credibilityScore
                                   relevanceScore spans { quote } } }
  }
}"""


async def test_sources_are_scored_and_the_more_relevant_source_ranks_higher(
    db: asyncpg.Pool, database_url: str
) -> None:
    ubuntu = parse_irc(shared_data("chat/ubuntu_irc/2010-08-17_18.raw.txt"))
    rows = [Msg(m.message_id, m.author, m.ts, m.normalized_text) for m in ubuntu.messages]
    channel = await add_channel(db, ubuntu.channel_name, rows)
    pdf = ingest_bytes(shared_data("docs/pdf/acl19irc.pdf").read_bytes(), "application/pdf")
    async with db.acquire() as connection:
        document, _ = await store_document(connection, pdf.as_record())
    sources = {
        "channelIds": [global_id(CHANNEL, channel)],
        "documentIds": [global_id(DOCUMENT, document.id)],
    }
    job = (await gql(db, TRIGGER, q=QUESTION, sources=sources))["triggerReport"]
    assert await make_worker(db, database_url).run_once()
    done = (await gql(db, SCORES, id=job["id"]))["job"]
    assert done["status"] == "SUCCEEDED", done
    listed = done["report"]["sources"]
    assert {s["kind"] for s in listed} == {"message", "document"}
    for source in listed:
        assert 0.0 <= source["credibilityScore"] <= 1.0
        assert 0.0 <= source["relevanceScore"] <= 1.0
    (paper,) = [s for s in listed if s["kind"] == "document"]
    messages = [s for s in listed if s["kind"] == "message"]
    # The best passage of a part of the question is cited: it scores 1.
    assert max(s["relevanceScore"] for s in listed) == 1.0

    def relevance_of(words: str) -> float:
        (source,) = [s for s in listed if any(words in span["quote"] for span in s["spans"])]
        return float(source["relevanceScore"])

    # A message inviting people to ask for help answers "how do people get help with Ubuntu"
    # better than one asking about backup tools on Ubuntu, and so does the paper's sentence on
    # disentangled conversations in chat.
    backups = relevance_of("scheduled backups on ubuntu")
    assert relevance_of("ask questions and help people out") > backups
    assert paper["relevanceScore"] > backups
    # A PDF with its title stated and a clean extraction is worth more than a chat message.
    assert paper["credibilityScore"] > max(s["credibilityScore"] for s in messages)

    # The stored JSON (what `digestd report --json` prints) and the Markdown say the same.
    async with db.acquire() as connection:
        (row,) = await report_queries.reports_by_ids(connection, [row_id(done["report"]["id"])])
    stored = {s["id"]: s for s in row.sources}
    for source in listed:
        assert stored[source["id"]]["relevance_score"] == source["relevanceScore"]
        assert stored[source["id"]]["credibility_score"] == source["credibilityScore"]
        line = next(
            line for line in row.markdown.splitlines() if line.startswith(f"- {source['id']} ")
        )
        assert line.endswith(
            f"; relevance {source['relevanceScore']:.2f}, "
            f"credibility {source['credibilityScore']:.2f}"
        )


def test_a_source_stored_before_scores_reads_as_null() -> None:
    stored = {
        "id": "S1",
        "kind": "document",
        "quote": "Every database migration has a rollback plan.",
        "document_id": "7",
        "title": "Runbook",
        "url": None,
        "source_text_hash": "sha256:0",
        "locator": "char:0-45",
    }
    old = ReportSource.from_json(stored)
    assert old.credibility_score is None and old.relevance_score is None
    scored = ReportSource.from_json({**stored, "credibility_score": 0.8, "relevance_score": 1})
    assert (scored.credibility_score, scored.relevance_score) == (0.8, 1.0)
