"""Every channel and document a report is asked to read gets a section or a `no_section`
warning saying why it has none, through the real worker on real PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import asyncpg

from db import jobs
from db import reports as report_queries
from db.models import DigestJob
from runner.triggers import trigger_report
from tests.support.database import BASE_TIME, add_channel, messages
from tests.support.digests import make_worker

QUESTION = "How are database migration rollbacks approved?"
OPS = [
    ("ann", "The database migration runs on Friday evening after the freeze."),
    ("bob", "Rollbacks of the database migration need approval from the on-call lead."),
    ("cid", "An approved rollback of a migration is written into the incident log."),
]
SOCIAL = [
    ("dee", "Lunch is pizza today, the place on the corner."),
    ("eve", "The football match starts at eight tonight in the pub."),
]


async def _report(pool: asyncpg.Pool, database_url: str, **request: Any) -> DigestJob:
    async with pool.acquire() as connection:
        job, _ = await trigger_report(connection, QUESTION, max_attempts=3, **request)
    assert await make_worker(pool, database_url).run_once()
    async with pool.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
    assert done is not None and done.status == "succeeded", done
    return done


async def test_a_channel_with_nothing_relevant_is_named_with_its_reason(
    db: asyncpg.Pool, database_url: str
) -> None:
    ops = await add_channel(db, "ops", messages(OPS))
    social = await add_channel(db, "social", messages(SOCIAL, prefix="s"))
    done = await _report(db, database_url, channel_ids=[ops, social], document_ids=[])
    async with db.acquire() as connection:
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id or 0])
    headings = [section["heading"] for section in row.sections]
    assert headings[0] == "Answer" and "pizza" not in row.markdown
    warnings = row.fidelity["warnings"]
    # ops answers; social has no section, so it has a warning saying why, and only it does.
    assert {source["channel"] for source in row.sources} == {"ops"}
    assert "In #social" not in headings
    assert [(w["code"], w["reason"], w["source_id"]) for w in warnings] == [
        ("no_section", "no_match", social)
    ]
    assert "'social'" in warnings[0]["message"]
    assert "no_section" in {w["code"] for w in done.warnings or []}


async def test_a_channel_silent_in_the_range_is_named_as_empty(
    db: asyncpg.Pool, database_url: str
) -> None:
    ops = await add_channel(db, "ops", messages(OPS))
    quiet = await add_channel(
        db, "quiet", messages(SOCIAL, prefix="q", start=BASE_TIME + timedelta(days=2))
    )
    done = await _report(
        db,
        database_url,
        channel_ids=[ops, quiet],
        document_ids=[],
        since=BASE_TIME,
        until=BASE_TIME + timedelta(days=1),
    )
    async with db.acquire() as connection:
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id or 0])
    reasons = {(w["source_id"], w["reason"]) for w in row.fidelity["warnings"]}
    assert reasons == {(quiet, "window_empty")}
