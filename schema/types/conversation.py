"""The Conversation node: a thread of a channel, as the digest that threaded its messages
stored it (runner/conversations/threads.py), with its state as of now."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

import strawberry
from strawberry import relay
from strawberry.types import Info

from db import models
from schema.context import Context
from schema.types.channel import Message
from schema.types.digest import Pointer
from schema.types.ids import CHANNEL, global_id


@strawberry.enum(description="Where a conversation stands.")
class ConversationState(Enum):
    ONGOING = "ongoing"
    ANSWERED = "answered"
    UNANSWERED = "unanswered"


@strawberry.type(
    description="A conversation of a channel: a message that opened it and every message that "
    "answers into it (explicit replies, or the reply structure digestd worked out)."
)
class Conversation(relay.Node):
    id: relay.NodeID[int]
    channel_id: strawberry.ID
    title: str = strawberry.field(
        description="A line of the conversation's opening, quoted exactly (see titlePointer)."
    )
    title_pointer: Pointer | None = strawberry.field(
        description="Where the title is quoted from; null only for a conversation with no text."
    )
    state: ConversationState = strawberry.field(
        description="ONGOING while its last message is within 30 minutes of the channel's "
        "newest; otherwise ANSWERED if someone other than its opener wrote in it, else "
        "UNANSWERED."
    )
    participants: list[str] = strawberry.field(description="Authors, by first message.")
    message_count: int
    first_at: datetime
    last_at: datetime
    root_message_row: strawberry.Private[int]

    @classmethod
    def from_row(cls, row: models.ConversationWithState) -> Conversation:
        pointer = Pointer.stored(
            row.title_message_id,
            row.title_message_external_id,
            row.title_char_start,
            row.title_char_end,
            row.title_revision,
        )
        return cls(
            id=row.id,
            channel_id=global_id(CHANNEL, row.channel_id),
            title=row.title,
            title_pointer=pointer,
            state=ConversationState(row.state),
            participants=list(row.participants),
            message_count=row.message_count,
            first_at=row.first_ts,
            last_at=row.last_ts,
            root_message_row=row.root_message_id,
        )

    @strawberry.field(description="The message that opened it.")
    async def root_message(self, info: Info[Context, None]) -> Message | None:
        row = await info.context.loaders.message.load(self.root_message_row)
        return Message.from_row(row) if row else None
