"""Cited prose end to end against a fake OpenAI-compatible model (a local server behind the real
`openai` client), through the worker, Postgres and GraphQL: fabricated message ids and
sentences citing unrelated messages are never stored as cited; what was dropped is shown with
its reason and counted in the citation audit; the overview's Markdown footnotes are contiguous,
each source once, and quote exactly the characters stored for it."""

from __future__ import annotations

from typing import Any

import asyncpg

from runner.llm.fake import FakeLLM, completion, tool_of
from schema.types.ids import DIGEST, global_id
from server.settings import Settings
from tests.support.database import add_channel, messages
from tests.support.llm import chunk_messages_of, grounded_summary, merged_digest
from tests.support.schema import gql
from tests.support.worker import job_row, llm_settings, run_one_job

CHAT = [
    ("ann", "The nightly backup job fails because the S3 bucket policy denies PutObject."),
    ("bob", "I fixed the bucket policy; the backup job ran fine at 02:00 today."),
    ("ann", "Great. We decided to keep backups for 30 days in the standard storage class."),
    ("cid", "Anyone up for lunch? The ramen place reopened."),
    ("bob", "Should we also encrypt the backups with a customer-managed KMS key?"),
]

DIGEST_QUERY = """
query($id: ID!) { digest(id: $id) {
  title overview overviewMarkdown searchKeywords highlights
  overviewSentences { text citations { messageId author quote charStart charEnd revision revisionText footnote } }
  highlightSentences { text citations { messageId footnote } }
  rejections { stage field label reason }
  citationAudit { sentencesKept sentencesDropped overviewCitedShare titleReplaced
    fields { field proposed kept } reasons { reason count } }
} }
"""


def dishonest_digest(body: dict[str, Any]) -> dict[str, Any]:
    """A faithful merge, then prose a careless model writes: invented ids, a sentence citing
    small talk, one citing nothing, a made-up title and keywords."""
    digest = merged_digest(body)
    digest["title"] = "Quarterly revenue planning"
    digest["search_keywords"] = ["backup", "bucket policy", "revenue forecast"]
    digest["overview"] = [
        {
            "sentence": "The nightly backup job failed because the S3 bucket policy denied "
            "PutObject.",
            "message_ids": ["m1"],
        },
        {
            "sentence": "Bob fixed the bucket policy and the backup job ran fine.",
            "message_ids": ["m2", "m4"],
        },  # m4 (lunch) is unrelated: its citation is removed
        {"sentence": "The team chose Rust for the billing rewrite.", "message_ids": ["m4"]},
        {"sentence": "Backups move to Glacier.", "message_ids": ["m77"]},  # invented id
        {"sentence": "Everyone agreed on everything.", "message_ids": []},
    ]
    digest["highlights"] = [
        {
            "sentence": "Backups are kept for 30 days in the standard storage class.",
            "message_ids": ["m3"],
        },
        {"sentence": "Costs dropped by half.", "message_ids": ["m999"]},
    ]
    return digest


def respond(body: dict[str, Any]) -> dict[str, Any]:
    tool = tool_of(body)
    if tool == "emit_chunk_summary":
        assert chunk_messages_of(body)
        return completion(tool=tool, arguments=grounded_summary(body))
    return completion(tool=tool, arguments=dishonest_digest(body))


async def test_invented_or_unrelated_citations_are_never_stored_as_cited(
    db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id = await add_channel(db, "ops-backups", messages(CHAT))
    async with FakeLLM(respond).serve() as base_url:
        job_id = await run_one_job(db, llm_settings(settings, base_url), channel_id)
    job = await job_row(db, job_id)
    assert job.status == "succeeded", job.error
    assert job.digest_id is not None
    digest = (await gql(db, DIGEST_QUERY, id=global_id(DIGEST, job.digest_id)))["digest"]
    texts = dict(zip([f"m{i + 1}" for i in range(len(CHAT))], [t for _, t in CHAT], strict=True))

    kept = digest["overviewSentences"]
    assert [s["text"] for s in kept] == [
        "The nightly backup job failed because the S3 bucket policy denied PutObject.",
        "Bob fixed the bucket policy and the backup job ran fine.",
    ]
    assert [[c["messageId"] for c in s["citations"]] for s in kept] == [["m1"], ["m2"]]
    for citation in (c for s in kept for c in s["citations"]):
        text = texts[citation["messageId"]]
        assert citation["quote"] == text[citation["charStart"] : citation["charEnd"]]
        assert citation["revisionText"] == text  # what a client marks the quote in
    assert digest["overview"] == " ".join(s["text"] for s in kept)  # the old field still works
    assert [s["text"] for s in digest["highlightSentences"]] == [
        "Backups are kept for 30 days in the standard storage class."
    ]
    assert digest["highlights"] == [s["text"] for s in digest["highlightSentences"]]
    assert digest["searchKeywords"] == ["backup", "bucket policy"]
    assert "revenue" not in digest["title"].casefold()

    dropped = {(r["field"], r["reason"].split(":", 1)[0], r["label"]) for r in digest["rejections"]}
    assert ("overview", "low_support", "The team chose Rust for the billing rewrite.") in dropped
    assert ("overview", "unknown_message_id", "Backups move to Glacier.") in dropped
    assert ("overview", "no_citation", "Everyone agreed on everything.") in dropped
    assert ("highlights", "unknown_message_id", "Costs dropped by half.") in dropped
    assert ("title", "low_support", "Quarterly revenue planning") in dropped
    assert all(r["stage"] == "reduce" for r in digest["rejections"] if r["field"] == "overview")

    audit = digest["citationAudit"]
    assert (audit["sentencesKept"], audit["sentencesDropped"]) == (3, 4)
    assert audit["overviewCitedShare"] == 1.0 and audit["titleReplaced"]
    assert {f["field"]: (f["proposed"], f["kept"]) for f in audit["fields"]} == {
        "overview": (5, 2),
        "highlights": (2, 1),
        "search_keywords": (3, 2),
    }
    reasons = {r["reason"]: r["count"] for r in audit["reasons"]}
    assert reasons["unrelated_citation_removed"] == 1 and reasons["unknown_message_id"] == 2

    markdown = digest["overviewMarkdown"]
    body, notes = markdown.rsplit("\n\n", 1)
    assert body == (
        "The nightly backup job failed because the S3 bucket policy denied PutObject.[^1] "
        "Bob fixed the bucket policy and the backup job ran fine.[^2]"
    )
    assert notes.splitlines() == [
        f'[^1]: ann, 2024-05-01 09:00 UTC, "{texts["m1"]}" (message m1)',
        f'[^2]: bob, 2024-05-01 09:01 UTC, "{texts["m2"]}" (message m2)',
    ]

    # A digest stored before citations were checked (no sentences, no audit) reads as before.
    async with db.acquire() as connection:
        await connection.execute(
            "UPDATE digests SET overview = 'An old overview.', overview_sentences = '[]', "
            "highlight_sentences = '[]', citation_audit = NULL WHERE id = $1",
            job.digest_id,
        )
    old = (await gql(db, DIGEST_QUERY, id=global_id(DIGEST, job.digest_id)))["digest"]
    assert old["overview"] == old["overviewMarkdown"] == "An old overview."
    assert old["overviewSentences"] == [] and old["citationAudit"] is None
