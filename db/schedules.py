"""Digest schedules in Postgres: create, read, pause, resume, delete; the tick's statements
(lock the due schedules; record a firing, or a skipped one, and move to the next slot; prune old
runs that queued nothing); and the per-channel count a create checks under a channel lock.

Which slot is next is runner/schedules/cron.py's to compute; this module only stores what it is given.
What makes a slot fire exactly once is here: `due_schedules` locks due rows FOR UPDATE SKIP
LOCKED and the caller moves each past now() before its transaction commits (runner/schedules/tick.py).
The SQL is in db/queries.sql.
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

from db.models import DueSchedule, Schedule, as_row, as_row_or_none, as_rows
from db.queries import QUERIES


async def database_now(connection: asyncpg.Connection) -> datetime:
    """now() of the database (the start of the current transaction, if one is open)."""
    now: datetime = await connection.fetchval(QUERIES["database_now"])
    return now


async def insert_schedule(
    connection: asyncpg.Connection, channel_id: int, cron: str, timezone: str, next_run_at: datetime
) -> Schedule:
    record = await connection.fetchrow(
        QUERIES["insert_schedule"], channel_id, cron, timezone, next_run_at
    )
    return as_row(Schedule, record)


async def schedules_by_ids(connection: asyncpg.Connection, ids: list[int]) -> list[Schedule]:
    return as_rows(Schedule, await connection.fetch(QUERIES["schedules_by_ids"], ids))


async def schedule_for_update(connection: asyncpg.Connection, schedule_id: int) -> Schedule | None:
    """The schedule, locked until the caller's transaction ends."""
    record = await connection.fetchrow(QUERIES["schedule_for_update"], schedule_id)
    return as_row_or_none(Schedule, record)


async def pause_schedule(connection: asyncpg.Connection, schedule_id: int) -> Schedule | None:
    return as_row_or_none(
        Schedule, await connection.fetchrow(QUERIES["pause_schedule"], schedule_id)
    )


async def resume_schedule(
    connection: asyncpg.Connection, schedule_id: int, next_run_at: datetime
) -> Schedule | None:
    """Unpause, due next at `next_run_at`; a schedule that was not paused keeps its slot."""
    record = await connection.fetchrow(QUERIES["resume_schedule"], schedule_id, next_run_at)
    return as_row_or_none(Schedule, record)


async def delete_schedule(connection: asyncpg.Connection, schedule_id: int) -> Schedule | None:
    """Delete it; the row as it was, or None when there was none."""
    record = await connection.fetchrow(QUERIES["delete_schedule"], schedule_id)
    return as_row_or_none(Schedule, record)


async def due_schedules(connection: asyncpg.Connection, limit: int) -> list[DueSchedule]:
    """Up to `limit` schedules due by the database's clock, locked for the caller's transaction
    (which must be open); schedules another transaction holds are skipped."""
    return as_rows(DueSchedule, await connection.fetch(QUERIES["due_schedules"], limit))


async def record_schedule_run(
    connection: asyncpg.Connection,
    schedule_id: int,
    slot: datetime,
    next_run_at: datetime,
    job_id: int | None,
    job_created: bool,
    fired_by: str,
) -> None:
    """The firing of `slot` by process `fired_by` (its run row) and the schedule's move to
    `next_run_at`; `job_id` None records it skipped (no job queued)."""
    await connection.execute(
        QUERIES["record_schedule_run"],
        schedule_id,
        slot,
        next_run_at,
        job_id,
        job_created,
        fired_by,
        job_id is None,
    )


async def channel_has_new_messages(connection: asyncpg.Connection, channel_id: int) -> bool:
    """Whether the channel has a message no digest covers at its current revision."""
    found: bool = await connection.fetchval(QUERIES["channel_has_new_messages"], channel_id)
    return found


async def lock_channel_for_schedules(connection: asyncpg.Connection, channel_id: int) -> bool:
    """Lock the channel until the caller's transaction (which must be open) ends; False when
    there is no such channel."""
    return await connection.fetchval(QUERIES["lock_channel_for_schedules"], channel_id) is not None


async def channel_schedule_count(connection: asyncpg.Connection, channel_id: int) -> int:
    count: int = await connection.fetchval(QUERIES["channel_schedule_count"], channel_id)
    return count


async def prune_schedule_runs(
    connection: asyncpg.Connection, retention_days: int, limit: int
) -> int:
    """Delete up to `limit` runs older than `retention_days` that queued nothing (skipped, or
    whose job ended without a digest); how many were deleted."""
    deleted: int = await connection.fetchval(QUERIES["prune_schedule_runs"], retention_days, limit)
    return deleted


async def pause_unfireable_schedule(connection: asyncpg.Connection, schedule_id: int) -> None:
    await connection.execute(QUERIES["pause_unfireable_schedule"], schedule_id)
