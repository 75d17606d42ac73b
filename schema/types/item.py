"""Channel items: a question, action item, decision or knowledge item with an identity across the
channel's digests, its state, the history of its state with the evidence of each change, and the
digests that mention it.

Named `TrackedItem`, not `OpenQuestion`/`ActionItem`/`Decision`: those types are what one
digest said (a row of that digest, without identity, state or history), and every client of
`Digest.openQuestions` reads them as such. A tracked item is the thing those rows speak of;
`mentions` leads back to them."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Annotated

import strawberry
from strawberry import relay
from strawberry.types import Info

from db import models
from schema.context import Context
from schema.gate.bounded_lists import ITEM_MENTIONS, MAX_ITEM_MENTIONS, capped
from schema.types.digest import DigestSummary, Pointer
from schema.types.ids import CHANNEL, CONVERSATION, TRACKED_ITEM, global_id, optional_global_id


@strawberry.enum(description="What a tracked item is.")
class TrackedItemKind(Enum):
    QUESTION = "question"
    ACTION_ITEM = "action_item"
    DECISION = "decision"
    KNOWLEDGE = "knowledge"


@strawberry.enum(
    description="Where a tracked item stands. Questions: OPEN, ANSWERED, DROPPED; action "
    "items: OPEN, DONE, CANCELLED; decisions: IN_FORCE, SUPERSEDED, REVERSED; knowledge "
    "items: CURRENT, SUPERSEDED, CONFLICT."
)
class TrackedItemStatus(Enum):
    OPEN = "open"
    ANSWERED = "answered"
    DROPPED = "dropped"
    DONE = "done"
    CANCELLED = "cancelled"
    IN_FORCE = "in_force"
    SUPERSEDED = "superseded"
    REVERSED = "reversed"
    CURRENT = "current"
    CONFLICT = "conflict"


@strawberry.type(description="One change of a tracked item's state and what it rests on.")
class ItemEvent:
    from_status: TrackedItemStatus | None = strawberry.field(
        description="Null for the event that opened the item (where it was first said)."
    )
    to_status: TrackedItemStatus
    at: datetime = strawberry.field(description="The time of the evidence message.")
    evidence_message_ids: list[str] = strawberry.field(
        description="External ids of the messages the change rests on."
    )
    pointer: Pointer | None = strawberry.field(
        description="The verbatim words of the evidence (an answer, a 'merged'), when it is "
        "verbatim; resolvedText is the quote."
    )
    reason: str
    related_item_id: strawberry.ID | None = strawberry.field(
        description="The item that superseded, reversed or contradicts this one."
    )
    digest_row: strawberry.Private[int | None]

    @classmethod
    def from_row(cls, row: models.ChannelItemEventWithMessage) -> ItemEvent:
        pointer = Pointer.stored(
            row.pointer_message_id,
            row.pointer_external_id,
            row.pointer_char_start,
            row.pointer_char_end,
            row.pointer_revision,
        )
        return cls(
            from_status=TrackedItemStatus(row.from_status) if row.from_status else None,
            to_status=TrackedItemStatus(row.to_status),
            at=row.at,
            evidence_message_ids=list(row.evidence_ids),
            pointer=pointer,
            reason=row.reason,
            related_item_id=optional_global_id(TRACKED_ITEM, row.related_item_id),
            digest_row=row.digest_id,
        )

    @strawberry.field(description="The digest whose window held the evidence.")
    async def digest(self, info: Info[Context, None]) -> DigestSummary | None:
        if self.digest_row is None:
            return None
        row = await info.context.loaders.digest.load(self.digest_row)
        return DigestSummary.from_row(row) if row else None


@strawberry.type(description="A digest that speaks of a tracked item, and where in it.")
class ItemMention:
    position: int = strawberry.field(
        description="The item's position in that digest's section of its kind."
    )
    digest_row: strawberry.Private[int]

    @strawberry.field
    async def digest(self, info: Info[Context, None]) -> DigestSummary | None:
        row = await info.context.loaders.digest.load(self.digest_row)
        return DigestSummary.from_row(row) if row else None


@strawberry.type(
    description="A question, action item, decision or knowledge item of a channel, the same "
    "one across the digests that speak of it, with its state and how it got there."
)
class TrackedItem(relay.Node):
    id: relay.NodeID[int]
    channel_id: strawberry.ID
    kind: TrackedItemKind
    status: TrackedItemStatus
    text: str = strawberry.field(description="As its first digest said it.")
    owner: str | None = strawberry.field(
        description="Who owes an action item; who asked a question; null when not known."
    )
    conversation_id: strawberry.ID | None = strawberry.field(
        description="The conversation it was said in, when known."
    )
    message_ids: list[str] = strawberry.field(description="Where it was first said.")
    first_said_at: datetime
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: models.ChannelItem) -> TrackedItem:
        return cls(
            id=row.id,
            channel_id=global_id(CHANNEL, row.channel_id),
            kind=TrackedItemKind(row.kind),
            status=TrackedItemStatus(row.status),
            text=row.text,
            owner=row.owner,
            conversation_id=optional_global_id(CONVERSATION, row.conversation_id),
            message_ids=list(row.message_ids),
            first_said_at=row.said_at,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )

    @strawberry.field(description="Its states, oldest first, each with its evidence.")
    async def history(self, info: Info[Context, None]) -> list[ItemEvent]:
        rows = await info.context.loaders.item_history.load(self.id)
        return [ItemEvent.from_row(row) for row in rows]

    @strawberry.field(
        description="The latest digests that mention it, oldest first (`last` of them; "
        "mentionCount counts them all)."
    )
    async def mentions(
        self,
        info: Info[Context, None],
        last: Annotated[
            int,
            strawberry.argument(
                description=f"How many of the latest to return, 1 to {MAX_ITEM_MENTIONS}."
            ),
        ] = ITEM_MENTIONS,
    ) -> list[ItemMention]:
        rows = await info.context.loaders.item_mentions.load(self.id)
        latest = capped(rows[::-1], last, MAX_ITEM_MENTIONS, argument="last")[::-1]
        return [ItemMention(position=row.position, digest_row=row.digest_id) for row in latest]

    @strawberry.field(description="How many digests mention it (mentions lists the latest).")
    async def mention_count(self, info: Info[Context, None]) -> int:
        rows = await info.context.loaders.item_mentions.load(self.id)
        return rows[0].owner_total if rows else 0
