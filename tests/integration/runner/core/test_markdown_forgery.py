"""Forged citations through names and messages: a channel name or document title holding a
paragraph, a heading or a footnote definition, and messages holding `\\[^1]`, raw HTML and
`javascript:` links, run through the real pipeline (offline extractor, worker, PostgreSQL,
GraphQL) and rendered by a real CommonMark renderer with the footnote plugin and raw HTML on:
the reader sees only the citations the audit kept, no markup from the text, and every word."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import asyncpg

from db import jobs
from db.documents import store_document
from runner.core.markdown_text import single_line
from runner.documents.ingest import ingest_text
from runner.triggers import trigger_report
from schema.types.ids import DIGEST, REPORT, global_id
from tests.support.database import add_channel, messages
from tests.support.digests import digest_once, make_worker
from tests.support.markdown import Rendered, render
from tests.support.schema import gql

FORGED_SENTENCE = "The security team approved disabling TLS on prod."
# The attack: the name closes the heading, adds a paragraph citing footnote 1 (someone else's real
# message), and opens a heading that looks like the next section.
FORGED_CHANNEL = f"ops\n\n{FORGED_SENTENCE}[^1]\n\n## In #ops"
FORGED_TITLE = "Runbook\n\n[^1]: FORGED definition\n\n<img src=x onerror=alert(1)>"
QUESTION = "How are database migration rollbacks approved?"
OPS = [
    ("ann", "Morning all."),
    ("bob", "The database migration runs on Friday evening after the freeze."),
    ("cid", "Rollbacks of the database migration need approval from the on-call lead."),
    ("dee", "Who approves rollbacks when the on-call lead is away?"),
    ("eve", "A rollback of a database migration is approved in the incident channel."),
    ("fay", "The database migration rollback script is tested every week."),
    ("gus", "Approval for migration rollbacks is logged by the on-call lead."),
]
RUNBOOK = (
    "Every database migration has a rollback plan. A rollback is approved by the on-call lead "
    "and recorded in the incident log.\n\nRollbacks of a migration are rehearsed before the "
    "database migration window.\n\nThe coffee machine is cleaned on Mondays."
)
HOSTILE = [
    "\\[^1]",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "[click](javascript:alert(1))",
]
REPORT_QUERY = (
    "query($id: ID!) { report(id: $id) { title markdown audit { kept dropped sources } } }"
)
DIGEST_QUERY = """
query($id: ID!) { digest(id: $id) {
  overviewMarkdown overviewSentences { text citations { messageId } }
} }
"""


def assert_only_kept_citations(rendered: Rendered, kept: int) -> None:
    """Footnote markers and definitions are exactly 1..kept (the sources the audit kept), each
    defined once; no markup, no script link."""
    numbers = [str(n) for n in range(1, kept + 1)]
    assert kept > 0
    assert [label for label, _ in rendered.definitions] == numbers, rendered.definitions
    assert sorted(set(rendered.footnote_refs), key=int) == numbers, rendered.footnote_refs
    assert rendered.markup == [], rendered.markup
    assert not any(href.lower().startswith("javascript:") for href in rendered.links)


async def _report(
    pool: asyncpg.Pool, database_url: str, question: str, **sources: Any
) -> dict[str, Any]:
    async with pool.acquire() as connection:
        job, _ = await trigger_report(connection, question, max_attempts=3, **sources)
    assert await make_worker(pool, database_url).run_once()
    async with pool.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
    assert done is not None and done.status == "succeeded" and done.report_id, done
    report = await gql(pool, REPORT_QUERY, id=global_id(REPORT, done.report_id))
    return dict(report["report"])


async def test_a_channel_name_or_document_title_cannot_add_a_paragraph_heading_or_footnote(
    db: asyncpg.Pool, database_url: str
) -> None:
    # Stored as a name could be before names were made one line at ingest (and as any
    # other path to the table could still store it): the Markdown must hold either way.
    ops = await add_channel(db, FORGED_CHANNEL, messages(OPS))
    document = replace(ingest_text(RUNBOOK), title=FORGED_TITLE)
    async with db.acquire() as connection:
        row, _ = await store_document(connection, document.as_record())
    report = await _report(db, database_url, QUESTION, channel_ids=[ops], document_ids=[row.id])
    rendered = render(report["markdown"])
    assert report["audit"]["dropped"] == 0 and report["audit"]["kept"] > 0
    assert_only_kept_citations(rendered, report["audit"]["sources"])
    sources = (
        f"#{single_line(FORGED_CHANNEL)}, ",
        f"{single_line(FORGED_TITLE)}, char:",
    )
    # The forged sentence is read as part of the heading or the source's name it was hidden in
    # (an entry of the Sources list: `S2 #ops The security team...`), never as a claim.
    listed = tuple(
        f"S{n} {name}"
        for n in range(1, report["audit"]["sources"] + 1)
        for name in (f"#{single_line(FORGED_CHANNEL)}, ", f"{single_line(FORGED_TITLE)} (")
    )
    claims = [p for p in rendered.paragraphs if not p.startswith(listed)]
    assert not any(FORGED_SENTENCE in paragraph for paragraph in claims)
    assert len(rendered.paragraphs) - len(claims) == report["audit"]["sources"]
    assert all(text.startswith(sources) for _, text in rendered.definitions), rendered.definitions
    origins = {f"In #{single_line(FORGED_CHANNEL)}", f"In {single_line(FORGED_TITLE)}"}
    assert rendered.headings[0] == report["title"]
    assert set(rendered.headings[1:]) <= {"Answer", "Open points", "Sources"} | origins
    assert origins <= set(rendered.headings), rendered.headings  # both sections were written
    for source in sources:  # both named in full, as text
        assert any(text.startswith(source) for _, text in rendered.definitions)


async def test_escaped_brackets_and_html_in_messages_stay_text_in_digest_and_report(
    db: asyncpg.Pool, database_url: str
) -> None:
    chat = [
        (
            "ann",
            f"We decided to move the billing database to the new cluster {HOSTILE[0]} on Friday.",
        ),
        (
            "<svg onload=alert(1)>",
            f"The staging deploy of the login page failed: {HOSTILE[1]} in the template.",
        ),
        ("cid", "Who reviews the template change before the release?"),
        (
            "dee",
            f"The release notes for the billing migration mention {HOSTILE[3]} twice.",
        ),
        ("ann", f"Please read the migration checklist {HOSTILE[4]} before Friday."),
        ("bob", "I will rerun the staging deploy of the login page after lunch."),
        ("cid", "The billing database migration needs a rollback plan and a dry run."),
        # The payload sits in the question nobody answers, so the digest keeps it open.
        ("dee", f"Can someone check the release checklist {HOSTILE[2]} for the billing migration?"),
    ]
    channel = await add_channel(db, "<b>ops</b>", messages(chat))
    done = await digest_once(db, database_url, channel)
    assert done.status == "succeeded" and done.digest_id, done
    digest = (await gql(db, DIGEST_QUERY, id=global_id(DIGEST, done.digest_id)))["digest"]
    overview_text = " ".join(s["text"] for s in digest["overviewSentences"])
    assert all(payload in overview_text for payload in HOSTILE), overview_text  # all read
    cited = {c["messageId"] for s in digest["overviewSentences"] for c in s["citations"]}
    rendered = render(digest["overviewMarkdown"])
    assert_only_kept_citations(rendered, len(cited))
    for sentence in digest["overviewSentences"]:  # every word still there, as written
        assert single_line(sentence["text"]) in rendered.text

    shown: set[str] = set()
    for question in (  # between them, the reports cite every message
        "When does the billing database move to the new cluster, and who reviews the template?",
        "What about the billing migration, the login page template and the checklist?",
        "Which migration checklist should be read before Friday?",
    ):
        report = await _report(db, database_url, question, channel_ids=[channel], document_ids=[])
        rendered = render(report["markdown"])
        assert_only_kept_citations(rendered, report["audit"]["sources"])
        assert "#<b>ops</b>, " in rendered.text
        shown |= {payload for payload in HOSTILE if payload in rendered.text}
    assert shown == set(HOSTILE)  # each payload cited, visible as its own words


async def test_a_question_of_punctuation_only_gets_a_title_a_reader_can_see(
    db: asyncpg.Pool, database_url: str
) -> None:
    ops = await add_channel(db, "ops", messages(OPS))
    report = await _report(db, database_url, "???!!!", channel_ids=[ops], document_ids=[])
    assert report["title"] == "Report"
    assert render(report["markdown"]).headings[0] == "Report"
