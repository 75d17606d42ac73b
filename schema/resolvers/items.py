"""The tracked-item lists of the API: `openQuestions`, `actionItems`, `decisions` and the general
`trackedItems`, per channel or across channels, newest first, keyset-paginated like every list.
`Query` inherits them; a tracked item is also a Relay node (`node(id:)`).

"What is still open in this channel" is one field: `trackedItems(filter: {channelId, open:
true})`, the questions nobody answered and the action items nobody finished. Decisions in force
are settled, not open: `decisions(filter: {channelId, status: IN_FORCE})` lists them, and
`current: true` lists every item still in the state it was first said in (open, in force or
current) in one list."""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.types import Info

from db import pages
from schema.context import Context
from schema.errors import client_error
from schema.types.connections import Connection
from schema.types.ids import CHANNEL, parse_optional_id
from schema.types.item import TrackedItem, TrackedItemKind, TrackedItemStatus
from schema.types.paging import After, Before, First, Last, PageArgs, connection_of

# The states each kind can be in (as in db/migrations/0008_channel_items.sql).
KIND_STATUSES: dict[TrackedItemKind, frozenset[TrackedItemStatus]] = {
    TrackedItemKind.QUESTION: frozenset(
        {TrackedItemStatus.OPEN, TrackedItemStatus.ANSWERED, TrackedItemStatus.DROPPED}
    ),
    TrackedItemKind.ACTION_ITEM: frozenset(
        {TrackedItemStatus.OPEN, TrackedItemStatus.DONE, TrackedItemStatus.CANCELLED}
    ),
    TrackedItemKind.DECISION: frozenset(
        {TrackedItemStatus.IN_FORCE, TrackedItemStatus.SUPERSEDED, TrackedItemStatus.REVERSED}
    ),
    TrackedItemKind.KNOWLEDGE: frozenset(
        {TrackedItemStatus.CURRENT, TrackedItemStatus.SUPERSEDED, TrackedItemStatus.CONFLICT}
    ),
}


@strawberry.input(description="Open questions of one channel, or of every channel.")
class OpenQuestionFilter:
    channel_id: strawberry.ID | None = None


@strawberry.input(description="Action items of one channel or every channel.")
class ActionItemFilter:
    channel_id: strawberry.ID | None = None
    status: TrackedItemStatus | None = strawberry.field(
        default=None, description="OPEN, DONE or CANCELLED; all when null."
    )
    owner: str | None = strawberry.field(
        default=None, description="Only the items this person owes (case-insensitive)."
    )


@strawberry.input(description="Decisions of one channel or every channel.")
class DecisionFilter:
    channel_id: strawberry.ID | None = None
    status: TrackedItemStatus | None = strawberry.field(
        default=None, description="IN_FORCE, SUPERSEDED or REVERSED; all when null."
    )


@strawberry.input(description="Tracked items of one channel (`Channel.trackedItems`).")
class ChannelTrackedItemFilter:
    kind: TrackedItemKind | None = None
    status: TrackedItemStatus | None = None
    open: bool | None = strawberry.field(
        default=None,
        description="true: only what still waits on someone: questions nobody answered and "
        "action items nobody finished (status OPEN); decisions and knowledge items are never "
        "open. false: everything else.",
    )
    current: bool | None = strawberry.field(
        default=None,
        description="true: items still in the state they were first said in: questions and "
        "action items OPEN, decisions IN_FORCE, knowledge items CURRENT; false: the others "
        "(answered, dropped, done, cancelled, superseded, reversed, in conflict).",
    )
    owner: str | None = None


@strawberry.input(description="Tracked items of any kind.")
class TrackedItemFilter(ChannelTrackedItemFilter):
    channel_id: strawberry.ID | None = None


def _filters(
    channel_id: int | None,
    kind: TrackedItemKind | None,
    status: TrackedItemStatus | None,
    owner: str | None = None,
    open: bool | None = None,
    current: bool | None = None,
) -> dict[str, Any]:
    if kind is not None and status is not None and status not in KIND_STATUSES[kind]:
        allowed = ", ".join(sorted(s.name for s in KIND_STATUSES[kind]))
        raise client_error(f"filter.status: a {kind.value} is one of {allowed}")
    if owner is not None and len(owner) > 120:
        raise client_error("filter.owner is too long: at most 120 characters")
    return {
        "channel_id": channel_id,
        "kind": kind.value if kind else None,
        "status": status.value if status else None,
        "owner": owner.strip() if owner and owner.strip() else None,
        "open": open,
        "current": current,
    }


async def _items(
    info: Info[Context, None], filters: dict[str, Any], args: PageArgs
) -> Connection[TrackedItem]:
    return await connection_of(info, pages.CHANNEL_ITEMS, filters, args, TrackedItem.from_row)


async def tracked_item_list(
    info: Info[Context, None],
    filter: ChannelTrackedItemFilter,
    channel_id: int | None,
    args: PageArgs,
) -> Connection[TrackedItem]:
    """A page of tracked items, of one channel or all: `trackedItems` and
    `Channel.trackedItems`, one filter with one meaning."""
    filters = _filters(
        channel_id, filter.kind, filter.status, filter.owner, filter.open, filter.current
    )
    return await _items(info, filters, args)


@strawberry.type
class ItemQueries:
    @strawberry.field(description="Questions nobody has answered yet, newest first.")
    async def open_questions(
        self,
        info: Info[Context, None],
        filter: OpenQuestionFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[TrackedItem]:
        filter = filter or OpenQuestionFilter()
        filters = _filters(
            parse_optional_id(filter.channel_id, CHANNEL),
            TrackedItemKind.QUESTION,
            TrackedItemStatus.OPEN,
        )
        return await _items(info, filters, PageArgs(first, after, last, before, default_size=20))

    @strawberry.field(description="Action items, newest first.")
    async def action_items(
        self,
        info: Info[Context, None],
        filter: ActionItemFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[TrackedItem]:
        filter = filter or ActionItemFilter()
        filters = _filters(
            parse_optional_id(filter.channel_id, CHANNEL),
            TrackedItemKind.ACTION_ITEM,
            filter.status,
            filter.owner,
        )
        return await _items(info, filters, PageArgs(first, after, last, before, default_size=20))

    @strawberry.field(description="Decisions, newest first.")
    async def decisions(
        self,
        info: Info[Context, None],
        filter: DecisionFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[TrackedItem]:
        filter = filter or DecisionFilter()
        filters = _filters(
            parse_optional_id(filter.channel_id, CHANNEL), TrackedItemKind.DECISION, filter.status
        )
        return await _items(info, filters, PageArgs(first, after, last, before, default_size=20))

    @strawberry.field(
        description="Tracked items of every kind, newest first; `open: true` with a channel is "
        "what is still open there (unanswered questions, unfinished action items)."
    )
    async def tracked_items(
        self,
        info: Info[Context, None],
        filter: TrackedItemFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[TrackedItem]:
        filter = filter or TrackedItemFilter()
        channel_id = parse_optional_id(filter.channel_id, CHANNEL)
        args = PageArgs(first, after, last, before, default_size=20)
        return await tracked_item_list(info, filter, channel_id, args)
