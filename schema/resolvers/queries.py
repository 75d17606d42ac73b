"""Query resolvers: thin, each a keyset page or a DataLoader lookup."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from db import channels as channel_queries
from db import pages
from schema.context import Context
from schema.errors import client_error
from schema.resolvers.catchup import CatchUpQueries
from schema.resolvers.deliveries import DeliveryQueries
from schema.resolvers.documents import DocumentQueries
from schema.resolvers.entities import EntityQueries
from schema.resolvers.items import ItemQueries
from schema.resolvers.reports import ReportQueries
from schema.resolvers.schedules import ScheduleQueries
from schema.types.channel import Channel, Message
from schema.types.connections import Connection
from schema.types.conversation import Conversation, ConversationState
from schema.types.digest import Digest, DigestSummary, KnowledgeItem
from schema.types.enums import JobStatus, KnowledgeKind, SignalLevel
from schema.types.ids import (
    CHANNEL,
    CONVERSATION,
    DIGEST,
    DIGEST_JOB,
    DOCUMENT,
    LEGACY_ID_HELP,
    IdArgument,
    parse_id,
    parse_optional_id,
    parse_server_id,
)
from schema.types.job import DigestJob
from schema.types.nodes import NodeQueries
from schema.types.paging import After, Before, First, Last, PageArgs, connection_of


@strawberry.input
class MessageFilter:
    channel_id: strawberry.ID
    since: datetime | None = None
    until: datetime | None = None
    conversation_id: strawberry.ID | None = strawberry.field(
        default=None, description="Only the messages of this conversation (global id)."
    )


@strawberry.input(description="Conversations of one channel (`Channel.conversations`).")
class ChannelConversationFilter:
    state: ConversationState | None = None
    since: datetime | None = strawberry.field(
        default=None, description="Only conversations with a message at or after this time."
    )
    until: datetime | None = strawberry.field(
        default=None, description="Only conversations opened before this time."
    )


@strawberry.input
class ConversationFilter(ChannelConversationFilter):
    channel_id: strawberry.ID


@strawberry.input(description="Digests of one channel (`Channel.digests`).")
class ChannelDigestFilter:
    since: datetime | None = None
    until: datetime | None = None
    signal_quality: SignalLevel | None = None


@strawberry.input
class DigestFilter(ChannelDigestFilter):
    server_id: strawberry.ID | None = None
    channel_id: strawberry.ID | None = None


@strawberry.input(description="Channels of one server and/or by part of their name.")
class ChannelFilter:
    server_id: strawberry.ID | None = None
    name_contains: str | None = strawberry.field(
        default=None,
        description="Part of the channel's name, in any case (plain text, no wildcards).",
    )


MAX_NAME_CHARS = 200


@strawberry.input
class KnowledgeItemFilter:
    channel_id: strawberry.ID | None = None
    digest_id: strawberry.ID | None = None
    kind: KnowledgeKind | None = None
    query: str | None = strawberry.field(
        default=None, description="Full-text search (websearch syntax) over title and text."
    )
    current: bool | None = strawberry.field(
        default=None,
        description="true: only items still current (not superseded by a later item nor in "
        "conflict with one, across the channel's digests); false: only those that are not.",
    )


@strawberry.input
class DigestJobFilter:
    channel_id: strawberry.ID | None = None
    document_id: strawberry.ID | None = None
    status: JobStatus | None = None
    batch_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="The slices a coverage job cut its channel's backlog into (a DigestJob id).",
    )


async def conversation_list(
    info: Info[Context, None], filter: ChannelConversationFilter, channel_id: int, args: PageArgs
) -> Connection[Conversation]:
    """A page of the channel's conversations: `conversations` and `Channel.conversations`."""
    filters = {
        "channel_id": channel_id,
        "state": filter.state.value if filter.state else None,
        "since": filter.since,
        "until": filter.until,
    }
    return await connection_of(info, pages.CONVERSATIONS, filters, args, Conversation.from_row)


async def digest_list(
    info: Info[Context, None],
    filter: ChannelDigestFilter,
    args: PageArgs,
    *,
    channel_id: int | None,
    server_id: int | None = None,
) -> Connection[DigestSummary]:
    """A page of digests, of one channel or all: `digests` and `Channel.digests`."""
    filters = {
        "server_id": server_id,
        "channel_id": channel_id,
        "since": filter.since,
        "until": filter.until,
        "signal_quality": filter.signal_quality.value if filter.signal_quality else None,
    }
    return await connection_of(info, pages.DIGESTS, filters, args, DigestSummary.from_row)


@strawberry.type
class Query(
    NodeQueries,
    DocumentQueries,
    ReportQueries,
    EntityQueries,
    ItemQueries,
    ScheduleQueries,
    CatchUpQueries,
    DeliveryQueries,
):
    @strawberry.field(description="Channels, newest first.")
    async def channels(
        self,
        info: Info[Context, None],
        filter: ChannelFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
        server_id: Annotated[
            strawberry.ID | None,
            strawberry.argument(deprecation_reason="Use filter: {serverId}."),
        ] = None,
    ) -> Connection[Channel] | None:
        filter = filter or ChannelFilter()
        if server_id is not None and filter.server_id not in (None, server_id):
            raise client_error(
                "serverId and filter.serverId name different servers: give filter.serverId only",
                argument="serverId",
            )
        name = filter.name_contains
        if name is not None and len(name) > MAX_NAME_CHARS:
            raise client_error(
                f"filter.nameContains is too long: at most {MAX_NAME_CHARS} characters",
                argument="filter.nameContains",
            )
        filters = {
            "server_id": parse_server_id(
                filter.server_id if filter.server_id is not None else server_id
            ),
            "name_contains": name or None,
        }
        args = PageArgs(first, after, last, before, default_size=20)
        return await connection_of(info, pages.CHANNELS, filters, args, Channel.from_row)

    @strawberry.field(
        description="One channel, by its id, or by its exact name (with serverId when several "
        "servers have a channel of that name: an ambiguous name is an error); null if none."
    )
    async def channel(
        self,
        info: Info[Context, None],
        id: Annotated[strawberry.ID | None, strawberry.argument(description=LEGACY_ID_HELP)] = None,
        name: str | None = None,
        server_id: Annotated[
            strawberry.ID | None,
            strawberry.argument(description="The server of the channel `name` names."),
        ] = None,
    ) -> Channel | None:
        if (id is None) == (name is None):
            raise client_error("give the channel's id or its name, not both", argument="id")
        if id is not None:
            if server_id is not None:
                raise client_error("serverId goes with name, not id", argument="serverId")
            row = await info.context.loaders.channel.load(parse_id(id, CHANNEL))
            return Channel.from_row(row) if row else None
        assert name is not None
        if len(name) > MAX_NAME_CHARS:
            raise client_error(
                f"name is too long: at most {MAX_NAME_CHARS} characters", argument="name"
            )
        server = parse_server_id(server_id)
        async with info.context.pool.acquire() as connection:
            rows = await channel_queries.channels_named(connection, name, server)
        if len(rows) > 1:
            raise client_error(
                "several servers have a channel of that name: give serverId", argument="name"
            )
        return Channel.from_row(rows[0]) if rows else None

    @strawberry.field(description="A channel's messages, oldest first.")
    async def messages(
        self,
        info: Info[Context, None],
        filter: MessageFilter,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Message] | None:
        filters = {
            "channel_id": parse_id(filter.channel_id, CHANNEL),
            "since": filter.since,
            "until": filter.until,
            "conversation_id": parse_optional_id(filter.conversation_id, CONVERSATION),
        }
        args = PageArgs(first, after, last, before, default_size=50)
        return await connection_of(info, pages.MESSAGES, filters, args, Message.from_row)

    @strawberry.field(
        description="A channel's conversations, the most recently opened first: the threads "
        "its digests found in it (each message answers at most one earlier message)."
    )
    async def conversations(
        self,
        info: Info[Context, None],
        filter: ConversationFilter,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Conversation] | None:
        channel_id = parse_id(filter.channel_id, CHANNEL)
        args = PageArgs(first, after, last, before, default_size=20)
        return await conversation_list(info, filter, channel_id, args)

    @strawberry.field(description="Digests, newest first, in their light form.")
    async def digests(
        self,
        info: Info[Context, None],
        filter: DigestFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[DigestSummary] | None:
        filter = filter or DigestFilter()
        channel_id = parse_optional_id(filter.channel_id, CHANNEL)
        server_id = parse_server_id(filter.server_id)
        args = PageArgs(first, after, last, before, default_size=20)
        return await digest_list(info, filter, args, channel_id=channel_id, server_id=server_id)

    @strawberry.field(description="One digest with every item.")
    async def digest(self, info: Info[Context, None], id: IdArgument) -> Digest | None:
        row = await info.context.loaders.digest.load(parse_id(id, DIGEST))
        return Digest.from_row(row) if row else None

    @strawberry.field(description="Knowledge items, newest first.")
    async def knowledge_items(
        self,
        info: Info[Context, None],
        filter: KnowledgeItemFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[KnowledgeItem] | None:
        filter = filter or KnowledgeItemFilter()
        query = filter.query.strip() if filter.query else None
        if query and len(query) > 500:
            raise client_error("filter.query is too long: at most 500 characters")
        filters = {
            "channel_id": parse_optional_id(filter.channel_id, CHANNEL),
            "digest_id": parse_optional_id(filter.digest_id, DIGEST),
            "kind": filter.kind.value if filter.kind else None,
            "query": query or None,
            "current": filter.current,
        }
        args = PageArgs(first, after, last, before, default_size=20)
        return await connection_of(
            info, pages.KNOWLEDGE_ITEMS, filters, args, KnowledgeItem.from_row
        )

    @strawberry.field(description="Digest jobs, newest first.")
    async def digest_jobs(
        self,
        info: Info[Context, None],
        filter: DigestJobFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[DigestJob] | None:
        filter = filter or DigestJobFilter()
        filters = {
            "channel_id": parse_optional_id(filter.channel_id, CHANNEL),
            "document_id": parse_optional_id(filter.document_id, DOCUMENT),
            "status": filter.status.value if filter.status else None,
            "batch_id": parse_optional_id(filter.batch_id, DIGEST_JOB),
        }
        args = PageArgs(first, after, last, before, default_size=20)
        return await connection_of(info, pages.JOBS, filters, args, DigestJob.from_row)

    @strawberry.field(description="One job, for polling.")
    async def job(self, info: Info[Context, None], id: IdArgument) -> DigestJob | None:
        row = await info.context.loaders.job.load(parse_id(id, DIGEST_JOB))
        return DigestJob.from_row(row) if row else None
