"""GraphQL types of channels and their messages, each built from its stored row (`from_row`)."""

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
from schema.types.ids import CHANNEL, global_id

if TYPE_CHECKING:
    from schema.types.conversation import Conversation


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
