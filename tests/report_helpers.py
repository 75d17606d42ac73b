"""Helpers for report tests: read a stored report back as a `Report` with its message texts, and
check its citation audit and its footnotes."""

from __future__ import annotations

import re

import asyncpg

from db import channels as channel_queries
from db.models import Report as ReportRow
from runner.reports.audit import audit_marked
from runner.reports.records import report_from_json
from runner.reports.report import Report, marked_sentence, report_markdown


async def stored_report(connection: asyncpg.Connection, row: ReportRow) -> Report:
    """The stored report rebuilt from its rows, each message quote read from its revision."""
    keys = [
        (int(s["message_id"]), int(s["revision"])) for s in row.sources if s["kind"] == "message"
    ]
    texts = await channel_queries.revision_texts(
        connection, [k[0] for k in keys], [k[1] for k in keys]
    )
    by_key = {(t.message_id, t.revision): t.normalized_text for t in texts}
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
