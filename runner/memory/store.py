"""The store step's channel memory: after a digest's items and the window's conversations are
written, link its questions, action items, decisions and knowledge items to the items the channel
already tracks, create the others, and apply the state changes the window gives evidence for (the
plan: runner/memory/plan.py), in the digest's transaction.

A catch-up digest re-reads a past window on request and changes no coverage; it changes no
channel items either, so asking for one never rewrites what the channel's state is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import asyncpg

from db import channel_items as item_queries
from db import channels as channel_queries
from db.models import ChannelItem
from runner.core.contract import Digest
from runner.core.vocabulary import KnownItem
from runner.core.window import StoredWindow, WindowMessage
from runner.memory.items import OPEN_STATUS, ItemKind, ItemRef, NewItem, TrackedItem, item_key
from runner.memory.plan import MemoryPlan, plan_items
from runner.memory.transitions import StateChange
from runner.memory.window import MemoryMessage

# The open items of each kind a digest links against: enough for months of a busy channel,
# bounded so a digest's store step costs the same whatever the channel's age.
MAX_TRACKED_ITEMS = 1000


def tracked_item(row: ChannelItem, said_texts: dict[str, str]) -> TrackedItem:
    said = said_texts.get(row.message_ids[0], "") if row.message_ids else ""
    return TrackedItem(
        row.id,
        ItemKind(row.kind),
        row.text,
        row.owner,
        row.conversation_id,
        tuple(row.message_ids),
        row.said_at,
        said,
    )


def known_items_of(rows: list[ChannelItem]) -> list[KnownItem]:
    """Tracked items as the map step is shown them (oldest first), under their keys: a
    knowledge item the model says supersedes one of them names it by that key."""
    return [KnownItem(item_key(row.id), row.kind, row.text[:200]) for row in reversed(rows)]


async def read_tracked_items(connection: asyncpg.Connection, channel_id: int) -> list[ChannelItem]:
    return await item_queries.open_channel_items(connection, channel_id, MAX_TRACKED_ITEMS)


def new_items(digest: Digest) -> list[NewItem]:
    """The digest's items the channel tracks, in section order."""
    items = [
        NewItem(ItemKind.QUESTION, i, q.text, q.asked_by, tuple(q.message_ids))
        for i, q in enumerate(digest.open_questions)
    ]
    items += [
        NewItem(ItemKind.ACTION_ITEM, i, a.text, a.owner, tuple(a.message_ids))
        for i, a in enumerate(digest.action_items)
    ]
    items += [
        NewItem(ItemKind.DECISION, i, d.text, None, tuple(d.message_ids))
        for i, d in enumerate(digest.decisions)
    ]
    for i, k in enumerate(digest.knowledge_items):
        pointed = k.content_pointer.message_id if k.content_pointer else None
        cited = tuple(dict.fromkeys([*k.message_ids, *([pointed] if pointed else [])]))
        items.append(
            NewItem(
                ItemKind.KNOWLEDGE,
                i,
                k.title,
                None,
                cited,
                k.key,
                k.supersedes_id,
                k.conflicts_with_id,
                pointed,
            )
        )
    return items


async def remember_items(
    connection: asyncpg.Connection,
    digest_id: int,
    channel_id: int,
    digest: Digest,
    window: StoredWindow,
    read: Mapping[str, WindowMessage],
) -> MemoryPlan | None:
    """Link, create and change the channel's items for a stored digest (inside the caller's
    transaction, after its items and conversations are written). `read`: the window's messages
    as the digest read them, by external id. Returns the plan applied, None for a catch-up
    digest."""
    if window.catch_up:
        return None
    tracked = await read_tracked_items(connection, channel_id)
    # Only the revision (was it edited since?) and the conversation (written in this
    # transaction) come from the database: the texts are the window's, already in memory.
    states = await channel_queries.message_states(
        connection, [key.message_id for key in window.keys]
    )
    # A message edited while the digest ran is no evidence: its text is not the one read.
    messages: list[MemoryMessage] = []
    for key in window.keys:
        state = states.get(key.message_id)
        if state is None or state[0] != key.revision:
            continue
        message = read[key.external_id]
        messages.append(
            MemoryMessage(
                key.external_id,
                message.author,
                message.ts,
                message.normalized_text,
                state[1],
                message.reply_to,
            )
        )
    # Whom each open question was put to is in the message it was asked in.
    asked = [
        row.message_ids[0]
        for row in tracked
        if row.kind == ItemKind.QUESTION.value and row.message_ids
    ]
    said_texts = {
        row.external_id: row.normalized_text
        for row in await channel_queries.messages_by_external_ids(connection, channel_id, asked)
    }
    # Pure CPU (about 2 s for 100,000 messages and 1,000 open items): off the event loop, so
    # the job's heartbeat keeps its lease meanwhile.
    plan = await asyncio.to_thread(
        plan_items,
        [tracked_item(row, said_texts) for row in tracked],
        new_items(digest),
        messages,
    )
    await _apply(connection, digest_id, channel_id, plan, window)
    return plan


async def _apply(
    connection: asyncpg.Connection,
    digest_id: int,
    channel_id: int,
    plan: MemoryPlan,
    window: StoredWindow,
) -> None:
    digest_rows = {
        (row.kind, row.position): row.id
        for row in await item_queries.digest_item_rows(connection, digest_id)
    }
    created: dict[tuple[ItemKind, int], int] = {}
    mentions: list[tuple[int, NewItem]] = []
    events: list[tuple[Any, ...]] = []
    # Created in the order they were said, whatever their kind: the API lists items newest
    # first by (created_at, id), and one digest's items share created_at.
    for new in sorted(plan.created, key=lambda created: created.said_at):
        item = new.new
        item_id = await item_queries.insert_channel_item(
            connection,
            channel_id,
            item.kind.value,
            OPEN_STATUS[item.kind],
            item.text,
            item.owner,
            new.conversation_id,
            list(item.message_ids),
            new.said_at,
            digest_id,
        )
        created[(item.kind, item.position)] = item_id
        mentions.append((item_id, item))
        pointer = _pointer_columns(new.evidence.pointer if new.evidence else None, window)
        events.append(
            (
                item_id,
                None,
                OPEN_STATUS[item.kind],
                new.said_at,
                list(item.message_ids),
                *pointer,
                digest_id,
                None,
                "first said",
            )
        )
    mentions += [(link.tracked, link.new) for link in plan.links]
    present = [(i, n) for i, n in mentions if (n.kind.value, n.position) in digest_rows]
    await item_queries.mention_channel_items(
        connection,
        digest_id,
        [item_id for item_id, _ in present],
        [digest_rows[(n.kind.value, n.position)] for _, n in present],
        [n.position for _, n in present],
    )

    def resolve(ref: ItemRef | None) -> int | None:
        if ref is None or isinstance(ref, int):
            return ref
        return created.get((ref.kind, ref.position)) or next(
            (link.tracked for link in plan.links if link.new is ref), None
        )

    for change in plan.changes:
        target = resolve(change.item)
        if target is None or not await item_queries.change_channel_item_status(
            connection, target, change.from_status, change.to_status
        ):
            continue
        events.append(_event_row(target, change, digest_id, resolve(change.related), window))
    await item_queries.insert_channel_item_events(connection, events)


def _pointer_columns(
    pointer: tuple[str, int, int, str] | None, window: StoredWindow
) -> tuple[Any, ...]:
    """(messages row, revision read, start, end, quote) of an evidence pointer, or NULLs."""
    if pointer is None:
        return (None, None, None, None, None)
    message_id, start, end, quote = pointer
    return (window.internal_ids[message_id], window.revisions.get(message_id, 1), start, end, quote)


def _event_row(
    item_id: int, change: StateChange, digest_id: int, related: int | None, window: StoredWindow
) -> tuple[Any, ...]:
    evidence = change.evidence
    return (
        item_id,
        change.from_status,
        change.to_status,
        evidence.at,
        list(evidence.message_ids),
        *_pointer_columns(evidence.pointer, window),
        digest_id,
        related,
        change.reason,
    )
