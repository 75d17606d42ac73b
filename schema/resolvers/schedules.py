"""The schedule fields of the API: `createSchedule`, `pauseSchedule`, `resumeSchedule` and
`deleteSchedule` (writers), the `schedule` query and the `schedules` list (newest first).
`Query` and `Mutation` inherit them; a schedule is also a Relay node (`node(id:)`).

The work is `runner/schedules/store.py`'s, shared with `digestd schedule`; a refusal (an unknown
channel or schedule, a bad cron or time zone) is a typed member of the result union.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

import asyncpg
import strawberry
from graphql import GraphQLError
from strawberry.types import Info

from db import pages
from db.models import Schedule as ScheduleRow
from runner.schedules import store as schedules
from runner.triggers import TriggerRefused
from schema.context import Context
from schema.gate.permissions import IsWriter
from schema.types.connections import Connection
from schema.types.ids import (
    CHANNEL,
    DESTINATION,
    SCHEDULE,
    IdArgument,
    decode_global_id,
    global_id,
    parse_id,
    parse_optional_id,
)
from schema.types.paging import After, Before, First, Last, PageArgs, connection_of
from schema.types.schedule import Schedule
from schema.types.shared import InvalidInputError, NotFoundError, parse_id_or_error, refusal


@strawberry.input(description="Schedules of one channel, paused or running (`Channel.schedules`).")
class ChannelScheduleFilter:
    paused: bool | None = None


@strawberry.input(description="Schedules of one channel, and/or paused or running ones.")
class ScheduleFilter(ChannelScheduleFilter):
    channel_id: strawberry.ID | None = None


@strawberry.type(description="What deleteSchedule removed (its runs went with it; its jobs stay).")
class DeletedSchedule:
    deleted_id: strawberry.ID


CreateScheduleResult = Annotated[
    Schedule | NotFoundError | InvalidInputError, strawberry.union("CreateScheduleResult")
]
PauseScheduleResult = Annotated[
    Schedule | NotFoundError | InvalidInputError, strawberry.union("PauseScheduleResult")
]
ResumeScheduleResult = Annotated[
    Schedule | NotFoundError | InvalidInputError, strawberry.union("ResumeScheduleResult")
]
DeleteScheduleResult = Annotated[
    DeletedSchedule | NotFoundError | InvalidInputError, strawberry.union("DeleteScheduleResult")
]

Change = Callable[[asyncpg.Connection, int], Awaitable[ScheduleRow]]


async def _change(
    info: Info[Context, None], id: strawberry.ID, change: Change
) -> ScheduleRow | NotFoundError | InvalidInputError:
    """Apply `change` to the schedule `id` names, or the typed refusal."""
    schedule_id = parse_id_or_error(id, SCHEDULE)
    if isinstance(schedule_id, InvalidInputError):
        return schedule_id
    try:
        async with info.context.pool.acquire() as connection:
            return await change(connection, schedule_id)
    except TriggerRefused as refused:
        return refusal(refused, {("schedule", schedule_id): id})


def _destination_refs(refs: list[str]) -> tuple[list[int], list[str], dict[tuple[str, int], str]]:
    """`deliverTo`'s entries split into destination ids (global ids of a Destination) and
    names (anything else), with the ids as the client sent them, for a NotFoundError."""
    ids: list[int] = []
    names: list[str] = []
    sent: dict[tuple[str, int], str] = {}
    for ref in refs:
        try:
            type_name, row_id = decode_global_id(ref)
        except GraphQLError:
            names.append(ref)
            continue
        if type_name != DESTINATION:
            names.append(ref)
            continue
        ids.append(row_id)
        sent[("destination", row_id)] = ref
    return ids, names, sent


async def schedule_list(
    info: Info[Context, None],
    filter: ChannelScheduleFilter,
    channel_id: int | None,
    args: PageArgs,
) -> Connection[Schedule]:
    """A page of schedules, of one channel or all: `schedules` and `Channel.schedules`."""
    filters = {"channel_id": channel_id, "paused": filter.paused}
    return await connection_of(info, pages.SCHEDULES, filters, args, Schedule.from_row)


@strawberry.type
class ScheduleQueries:
    @strawberry.field(description="One digest schedule.")
    async def schedule(self, info: Info[Context, None], id: IdArgument) -> Schedule | None:
        row = await info.context.loaders.schedule.load(parse_id(id, SCHEDULE))
        return Schedule.from_row(row) if row else None

    @strawberry.field(description="Digest schedules, newest first.")
    async def schedules(
        self,
        info: Info[Context, None],
        filter: ScheduleFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Schedule] | None:
        filter = filter or ScheduleFilter()
        channel_id = parse_optional_id(filter.channel_id, CHANNEL)
        args = PageArgs(first, after, last, before, default_size=20)
        return await schedule_list(info, filter, channel_id, args)


@strawberry.type
class ScheduleMutations:
    @strawberry.mutation(
        permission_classes=[IsWriter],
        description="Digest the channel at each slot of `cron` in `timezone` (an IANA name): "
        'e.g. "0 9 * * 1-5" in "Europe/Berlin" is 09:00 Berlin time on weekdays. A bad '
        "expression or zone, or slots closer than the minimum interval (5 minutes by default), "
        "is an InvalidInputError naming the argument (reason invalid_cron or invalid_timezone); "
        "a channel with the most schedules allowed refuses another (too_many_schedules). A slot "
        "of a channel with no new message since its last digest queues no job. `deliverTo` "
        "names destinations (by id or by name) that each of its digests is delivered to, once; "
        "an unknown name is an InvalidInputError (unknown_destination).",
    )
    async def create_schedule(
        self,
        info: Info[Context, None],
        channel_id: IdArgument,
        cron: str,
        timezone: str = "UTC",
        deliver_to: list[str] | None = None,
    ) -> CreateScheduleResult:
        channel_key = parse_id_or_error(channel_id, CHANNEL)
        if isinstance(channel_key, InvalidInputError):
            return channel_key
        ids, names, sent = _destination_refs(deliver_to or [])
        sent[("channel", channel_key)] = channel_id
        try:
            async with info.context.pool.acquire() as connection:
                row = await schedules.create_schedule(
                    connection,
                    channel_key,
                    cron,
                    timezone,
                    info.context.config.schedule_limits,
                    deliver_to_ids=ids,
                    deliver_to_names=names,
                )
        except TriggerRefused as refused:
            return refusal(refused, sent)
        return Schedule.from_row(row)

    @strawberry.mutation(
        permission_classes=[IsWriter],
        description="Pause a schedule: no slot fires until it is resumed.",
    )
    async def pause_schedule(
        self, info: Info[Context, None], id: IdArgument
    ) -> PauseScheduleResult:
        row = await _change(info, id, schedules.pause_schedule)
        return Schedule.from_row(row) if isinstance(row, ScheduleRow) else row

    @strawberry.mutation(
        permission_classes=[IsWriter],
        description="Resume a paused schedule from its next slot after now (the slots missed "
        "while paused are not caught up).",
    )
    async def resume_schedule(
        self, info: Info[Context, None], id: IdArgument
    ) -> ResumeScheduleResult:
        row = await _change(info, id, schedules.resume_schedule)
        return Schedule.from_row(row) if isinstance(row, ScheduleRow) else row

    @strawberry.mutation(
        permission_classes=[IsWriter], description="Delete a schedule; the jobs it queued stay."
    )
    async def delete_schedule(
        self, info: Info[Context, None], id: IdArgument
    ) -> DeleteScheduleResult:
        row = await _change(info, id, schedules.delete_schedule)
        if isinstance(row, ScheduleRow):
            return DeletedSchedule(deleted_id=global_id(SCHEDULE, row.id))
        return row
