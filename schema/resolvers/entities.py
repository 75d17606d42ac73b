"""The entity and topic-profile fields of the API: `entities` (by mention count), `entity(id)` and
`topics` (recurring topics, the most recently seen first). `Query` inherits them; both types are
Relay nodes (`node(id:)`)."""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from db import pages
from runner.entities.mentions import canonical_key
from schema.context import Context
from schema.errors import client_error
from schema.types.connections import Connection
from schema.types.entity import Entity, TopicProfile
from schema.types.ids import CHANNEL, ENTITY, IdArgument, parse_id, parse_optional_id
from schema.types.paging import After, Before, First, Last, PageArgs, connection_of

MAX_QUERY_CHARS = 200


@strawberry.input(description="Entities of one channel, optionally by name (`Channel.entities`).")
class ChannelEntityFilter:
    query: str | None = strawberry.field(
        default=None,
        description="Part of a name, in any spelling (case, `-`, `_` and spaces do not matter; "
        "`postgres` finds postgresql).",
    )


@strawberry.input(description="Entities of one channel (or all), optionally by name.")
class EntityFilter(ChannelEntityFilter):
    channel_id: strawberry.ID | None = None


@strawberry.input(description="Topic profiles of one channel (or all).")
class TopicProfileFilter:
    channel_id: strawberry.ID | None = None


async def entity_list(
    info: Info[Context, None],
    filter: ChannelEntityFilter,
    channel_id: int | None,
    args: PageArgs,
) -> Connection[Entity]:
    """A page of entities, of one channel or all: `entities` and `Channel.entities`."""
    key = None
    if filter.query is not None:
        if len(filter.query) > MAX_QUERY_CHARS:
            raise client_error(
                f"filter.query is too long: at most {MAX_QUERY_CHARS} characters",
                argument="filter.query",
            )
        key = canonical_key(filter.query) or None
    filters = {"channel_id": channel_id, "key_contains": key}
    return await connection_of(info, pages.ENTITIES, filters, args, Entity.from_row)


@strawberry.type
class EntityQueries:
    @strawberry.field(
        description="Entities, the most mentioned first (then the newest): what channels talk "
        "about, canonicalized across spellings."
    )
    async def entities(
        self,
        info: Info[Context, None],
        filter: EntityFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Entity] | None:
        filter = filter or EntityFilter()
        channel_id = parse_optional_id(filter.channel_id, CHANNEL)
        args = PageArgs(first, after, last, before, default_size=20)
        return await entity_list(info, filter, channel_id, args)

    @strawberry.field(description="One entity, with the items and digests mentioning it.")
    async def entity(self, info: Info[Context, None], id: IdArgument) -> Entity | None:
        row = await info.context.loaders.entity.load(parse_id(id, ENTITY))
        return Entity.from_row(row) if row else None

    @strawberry.field(
        description="Recurring topics (topic profiles), the most recently seen first."
    )
    async def topics(
        self,
        info: Info[Context, None],
        filter: TopicProfileFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[TopicProfile] | None:
        filter = filter or TopicProfileFilter()
        filters = {"channel_id": parse_optional_id(filter.channel_id, CHANNEL)}
        args = PageArgs(first, after, last, before, default_size=20)
        return await connection_of(info, pages.TOPIC_PROFILES, filters, args, TopicProfile.from_row)
