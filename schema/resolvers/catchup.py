"""The catch-up fields of the API: `catchUp(person, since, channelIds)` (what waits on a person
across channels, cited), `people`; and the writers' `markRead` and `linkHandle`. `Query` and
`Mutation` inherit them. The work is runner/catchup/store.py's, shared with `digestd catchup`;
a refused name or handle is a typed member of a mutation's result union, and a client error
(BAD_USER_INPUT) of the query."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from db import pages
from runner.catchup import store as catchups
from runner.triggers import SubjectNotFound
from schema.context import Context
from schema.errors import client_error
from schema.gate.permissions import IsWriter
from schema.types.catchup import CatchUp, Person, ReadMarker
from schema.types.connections import Connection
from schema.types.ids import CHANNEL, parse_id
from schema.types.paging import After, Before, First, Last, PageArgs, connection_of
from schema.types.shared import InvalidInputError, NotFoundError, not_found, parse_id_or_error

# The channels one catch-up may be limited to, at most.
MAX_CHANNEL_IDS = 100

MarkReadResult = Annotated[
    ReadMarker | NotFoundError | InvalidInputError, strawberry.union("MarkReadResult")
]
LinkHandleResult = Annotated[
    Person | NotFoundError | InvalidInputError, strawberry.union("LinkHandleResult")
]


@strawberry.input(description="People whose name contains a fragment (case-insensitive).")
class PersonFilter:
    name_contains: str | None = None


@strawberry.type
class CatchUpQueries:
    @strawberry.field(
        description="What waits on a person across channels, the channel that needs them most "
        "first: open questions put to them, open action items they own, messages that name "
        "them and decisions since `since` (null: each channel's read marker, else 24 hours "
        "ago), each cited by its messages with verbatim quotes. `person` is a person's name or "
        "one of their handles; a name nobody stored is matched as a handle itself."
    )
    async def catch_up(
        self,
        info: Info[Context, None],
        person: str,
        since: datetime | None = None,
        channel_ids: Annotated[
            list[strawberry.ID] | None,
            strawberry.argument(description=f"Only these channels (at most {MAX_CHANNEL_IDS})."),
        ] = None,
    ) -> CatchUp:
        if channel_ids is not None and not 1 <= len(channel_ids) <= MAX_CHANNEL_IDS:
            raise client_error(
                f"channelIds: give 1 to {MAX_CHANNEL_IDS} channels, or leave it out",
                argument="channelIds",
            )
        ids = [parse_id(c, CHANNEL) for c in channel_ids] if channel_ids is not None else None
        try:
            async with info.context.pool.acquire() as connection:
                data = await catchups.catch_up(connection, person, since, ids)
        except catchups.CatchUpRefused as refused:
            raise client_error(refused.message, argument="person") from None
        return CatchUp.of(data)

    @strawberry.field(description="The people catch-ups know, newest first.")
    async def people(
        self,
        info: Info[Context, None],
        filter: PersonFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Person]:
        fragment = (filter.name_contains or "").strip().lower() if filter else ""
        if len(fragment) > 120:
            raise client_error("filter.nameContains is too long: at most 120 characters")
        filters = {"name_contains": fragment or None}
        args = PageArgs(first, after, last, before, default_size=20)
        return await connection_of(info, pages.PEOPLE, filters, args, Person.of)


def _refused(
    error: catchups.CatchUpRefused | SubjectNotFound, sent: str | None
) -> NotFoundError | InvalidInputError:
    if isinstance(error, SubjectNotFound):
        return not_found("channel", sent or "")
    return InvalidInputError(message=error.message, reason=error.code)


@strawberry.type
class CatchUpMutations:
    @strawberry.mutation(
        permission_classes=[IsWriter],
        description="The person has read the channel up to `until` (now when null): their next "
        "catch-up there starts after it. A marker only moves forward. The person is created "
        "on first use, with their name as a handle.",
    )
    async def mark_read(
        self,
        info: Info[Context, None],
        person: str,
        channel_id: strawberry.ID,
        until: datetime | None = None,
    ) -> MarkReadResult:
        channel = parse_id_or_error(channel_id, CHANNEL)
        if isinstance(channel, InvalidInputError):
            return channel
        try:
            async with info.context.pool.acquire() as connection:
                row, marker = await catchups.mark_read(
                    connection, person, channel, until or datetime.now(UTC)
                )
        except (catchups.CatchUpRefused, SubjectNotFound) as refused:
            return _refused(refused, channel_id)
        return ReadMarker(
            person=Person.of(row), channel_id=channel_id, read_until=marker.read_until
        )

    @strawberry.mutation(
        permission_classes=[IsWriter],
        description="Give the person another handle (an IRC nick, a Discord name), in every "
        "channel or only in `channelId`. Handles are folded (case, a leading @, IRC suffixes "
        "like alice_ or alice|away, a #1234 discriminator); a handle names one person per "
        "scope: one taken is refused (reason handle_taken). The person is created on first use.",
    )
    async def link_handle(
        self,
        info: Info[Context, None],
        person: str,
        handle: str,
        channel_id: strawberry.ID | None = None,
    ) -> LinkHandleResult:
        channel = None
        if channel_id is not None:
            parsed = parse_id_or_error(channel_id, CHANNEL)
            if isinstance(parsed, InvalidInputError):
                return parsed
            channel = parsed
        try:
            async with info.context.pool.acquire() as connection:
                row, _ = await catchups.link_handle(connection, person, handle, channel)
        except (catchups.CatchUpRefused, SubjectNotFound) as refused:
            return _refused(refused, channel_id)
        return Person.of(row)
