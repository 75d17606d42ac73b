"""Report jobs: triggered like any job, run by the real worker on real PostgreSQL, stored with their
sources and audit, and served from the cache when nothing they read changed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import asyncpg
import pytest

from db import jobs
from db import reports as report_queries
from db.digests import latest_digest_of_channel
from db.documents import store_document
from db.models import DigestJob
from runner.documents.ingest import ingest_text
from runner.documents.locators import resolve_locator
from runner.triggers import (
    SubjectNotFound,
    TriggerRefused,
    trigger_channel_digest,
    trigger_report,
)
from tests.support.database import BASE_TIME, Msg, add_channel, messages
from tests.support.digests import make_worker
from tests.support.reports import assert_audited, stored_report

QUESTION = "How are database migration rollbacks approved?"
OPS = [
    ("ann", "Morning all."),
    ("bob", "The database migration runs on Friday evening after the freeze."),
    ("cid", "Rollbacks of the database migration need approval from the on-call lead."),
    ("dee", "Who approves rollbacks when the on-call lead is away?"),
]
DEV = [
    ("eve", "Lunch is pizza today."),
    ("fay", "The rollback script for the database migration is in the runbook repository."),
]
RUNBOOK = (
    "Migration runbook\n\nEvery database migration has a rollback plan. A rollback is approved "
    "by the on-call lead and recorded in the incident log.\n\nThe coffee machine is cleaned on "
    "Mondays."
)


async def _sources(pool: asyncpg.Pool) -> tuple[int, int, int]:
    ops = await add_channel(pool, "ops", messages(OPS))
    dev = await add_channel(pool, "dev", messages(DEV, prefix="d"))
    async with pool.acquire() as connection:
        row, _ = await store_document(connection, ingest_text(RUNBOOK, title="Runbook").as_record())
    return ops, dev, row.id


async def _run(pool: asyncpg.Pool, database_url: str, **request: Any) -> DigestJob:
    async with pool.acquire() as connection:
        job, created = await trigger_report(connection, QUESTION, max_attempts=3, **request)
        again, created_again = await trigger_report(connection, QUESTION, max_attempts=3, **request)
    assert created and not created_again and again.id == job.id  # one active job per request
    assert await make_worker(pool, database_url).run_once()
    async with pool.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
    assert done is not None and done.kind == "report"
    return done


async def test_a_report_job_stores_an_audited_report_and_an_unchanged_rerun_does_no_work(
    db: asyncpg.Pool, database_url: str
) -> None:
    ops, dev, document = await _sources(db)
    request = {"channel_ids": [ops, dev], "document_ids": [document]}
    first = await _run(db, database_url, **request)
    assert first.status == "succeeded" and first.report_id is not None, first.error
    assert first.stats["cache_hit"] is False and first.stats["coverage"] == 1.0
    async with db.acquire() as connection:
        (row,) = await report_queries.reports_by_ids(connection, [first.report_id])
        report = await stored_report(connection, row)
    assert row.title == "How are database migration rollbacks approved"
    assert row.audit["dropped"] == 0 and row.audit["problems"] == []
    assert_audited(report, row.markdown)
    kinds = {source["kind"] for source in row.sources}
    assert kinds == {"message", "document"}
    for source in row.sources:
        if source["kind"] == "document":
            start, end = resolve_locator(source["locator"], RUNBOOK)
            assert RUNBOOK[start:end] == source["quote"]
    assert "pizza" not in row.markdown and "coffee" not in row.markdown
    assert [s["heading"] for s in row.sections][0] == "Answer"
    assert row.sections[-1]["sentences"][0]["text"] == (
        "Who approves rollbacks when the on-call lead is away?"
    )

    second = await _run(db, database_url, **request)
    assert second.report_id == first.report_id and second.stats["cache_hit"] is True
    assert second.result_message == "served from the report cache"

    # A new revision of a message read is a new report.
    edited = Msg(
        "m3",
        "cid",
        BASE_TIME + timedelta(minutes=2),
        "Rollbacks of the database migration need approval from two leads.",
    )
    await add_channel(db, "ops", [edited])
    third = await _run(db, database_url, **request)
    assert third.report_id not in (None, first.report_id) and third.stats["cache_hit"] is False


async def test_report_triggers_refuse_what_cannot_be_a_report(db: asyncpg.Pool) -> None:
    ops, _, _ = await _sources(db)
    async with db.acquire() as connection:
        with pytest.raises(TriggerRefused, match="question must not be empty"):
            await trigger_report(
                connection, "  ", channel_ids=[ops], document_ids=[], max_attempts=3
            )
        with pytest.raises(TriggerRefused, match="at least one channel or document"):
            await trigger_report(
                connection, QUESTION, channel_ids=[], document_ids=[], max_attempts=3
            )
        with pytest.raises(SubjectNotFound, match="no document with id 999"):
            await trigger_report(
                connection, QUESTION, channel_ids=[ops], document_ids=[999], max_attempts=3
            )
        with pytest.raises(TriggerRefused, match="since must be before"):
            await trigger_report(
                connection,
                QUESTION,
                channel_ids=[ops],
                document_ids=[],
                since=BASE_TIME,
                until=BASE_TIME,
                max_attempts=3,
            )


async def test_a_time_range_reads_only_its_messages(db: asyncpg.Pool, database_url: str) -> None:
    ops, _, _ = await _sources(db)
    done = await _run(
        db,
        database_url,
        channel_ids=[ops],
        document_ids=[],
        since=BASE_TIME + timedelta(minutes=2),
        until=BASE_TIME + timedelta(minutes=3),
    )
    assert done.status == "succeeded" and done.stats["messages"] == 1
    async with db.acquire() as connection:
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id or 0])
    assert {source["external_id"] for source in row.sources} == {"m3"}


async def test_claims_of_the_channels_digests_are_read_and_key_the_cache(
    db: asyncpg.Pool, database_url: str
) -> None:
    ops, _, _ = await _sources(db)
    before = await _run(db, database_url, channel_ids=[ops], document_ids=[])
    assert before.status == "succeeded" and before.stats["digest_claims"] == 0
    async with db.acquire() as connection:
        await trigger_channel_digest(connection, ops, max_attempts=3)
    assert await make_worker(db, database_url).run_once()
    async with db.acquire() as connection:
        digest = await latest_digest_of_channel(connection, ops)
    assert digest is not None
    after = await _run(db, database_url, channel_ids=[ops], document_ids=[])
    # The digest's claims are read, so the same question over the same messages is a new report.
    assert after.status == "succeeded", after.error
    assert after.stats["cache_hit"] is False and after.stats["digest_claims"] > 0
    assert after.report_id != before.report_id
