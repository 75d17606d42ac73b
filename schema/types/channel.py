"""GraphQL types of channels and their messages, each built from its stored row (`from_row`).

A channel also carries what a dashboard shows of it, so a page of channels needs no second
request per channel: its latest digest and its open-item counts through DataLoaders (a fixed
number of statements for the whole page), and its lists (digests, tracked items,
conversations, schedules, entities) as connections built by the same code as the top-level
lists (schema/resolvers/), each a page query per channel.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, cast

import strawberry
from strawberry import relay
from strawberry.scalars import JSON
from strawberry.types import Info

from db import models
from schema.context import Context
from schema.types.activity import ACTIVITY_DESCRIPTION, ActivityDay, channel_activity
from schema.types.connections import Connection
from schema.types.ids import CHANNEL, global_id
from schema.types.paging import After, Before, First, Last, PageArgs

if TYPE_CHECKING:
    from schema.resolvers.entities import ChannelEntityFilter
    from schema.resolvers.items import ChannelTrackedItemFilter
    from schema.resolvers.queries import ChannelConversationFilter, ChannelDigestFilter
    from schema.resolvers.schedules import ChannelScheduleFilter
    from schema.types.conversation import Conversation
    from schema.types.digest import Digest, DigestSummary
    from schema.types.entity import Entity
    from schema.types.item import TrackedItem
    from schema.types.schedule import Schedule

# The types of the nested lists, named lazily: their modules import this one.
LazyDigest = Annotated["Digest", strawberry.lazy("schema.types.digest")]
LazyDigestSummary = Annotated["DigestSummary", strawberry.lazy("schema.types.digest")]
LazyTrackedItem = Annotated["TrackedItem", strawberry.lazy("schema.types.item")]
LazyConversation = Annotated["Conversation", strawberry.lazy("schema.types.conversation")]
LazySchedule = Annotated["Schedule", strawberry.lazy("schema.types.schedule")]
LazyEntity = Annotated["Entity", strawberry.lazy("schema.types.entity")]
DigestFilterArg = Annotated["ChannelDigestFilter", strawberry.lazy("schema.resolvers.queries")]
TrackedItemFilterArg = Annotated[
    "ChannelTrackedItemFilter", strawberry.lazy("schema.resolvers.items")
]
ConversationFilterArg = Annotated[
    "ChannelConversationFilter", strawberry.lazy("schema.resolvers.queries")
]
ScheduleFilterArg = Annotated[
    "ChannelScheduleFilter", strawberry.lazy("schema.resolvers.schedules")
]
EntityFilterArg = Annotated["ChannelEntityFilter", strawberry.lazy("schema.resolvers.entities")]

# What a nested list costs: said in each such field's description.
PER_CHANNEL_LIST = (
    " One page query per channel (and one count per channel if totalCount is selected): "
    "under a page of channels, ask for a small `first`."
)


@strawberry.type(
    description="How many of a channel's tracked items still wait or hold, counted exactly "
    "(the totalCount of the matching trackedItems lists, without paging)."
)
class OpenItemCounts:
    open_questions: int = strawberry.field(description="Questions nobody has answered (OPEN).")
    open_action_items: int = strawberry.field(
        description="Action items nobody has finished (OPEN)."
    )
    decisions_in_force: int = strawberry.field(
        description="Decisions still in force (IN_FORCE): settled, not open."
    )

    @strawberry.field(
        description="Questions and action items still open: trackedItems(filter: {open: true})."
    )
    def open(self) -> int:
        return self.open_questions + self.open_action_items


@strawberry.type
class Channel(relay.Node):
    id: relay.NodeID[int]
    name: str
    server_id: strawberry.ID | None = strawberry.field(
        description="The server's numeric id (servers are no nodes: it filters `channels` and "
        "`digests`)."
    )
    server_name: str | None
    external_id: str | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: models.ChannelWithServer) -> Channel:
        return cls(
            id=row.id,
            name=row.name,
            server_id=strawberry.ID(str(row.server_id)) if row.server_id is not None else None,
            server_name=row.server_name,
            external_id=row.external_id,
            created_at=row.created_at,
        )

    @strawberry.field(description="How many messages the channel holds.")
    async def message_count(self, info: Info[Context, None]) -> int:
        return await info.context.loaders.message_count.load(self.id)

    @strawberry.field(
        description="How many messages no successful digest covers yet (at their current "
        "revision): what the next triggerDigest reads."
    )
    async def uncovered_message_count(self, info: Info[Context, None]) -> int:
        return await info.context.loaders.uncovered_count.load(self.id)

    activity: list[ActivityDay] = strawberry.field(
        resolver=channel_activity, description=ACTIVITY_DESCRIPTION
    )

    @strawberry.field(
        description="The channel's newest digest (the first of `digests`), null before its "
        "first; batched: one statement for a whole page of channels."
    )
    async def last_digest(self, info: Info[Context, None]) -> LazyDigest | None:
        from schema.types.digest import Digest

        row = await info.context.loaders.last_digest.load(self.id)
        return Digest.from_row(row) if row else None

    @strawberry.field(
        description="Open questions, open action items and decisions in force, counted; "
        "batched: one statement for a whole page of channels."
    )
    async def open_item_counts(self, info: Info[Context, None]) -> OpenItemCounts:
        row = await info.context.loaders.open_item_counts.load(self.id)
        if row is None:
            return OpenItemCounts(open_questions=0, open_action_items=0, decisions_in_force=0)
        return OpenItemCounts(
            open_questions=row.open_questions,
            open_action_items=row.open_action_items,
            decisions_in_force=row.decisions_in_force,
        )

    @strawberry.field(
        description="The channel's digests, newest first, in their light form: "
        "digests(filter: {channelId}) of this channel." + PER_CHANNEL_LIST
    )
    async def digests(
        self,
        info: Info[Context, None],
        filter: DigestFilterArg | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[LazyDigestSummary] | None:
        from schema.resolvers.queries import ChannelDigestFilter, digest_list

        args = PageArgs(first, after, last, before, default_size=20)
        return await digest_list(info, filter or ChannelDigestFilter(), args, channel_id=self.id)

    @strawberry.field(
        description="The channel's tracked items, newest first, with the filter of "
        "trackedItems: `open: true` is what still waits on someone (unanswered questions, "
        "unfinished action items)." + PER_CHANNEL_LIST
    )
    async def tracked_items(
        self,
        info: Info[Context, None],
        filter: TrackedItemFilterArg | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[LazyTrackedItem] | None:
        from schema.resolvers.items import ChannelTrackedItemFilter, tracked_item_list

        args = PageArgs(first, after, last, before, default_size=20)
        return await tracked_item_list(info, filter or ChannelTrackedItemFilter(), self.id, args)

    @strawberry.field(
        description="The channel's conversations, the most recently opened first: "
        "conversations(filter: {channelId}) of this channel." + PER_CHANNEL_LIST
    )
    async def conversations(
        self,
        info: Info[Context, None],
        filter: ConversationFilterArg | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[LazyConversation] | None:
        from schema.resolvers.queries import ChannelConversationFilter, conversation_list

        args = PageArgs(first, after, last, before, default_size=20)
        return await conversation_list(info, filter or ChannelConversationFilter(), self.id, args)

    @strawberry.field(
        description="The channel's digest schedules, newest first." + PER_CHANNEL_LIST
    )
    async def schedules(
        self,
        info: Info[Context, None],
        filter: ScheduleFilterArg | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[LazySchedule] | None:
        from schema.resolvers.schedules import ChannelScheduleFilter, schedule_list

        args = PageArgs(first, after, last, before, default_size=20)
        return await schedule_list(info, filter or ChannelScheduleFilter(), self.id, args)

    @strawberry.field(
        description="The channel's entities, the most mentioned first." + PER_CHANNEL_LIST
    )
    async def entities(
        self,
        info: Info[Context, None],
        filter: EntityFilterArg | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[LazyEntity] | None:
        from schema.resolvers.entities import ChannelEntityFilter, entity_list

        args = PageArgs(first, after, last, before, default_size=20)
        return await entity_list(info, filter or ChannelEntityFilter(), self.id, args)

    @strawberry.field(
        description="Always null: digests no longer follow a timestamp mark.",
        deprecation_reason="Coverage is tracked per message; use uncoveredMessageCount.",
    )
    def last_digested_message_id(self) -> str | None:
        return None


@strawberry.type
class Message(relay.Node):
    id: relay.NodeID[int]
    channel_id: strawberry.ID
    message_id: str = strawberry.field(description="The external id (a string, always).")
    author: str
    ts: datetime
    reply_to: str | None
    attachments: JSON
    revision: int = strawberry.field(
        description="1-based number of the current text; an import that changes the text adds one."
    )
    parent_row: strawberry.Private[int | None] = None
    conversation_row: strawberry.Private[int | None] = None

    @strawberry.field(description="The text as imported.")
    async def text(self, info: Info[Context, None]) -> str:
        row = await info.context.loaders.message_text.load(self.id)
        return row.text if row else ""

    @strawberry.field(
        description="The current revision's text as extractors see it; pointers index the "
        "revision they were made from (Pointer.revisionText)."
    )
    async def normalized_text(self, info: Info[Context, None]) -> str:
        row = await info.context.loaders.message_normalized_text.load(self.id)
        return row.text if row else ""

    @strawberry.field(
        description="The earlier message this one answers (an explicit reply or the reply "
        "structure a digest worked out); null if it opens a conversation or no digest has "
        "read it yet."
    )
    async def parent(self, info: Info[Context, None]) -> Message | None:
        if self.parent_row is None:
            return None
        row = await info.context.loaders.message.load(self.parent_row)
        return Message.from_row(row) if row else None

    @strawberry.field(description="The conversation it belongs to; null until a digest reads it.")
    async def conversation(
        self, info: Info[Context, None]
    ) -> Annotated[Conversation, strawberry.lazy("schema.types.conversation")] | None:
        from schema.types.conversation import Conversation

        if self.conversation_row is None:
            return None
        row = await info.context.loaders.conversation.load(self.conversation_row)
        return Conversation.from_row(row) if row else None

    @classmethod
    def from_row(cls, row: models.MessageFields) -> Message:
        """The message without its texts: `text` and `normalizedText` load theirs when asked
        for (one query per request for each, and only if a query selects it)."""
        return cls(
            id=row.id,
            channel_id=global_id(CHANNEL, row.channel_id),
            message_id=row.external_id,
            author=row.author,
            ts=row.ts,
            reply_to=row.reply_to,
            attachments=cast(JSON, row.attachments),
            revision=row.revision,
            parent_row=row.parent_id,
            conversation_row=row.conversation_id,
        )
