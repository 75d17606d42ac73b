"""Reports in Postgres: queue a report job, read the report cache, store a report (its job's
end is `jobs.finish_job`, in the same transaction), and read reports by id.

The SQL is in db/queries.sql (`insert_report_job`, `insert_report`, ...).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import asyncpg

from db.jobs import JobKind, enqueue_job
from db.models import (
    DigestJob,
    MessageRange,
    Report,
    ReportDigestItem,
    WindowMessageRow,
    as_row_or_none,
    as_rows,
)
from db.queries import QUERIES

# The `fidelity` of a report whose writer fitted nothing (the offline writer; 0007's default).
EMPTY_FIDELITY: dict[str, Any] = {
    "fidelity": [],
    "warnings": [],
    "dropped_content_ids": [],
    "content_fidelity_schema_version": "fidelity-v2",  # runner.core.fidelity.FIDELITY_SCHEMA_VERSION
    "content_fidelity": {},
    "content_archive_hashes": {},
}


async def trigger_report(
    connection: asyncpg.Connection, options: dict[str, Any], *, max_attempts: int
) -> tuple[DigestJob, bool]:
    """Queue a report job for the request in `options` (with its `request_hash`), or return the
    active job for the same request. Returns (job, created)."""
    return await enqueue_job(connection, JobKind.REPORT, None, options, max_attempts=max_attempts)


async def cached_report_id(connection: asyncpg.Connection, cache_key: str) -> int | None:
    record = await connection.fetchrow(QUERIES["report_by_cache_key"], cache_key)
    return None if record is None else int(record["id"])


async def insert_report(connection: asyncpg.Connection, job_id: int, values: dict[str, Any]) -> int:
    """Store a report (or find the one a concurrent job stored under the same key); its id."""
    record = await connection.fetchrow(
        QUERIES["insert_report"],
        job_id,
        values["question"],
        values["request"],
        values["cache_key"],
        values["title"],
        values["sections"],
        values["sources"],
        values["markdown"],
        values["audit"],
        values["writer"],
        values.get("fidelity", EMPTY_FIDELITY),
    )
    assert record is not None  # the insert or the row that beat it
    return int(record["id"])


async def reports_by_ids(connection: asyncpg.Connection, ids: list[int]) -> list[Report]:
    return as_rows(Report, await connection.fetch(QUERIES["reports_by_ids"], ids))


async def report_digest_items(
    connection: asyncpg.Connection,
    channel_id: int,
    since: datetime | None,
    until: datetime | None,
) -> list[ReportDigestItem]:
    """The claims of the channel's digests whose window overlaps [since, until), newest digest
    first: the items a report may cite through the messages they rest on."""
    records = await connection.fetch(QUERIES["report_digest_items"], channel_id, since, until)
    return as_rows(ReportDigestItem, records)


async def report_window_messages(
    connection: asyncpg.Connection,
    channel_id: int,
    since: datetime | None,
    until: datetime | None,
    max_messages: int,
) -> list[WindowMessageRow]:
    """The newest `max_messages` messages with since <= ts < until, in conversation order: what
    a report reads of a channel."""
    records = await connection.fetch(
        QUERIES["report_window_messages"], channel_id, since, until, max_messages
    )
    return as_rows(WindowMessageRow, records)


async def report_window_left_out(
    connection: asyncpg.Connection,
    channel_id: int,
    oldest_read: WindowMessageRow,
    since: datetime | None,
) -> MessageRange | None:
    """The messages since `since` older than `oldest_read`: what a capped report read left out."""
    record = await connection.fetchrow(
        QUERIES["report_window_left_out"], channel_id, oldest_read.ts, oldest_read.id, since
    )
    return as_row_or_none(MessageRange, record)
