"""A report over a channel larger than the per-channel cap (DIGESTD_MAX_WINDOW_MESSAGES, lowered
here to CAP): it reads the newest messages in the range, where the answer usually is, and says
with a `window_cap` warning how many older messages of which channel it did not read, and which
range it read. Real PostgreSQL, the real worker, the offline writer."""

from __future__ import annotations

from datetime import timedelta

import asyncpg

from db import jobs
from db import reports as report_queries
from runner.triggers import trigger_report
from schema.types.report import ReportWarning
from tests.support.database import BASE_TIME, add_channel, messages
from tests.support.digests import make_worker

CAP = 30
OLDER = 50  # chatter before the answer: with the newest CAP read, OLDER + 3 - CAP are not
QUESTION = "Who approves a rollback of the database migration?"
CHATTER = [("ann", f"Lunch order {i}: the pizza place on the corner again.") for i in range(OLDER)]
ANSWER = [
    ("bob", "The database migration runs on Friday evening after the freeze."),
    ("cid", "A rollback of the database migration is approved by the on-call lead."),
    ("dee", "Thanks, noted in the runbook."),
]


async def test_a_capped_report_reads_the_newest_messages_and_warns_what_it_left_out(
    db: asyncpg.Pool, database_url: str
) -> None:
    channel_id = await add_channel(db, "ops", messages(CHATTER + ANSWER))
    async with db.acquire() as connection:
        job, _ = await trigger_report(
            connection, QUESTION, channel_ids=[channel_id], document_ids=[], max_attempts=3
        )
    assert await make_worker(db, database_url, max_window_messages=CAP).run_once()
    async with db.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
        assert done is not None and done.report_id is not None, done
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id])

    # The newest CAP messages were read: the answer, the last three messages, is cited.
    assert done.status == "succeeded" and done.stats["messages"] == CAP, done.stats
    cited = {source["external_id"] for source in row.sources if source["kind"] == "message"}
    assert f"m{OLDER + 2}" in cited, row.markdown

    not_read = OLDER + len(ANSWER) - CAP
    first_read = BASE_TIME + timedelta(minutes=not_read)
    (warning,) = [w for w in row.fidelity["warnings"] if w["code"] == "window_cap"]
    assert warning["channel_id"] == channel_id
    assert (warning["messages_read"], warning["messages_not_read"]) == (CAP, not_read)
    assert warning["read_from"] == first_read.isoformat()
    assert warning["not_read_from"] == BASE_TIME.isoformat()
    assert warning["not_read_to"] == (first_read - timedelta(minutes=1)).isoformat()
    shown = ReportWarning.from_json(warning)  # as the API's `warnings { code message }` shows it
    assert shown.code == "window_cap"
    assert f"channel {channel_id} ('ops'): {not_read} older messages" in shown.message
    assert f"at most {CAP} messages per channel" in shown.message
    assert done.stats["messages_not_read"] == not_read
    assert "window_cap" in [w["code"] for w in done.warnings]


async def test_a_channel_within_the_cap_is_read_whole_without_a_warning(
    db: asyncpg.Pool, database_url: str
) -> None:
    channel_id = await add_channel(db, "ops", messages(ANSWER))
    async with db.acquire() as connection:
        job, _ = await trigger_report(
            connection, QUESTION, channel_ids=[channel_id], document_ids=[], max_attempts=3
        )
    assert await make_worker(db, database_url, max_window_messages=len(ANSWER)).run_once()
    async with db.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
        assert done is not None and done.report_id is not None, done
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id])
    assert done.stats["messages"] == len(ANSWER) and done.stats["messages_not_read"] == 0
    assert [w for w in row.fidelity["warnings"] if w["code"] == "window_cap"] == []
