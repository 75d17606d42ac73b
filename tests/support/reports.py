"""Helpers for report tests: read a stored report back as a `Report` with its message texts,
and check the seed-004 audit and the footnotes of it."""

from __future__ import annotations

import re
from typing import Any

import asyncpg

from db import channels as channel_queries
from db.documents import store_document
from db.models import Report as ReportRow
from runner.documents.ingest import ingest_text
from runner.evaluation.fake_report_model import request_sources
from runner.reports.audit import audit_marked
from runner.reports.records import report_from_json
from runner.reports.report import Report, marked_sentence, report_markdown
from tests.support.database import add_channel, messages
from tests.support.digests import make_worker
from tests.support.schema import gql


async def stored_report(connection: asyncpg.Connection, row: ReportRow) -> Report:
    """The stored report rebuilt from its rows, each message quote read from its revision."""
    keys = [
        (int(s["message_id"]), int(s["revision"])) for s in row.sources if s["kind"] == "message"
    ]
    texts = await channel_queries.revision_texts(
        connection, [k[0] for k in keys], [k[1] for k in keys]
    )
    by_key = {
        (t.message_id, t.revision): t.normalized_text
        for t in texts
        if t.normalized_text is not None
    }
    return report_from_json(row.question, row.title, row.sections, row.sources, by_key)


def assert_audited(report: Report, markdown: str) -> None:
    """Every sentence cites a resolving, supporting source; footnotes contiguous from 1 in
    order of first reference; the stored Markdown is the report's."""
    registry = report.registry()
    marked = [marked_sentence(sentence, registry) for sentence in report.sentences()]
    assert all(sentence.sources for sentence in report.sentences())
    assert audit_marked(marked, registry) == []
    assert markdown == report_markdown(report)
    definitions = re.findall(r"^\[\^(\d+)\]: ", markdown, re.M)
    assert definitions == [str(n) for n in range(1, len(registry) + 1)]
    body = markdown.split("\n[^1]: ", 1)[0]
    assert list(dict.fromkeys(re.findall(r"\[\^(\d+)\]", body))) == definitions


QUESTION = "How are database migration rollbacks approved?"


OPS = [
    ("ann", "Morning all, the coffee machine on floor three is broken again today."),
    ("bob", "The database migration runs on Friday evening after the freeze."),
    ("cid", "Rollbacks of the database migration need approval from the on-call lead."),
    ("dee", "Who approves rollbacks when the on-call lead is away?"),
    ("eve", "The rollback plan of every database migration is written in the runbook."),
]


GOOD = "Rollbacks of the database migration need approval from the on-call lead."


FABRICATED = "Rollbacks are approved by the chief executive in a quarterly vote."


UNRELATED = "Database migration rollbacks are approved by the coffee machine committee."


def id_of(body: dict[str, Any], text: str) -> str:
    return next(i for i, t in request_sources(body) if t == text)


def bad_answer(body: dict[str, Any]) -> dict[str, Any]:
    """One good sentence, one citing an id that was never given, and one citing a message that
    says nothing of the kind (it is about the migration's schedule, not who approves)."""
    schedule = id_of(body, "The database migration runs on Friday evening after the freeze.")
    return {
        "title": "Database migration rollbacks",
        "answer": [
            {"sentence": GOOD, "source_ids": [id_of(body, GOOD)]},
            {"sentence": FABRICATED, "source_ids": ["E99"]},
        ],
        "sections": [
            {
                "heading": "Who decides",
                "sentences": [
                    {"sentence": UNRELATED, "source_ids": [schedule]},
                ],
            }
        ],
        "open_points": [],
    }


TRIGGER = """
mutation($q: String!, $sources: ReportSources!) {
  triggerReport(question: $q, sources: $sources) {
    __typename
    ... on DigestJob { id kind status reportId }
    ... on InvalidInputError { message reason }
    ... on NotFoundError { message }
  }
}"""


JOB = """
query($id: ID!) {
  job(id: $id) {
    status resultMessage stats { cacheHit }
    report {
      id title markdown
      audit { proposed kept dropped reAsked coverage sources }
      sections { heading bullets sentences { text citations { sourceId footnote
        source { id kind quote } } } }
      sources { id footnote kind quote channelName messageId externalId revision charStart
                charEnd documentId documentTitle locator revisionText }
    }
  }
}"""


async def _report(
    pool: asyncpg.Pool, database_url: str, question: str, sources: dict[str, Any]
) -> dict[str, Any]:
    job = (await gql(pool, TRIGGER, q=question, sources=sources))["triggerReport"]
    assert job["__typename"] == "DigestJob" and job["kind"] == "report", job
    assert await make_worker(pool, database_url).run_once()
    done = (await gql(pool, JOB, id=job["id"]))["job"]
    assert done["status"] == "SUCCEEDED", done
    return dict(done)


async def ops_and_runbook(pool: asyncpg.Pool) -> tuple[int, int]:
    """An "ops" channel and a "Runbook" document about database migrations: (channel, document)
    row ids."""
    ops = await add_channel(
        pool,
        "ops",
        messages(
            [
                ("bob", "The database migration runs on Friday evening after the freeze."),
                ("cid", "Rollbacks of the database migration need approval from the on-call lead."),
            ]
        ),
    )
    async with pool.acquire() as connection:
        document, _ = await store_document(
            connection,
            ingest_text(
                "Every database migration has a rollback plan, approved by the on-call lead.",
                title="Runbook",
            ).as_record(),
        )
    return ops, document.id
