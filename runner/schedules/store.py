"""Manage digest schedules: the one path from "digest this channel on this cron" to a stored
schedule, and its pause, resume and delete, shared by the API (`createSchedule`, ...) and the
CLI (`digestd schedule ...`).

Refusals are `runner.triggers` refusals (`SubjectNotFound` for a missing channel or schedule,
`ScheduleRefused` with code `invalid_cron` or `invalid_timezone`, `TooManySchedules` with code
`too_many_schedules`), so each caller words them as it words a trigger's. `ScheduleLimits`
bounds what one schedule and one channel may cost: slots at least `min_interval` apart, at
most `per_channel` schedules per channel. Slots are computed from the database's now(), the clock the
workers' tick fires by (runner/schedules/tick.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import asyncpg

from db import deliveries as delivery_queries
from db import schedules as schedule_queries
from db.models import Schedule
from runner.delivery.store import resolve_destinations
from runner.schedules.cron import InvalidSchedule, check_min_interval, parse_schedule
from runner.triggers import SubjectNotFound, TriggerRefused

DEFAULT_MIN_INTERVAL = timedelta(minutes=5)
DEFAULT_SCHEDULES_PER_CHANNEL = 20
DEFAULT_RUN_RETENTION_DAYS = 7


@dataclass(frozen=True)
class ScheduleLimits:
    """What schedules may cost (DIGESTD_SCHEDULE_MIN_INTERVAL_SECONDS,
    DIGESTD_SCHEDULES_PER_CHANNEL, DIGESTD_SCHEDULE_RUN_RETENTION_DAYS)."""

    min_interval: timedelta = DEFAULT_MIN_INTERVAL
    per_channel: int = DEFAULT_SCHEDULES_PER_CHANNEL
    # Skipped and empty runs older than this are pruned by the tick.
    run_retention_days: int = DEFAULT_RUN_RETENTION_DAYS


class ScheduleRefused(TriggerRefused):
    """A cron expression or time zone that cannot schedule; `field` names the argument and the
    code is `invalid_<field>`."""

    def __init__(self, invalid: InvalidSchedule) -> None:
        super().__init__(str(invalid), code=f"invalid_{invalid.field}")
        self.field = invalid.field


class TooManySchedules(TriggerRefused):
    """The channel already has the most schedules one channel may have."""

    def __init__(self, channel_id: int, limit: int) -> None:
        super().__init__(
            # The caller named the channel: its row id would mean nothing to an API client.
            f"the channel already has {limit} schedules, the most one channel may "
            "have (DIGESTD_SCHEDULES_PER_CHANNEL): delete one first",
            code="too_many_schedules",
        )
        self.channel_id = channel_id


async def create_schedule(
    connection: asyncpg.Connection,
    channel_id: int,
    cron: str,
    timezone: str,
    limits: ScheduleLimits = ScheduleLimits(),
    *,
    deliver_to_ids: Sequence[int] = (),
    deliver_to_names: Sequence[str] = (),
) -> Schedule:
    """A schedule digesting the channel at each slot of `cron` in `timezone`, first due at the
    next slot after now, its digests delivered to the destinations named (by id or by name).
    Raises ScheduleRefused (a bad expression or zone, or slots closer than
    `limits.min_interval`), TooManySchedules, SubjectNotFound or DestinationRefused (an unknown
    destination name)."""
    try:
        spec = parse_schedule(cron, timezone)
        start = await schedule_queries.database_now(connection)
        # Up to a thousand slots walked: off the event loop, and before any lock is taken.
        await asyncio.to_thread(check_min_interval, spec, limits.min_interval, start)
    except InvalidSchedule as invalid:
        raise ScheduleRefused(invalid) from None
    async with connection.transaction():
        # The channel row locked: two creates at once cannot both pass the count below.
        if not await schedule_queries.lock_channel_for_schedules(connection, channel_id):
            raise SubjectNotFound("channel", channel_id)
        if (
            await schedule_queries.channel_schedule_count(connection, channel_id)
            >= limits.per_channel
        ):
            raise TooManySchedules(channel_id, limits.per_channel)
        destination_ids = await resolve_destinations(connection, deliver_to_ids, deliver_to_names)
        now = await schedule_queries.database_now(connection)
        schedule = await schedule_queries.insert_schedule(
            connection, channel_id, spec.cron, spec.timezone, spec.next_after(now)
        )
        if destination_ids:
            await delivery_queries.link_schedule_destinations(
                connection, schedule.id, destination_ids
            )
        return schedule


async def pause_schedule(connection: asyncpg.Connection, schedule_id: int) -> Schedule:
    """Pause it (idempotent): no slot fires until it is resumed."""
    return _found(await schedule_queries.pause_schedule(connection, schedule_id), schedule_id)


async def resume_schedule(connection: asyncpg.Connection, schedule_id: int) -> Schedule:
    """Resume it (idempotent), due at its first slot after now: the slots that passed while it
    was paused are not caught up (that is what pausing asked for)."""
    async with connection.transaction():
        row = _found(
            await schedule_queries.schedule_for_update(connection, schedule_id), schedule_id
        )
        try:
            spec = parse_schedule(row.cron, row.timezone)
        except InvalidSchedule as invalid:  # its zone left the system's zone data
            raise ScheduleRefused(invalid) from None
        now = await schedule_queries.database_now(connection)
        resumed = await schedule_queries.resume_schedule(
            connection, schedule_id, spec.next_after(now)
        )
        return _found(resumed, schedule_id)


async def delete_schedule(connection: asyncpg.Connection, schedule_id: int) -> Schedule:
    """Delete it with its runs (the jobs it queued stay); the row as it was."""
    return _found(await schedule_queries.delete_schedule(connection, schedule_id), schedule_id)


def _found(row: Schedule | None, schedule_id: int) -> Schedule:
    if row is None:
        raise SubjectNotFound("schedule", schedule_id)
    return row
