"""Reports through the API: `triggerReport` returns a job like any other, the worker writes the
report, and `DigestJob.report` / `node(id:)` / `report(id:)` read it back as sections → sentences →
citations → sources, Markdown and audit. The closing test reports across two real channels and one
real PDF from ../shared/data (skipped when absent)."""

from __future__ import annotations

import re

import asyncpg

from db import reports as report_queries
from db.documents import store_document
from runner.documents.ingest import ingest_bytes
from runner.documents.locators import resolve_locator
from runner.grounding.claim_support import DEFAULT_MIN_OVERLAP, support_share
from schema.types.ids import CHANNEL, DOCUMENT, global_id
from tests.support.database import Msg, add_channel, row_id
from tests.support.offline import parse_gitter, parse_irc
from tests.support.paths import shared_data
from tests.support.reports import (
    TRIGGER,
    _report,
    assert_audited,
    ops_and_runbook,
    stored_report,
)
from tests.support.schema import gql

NODE = """query($id: ID!) { node(id: $id) { ... on Report { title } } report(id: $id) { title } }"""


async def test_trigger_report_returns_a_job_whose_report_reads_back_structured(
    db: asyncpg.Pool, database_url: str
) -> None:
    ops, document_id = await ops_and_runbook(db)
    sources = {
        "channelIds": [global_id(CHANNEL, ops)],
        "documentIds": [global_id(DOCUMENT, document_id)],
    }
    done = await _report(db, database_url, "Who approves a database migration rollback?", sources)
    report = done["report"]
    assert report["audit"] == {
        "proposed": 3,
        "kept": 3,
        "dropped": 0,
        "reAsked": 0,
        "coverage": 1.0,
        "sources": 3,
    }
    ids = [source["id"] for source in report["sources"]]
    assert ids == ["S1", "S2", "S3"] and [s["footnote"] for s in report["sources"]] == [1, 2, 3]
    for section in report["sections"]:
        for sentence in section["sentences"]:
            (citation,) = sentence["citations"]
            assert citation["source"]["quote"] == sentence["text"]
            assert f"{sentence['text']}[^{citation['footnote']}]" in report["markdown"]
    kinds = {s["kind"]: s for s in report["sources"]}
    assert kinds["document"]["documentTitle"] == "Runbook" and kinds["document"]["locator"]
    assert kinds["message"]["channelName"] == "ops" and kinds["message"]["revision"] == 1
    cited = kinds["message"]
    assert cited["revisionText"][cited["charStart"] : cited["charEnd"]] == cited["quote"]
    assert cited["revisionText"] != cited["quote"] or cited["charStart"] == 0
    assert kinds["document"]["revisionText"] is None
    assert (await gql(db, NODE, id=report["id"])) == {
        "node": {"title": report["title"]},
        "report": {"title": report["title"]},
    }
    again = await _report(db, database_url, "Who approves a database migration rollback?", sources)
    assert again["report"]["id"] == report["id"] and again["stats"]["cacheHit"] is True
    assert again["resultMessage"] == "served from the report cache"

    refused = (await gql(db, TRIGGER, q="why?", sources={"channelIds": []}))["triggerReport"]
    assert refused == {
        "__typename": "InvalidInputError",
        "message": "choose at least one channel or document",
        "reason": "no_sources",
    }
    missing = await gql(db, TRIGGER, q="why?", sources={"channelIds": [global_id(CHANNEL, 999)]})
    assert missing["triggerReport"] == {
        "__typename": "NotFoundError",
        "message": f"no channel with id {global_id(CHANNEL, 999)}",
    }


QUESTION = (
    "How do people get help with Docker containers and Ubuntu, and how are chat conversations "
    "disentangled?"
)


async def test_report_across_two_real_channels_and_a_real_pdf(
    db: asyncpg.Pool, database_url: str
) -> None:
    docker = parse_gitter(shared_data("chat/gitter/manual_docker.txt"), "docker")
    ubuntu = parse_irc(shared_data("chat/ubuntu_irc/2010-08-17_18.raw.txt"))
    channel_ids = []
    for window in (docker, ubuntu):
        rows = [Msg(m.message_id, m.author, m.ts, m.normalized_text) for m in window.messages]
        channel_ids.append(await add_channel(db, window.channel_name, rows))
    pdf = ingest_bytes(shared_data("docs/pdf/acl19irc.pdf").read_bytes(), "application/pdf")
    async with db.acquire() as connection:
        document, _ = await store_document(connection, pdf.as_record())
    sources = {
        "channelIds": [global_id(CHANNEL, i) for i in channel_ids],
        "documentIds": [global_id(DOCUMENT, document.id)],
    }
    done = await _report(db, database_url, QUESTION, sources)
    report = done["report"]
    assert report["audit"]["coverage"] == 1.0 and report["audit"]["dropped"] == 0
    assert {s["channelName"] or s["documentTitle"] for s in report["sources"]} >= {
        "docker",
        "ubuntu",
    }
    assert any(s["kind"] == "document" for s in report["sources"])

    # Footnotes contiguous from 1, and each quote the exact characters at its locator.
    markdown = report["markdown"]
    definitions = re.findall(r"^\[\^(\d+)\]: ", markdown, re.M)
    assert definitions == [str(n) for n in range(1, len(report["sources"]) + 1)]
    # A client places a page locator with the document's pageStarts alone, as the console does.
    placed = (
        await gql(
            db,
            "query($id: ID!) { document(id: $id) { canonicalText pageStarts } }",
            id=global_id(DOCUMENT, document.id),
        )
    )["document"]
    assert placed["canonicalText"] == pdf.canonical_text
    for source in report["sources"]:
        if source["kind"] == "document":
            start, end = resolve_locator(source["locator"], pdf.canonical_text, pdf.page_spans)
            assert pdf.canonical_text[start:end] == source["quote"]
            located = re.fullmatch(r"page:(\d+):char:(\d+)-(\d+)", source["locator"])
            assert located is not None, source["locator"]
            page, first, last = (int(n) for n in located.groups())
            offset = placed["pageStarts"][page - 1]
            assert placed["canonicalText"][offset + first : offset + last] == source["quote"]
        else:
            window = docker if source["channelName"] == "docker" else ubuntu
            (message,) = [m for m in window.messages if m.message_id == source["externalId"]]
            text = message.normalized_text
            assert text[source["charStart"] : source["charEnd"]] == source["quote"]

    # Every stored sentence has a resolving, supporting citation (read back from the rows).
    async with db.acquire() as connection:
        (row,) = await report_queries.reports_by_ids(connection, [row_id(report["id"])])
        stored = await stored_report(connection, row)
    assert_audited(stored, row.markdown)
    for sentence in stored.sentences():
        share = support_share(sentence.sentence, [s.supporting_text for s in sentence.sources])
        assert share is not None and share >= DEFAULT_MIN_OVERLAP
