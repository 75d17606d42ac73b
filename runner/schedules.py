"""Manage digest schedules: the one path from "digest this channel on this cron" to a stored
schedule, and its pause, resume and delete, shared by the API (`createSchedule`, ...) and the
CLI (`digestd schedule ...`).

Refusals are `runner.triggers` refusals (`SubjectNotFound` for a missing channel or schedule,
`ScheduleRefused` with code `invalid_cron` or `invalid_timezone`), so each caller words
them as it words a trigger's. Slots are computed from the database's now(), the clock the
workers' tick fires by (runner/scheduler.py).
"""

from __future__ import annotations

import asyncpg

from db import channels as channel_queries
from db import schedules as schedule_queries
from db.models import Schedule
from runner.cron import InvalidSchedule, parse_schedule
from runner.triggers import SubjectNotFound, TriggerRefused

class ScheduleRefused(TriggerRefused):
    """A cron expression or time zone that cannot schedule; `field` names the argument and the
    code is `invalid_<field>`."""

    def __init__(self, invalid: InvalidSchedule) -> None:
        super().__init__(str(invalid), code=f"invalid_{invalid.field}")
        self.field = invalid.field


async def create_schedule(
    connection: asyncpg.Connection, channel_id: int, cron: str, timezone: str
) -> Schedule:
    """A schedule digesting the channel at each slot of `cron` in `timezone`, first due at the
    next slot after now. Raises ScheduleRefused or SubjectNotFound."""
    try:
        spec = parse_schedule(cron, timezone)
    except InvalidSchedule as invalid:
        raise ScheduleRefused(invalid) from None
    async with connection.transaction():
        if await channel_queries.channel_by_id(connection, channel_id) is None:
            raise SubjectNotFound(f"no channel with id {channel_id}")
        now = await schedule_queries.database_now(connection)
        return await schedule_queries.insert_schedule(
            connection, channel_id, spec.cron, spec.timezone, spec.next_after(now)
        )


async def pause_schedule(connection: asyncpg.Connection, schedule_id: int) -> Schedule:
    """Pause it (idempotent): no slot fires until it is resumed."""
    return _found(await schedule_queries.pause_schedule(connection, schedule_id), schedule_id)


async def resume_schedule(connection: asyncpg.Connection, schedule_id: int) -> Schedule:
    """Resume it (idempotent), due at its first slot after now: the slots that passed while it
    was paused are not caught up (that is what pausing asked for)."""
    async with connection.transaction():
        row = _found(await schedule_queries.schedule_for_update(connection, schedule_id), schedule_id)
        try:
            spec = parse_schedule(row.cron, row.timezone)
        except InvalidSchedule as invalid:  # its zone left the system's zone data
            raise ScheduleRefused(invalid) from None
        now = await schedule_queries.database_now(connection)
        resumed = await schedule_queries.resume_schedule(connection, schedule_id, spec.next_after(now))
        return _found(resumed, schedule_id)


async def delete_schedule(connection: asyncpg.Connection, schedule_id: int) -> Schedule:
    """Delete it with its runs (the jobs it queued stay); the row as it was."""
    return _found(await schedule_queries.delete_schedule(connection, schedule_id), schedule_id)


def _found(row: Schedule | None, schedule_id: int) -> Schedule:
    if row is None:
        raise SubjectNotFound(f"no schedule with id {schedule_id}")
    return row
