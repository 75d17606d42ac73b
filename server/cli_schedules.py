"""`digestd schedule add CHANNEL CRON [--tz ZONE] [--deliver DESTINATION]...`, `schedule list [--channel NAME]`, and
`schedule pause|resume|delete ID`: digest schedules from the command line, through the same
`runner/schedules/store.py` as the API (with --json: the API's field names and global ids).

The workers fire the schedules (`digestd worker`, `digestd serve`); these commands only store
them."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from db import channels as channel_queries
from db import pages
from db.models import Schedule
from runner.schedules import store as schedules
from runner.schedules.cron import InvalidSchedule, parse_schedule
from runner.triggers import TriggerRefused
from schema.types.ids import (
    CHANNEL,
    DIGEST_JOB,
    SCHEDULE,
    cli_row_id,
    global_id,
    optional_global_id,
)
from server.cli_json import emit, refuse
from server.cli_text import one_line, say
from server.runtime import Runtime, schedule_limits

COMMAND = "digestd schedule"
CHANGES = {
    "pause": schedules.pause_schedule,
    "resume": schedules.resume_schedule,
    "delete": schedules.delete_schedule,
}


def checked_cron(args: argparse.Namespace) -> str | None:
    """`add`'s cron and zone checked before anything is opened: the one-line problem, or None."""
    if args.action != "add":
        return None
    try:
        parse_schedule(args.cron, args.tz)
    except InvalidSchedule as invalid:
        return str(invalid).replace("timezone:", "--tz:", 1)
    return None


def schedule_json(row: Schedule) -> dict[str, Any]:
    return {
        "id": global_id(SCHEDULE, row.id),
        "channelId": global_id(CHANNEL, row.channel_id),
        "cron": row.cron,
        "timezone": row.timezone,
        "paused": row.paused,
        "nextRunAt": None if row.paused else row.next_run_at.isoformat(),
        "lastRunAt": row.last_run_at.isoformat() if row.last_run_at else None,
        "lastJobId": optional_global_id(DIGEST_JOB, row.last_job_id),
        "createdAt": row.created_at.isoformat(),
    }


def _local(moment: datetime | None, zone: str) -> str:
    """A time as the schedule's zone shows it, with UTC beside it when they differ."""
    if moment is None:
        return "-"
    local = moment.astimezone(ZoneInfo(zone))
    shown = local.strftime("%Y-%m-%d %H:%M:%S %Z")
    if local.utcoffset():
        shown += moment.strftime(" (%H:%M UTC)")
    return shown


def schedule_line(row: Schedule, channel_name: str) -> str:
    state = "paused" if row.paused else f"next {_local(row.next_run_at, row.timezone)}"
    last = f"last {_local(row.last_run_at, row.timezone)}" if row.last_run_at else "never ran"
    job = f" (job {row.last_job_id})" if row.last_job_id else ""
    return f"schedule {row.id}  {channel_name}  {row.cron!r} {row.timezone}  {state}  {last}{job}"


async def schedule(runtime: Runtime, args: argparse.Namespace, channel_id: int | None) -> int:
    """Run the `schedule` action; `channel_id` is the resolved CHANNEL of add / --channel."""
    if args.action == "list":
        return await _list(runtime, channel_id, as_json=args.json)
    try:
        async with runtime.pool.acquire() as connection:
            if args.action == "add":
                assert channel_id is not None
                row = await schedules.create_schedule(
                    connection,
                    channel_id,
                    args.cron,
                    args.tz,
                    schedule_limits(runtime.settings),
                    deliver_to_names=args.deliver,
                )
            else:
                schedule_id = cli_row_id(args.id, SCHEDULE)
                if schedule_id is None:
                    return refuse(COMMAND, f"{args.id!r} is not a schedule id", args.json)
                row = await CHANGES[args.action](connection, schedule_id)
            channel = await channel_queries.channel_by_id(connection, row.channel_id)
    except TriggerRefused as refused:
        return refuse(COMMAND, refused.message, args.json)
    done = {"add": "added", "pause": "paused", "resume": "resumed", "delete": "deleted"}
    if args.json:
        emit({args.action if args.action != "add" else "schedule": schedule_json(row)})
    else:
        say(schedule_line(row, one_line(channel.name) if channel else "?"))
    print(f"schedule {row.id} {done[args.action]}", file=sys.stderr)
    return 0


async def _list(runtime: Runtime, channel_id: int | None, *, as_json: bool) -> int:
    rows: list[Schedule] = []
    cursor: str | None = None
    async with runtime.pool.acquire() as connection:
        while True:
            page = await pages.fetch_page(
                connection,
                pages.SCHEDULES,
                {"channel_id": channel_id},
                first=pages.MAX_PAGE_SIZE,
                after=cursor,
            )
            rows.extend(page.rows)
            if not page.has_next_page or not page.rows:
                break
            cursor = page.cursor_of(page.rows[-1])
        ids = sorted({row.channel_id for row in rows})
        names = {c.id: c.name for c in await channel_queries.channels_by_ids(connection, ids)}
    if as_json:
        emit({"schedules": [schedule_json(row) for row in rows]})
        return 0
    for row in rows:
        say(schedule_line(row, one_line(names.get(row.channel_id, "?"))))
    if not rows:
        print("no schedules", file=sys.stderr)
    return 0
