"""The commands that read what digestd stored: `digestd channels`, `digests CHANNEL`, `open
CHANNEL` and `conversations CHANNEL` (`show` is server/cli_show.py).

They read through the same db/ calls as the API (its keyset lists, db/pages.py; the channel
memory's tracked items) and, with --json, print one object with the API's field names and global
ids. As text, every stored string is made safe for a terminal (server/cli_text.py)."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, TypeVar

import asyncpg
from sqlmodel import SQLModel

from db import channels as channel_queries
from db import pages
from db.models import ChannelItem, ChannelOverview, ChannelWithServer, ConversationWithState, Digest
from runner.core.markdown_text import escape_inline as md
from schema.types.ids import (
    CHANNEL,
    CONVERSATION,
    DIGEST,
    TRACKED_ITEM,
    global_id,
    optional_global_id,
)
from server.cli_json import emit, refuse
from server.cli_runtime import channel_named, with_runtime
from server.cli_text import one_line, say
from server.runtime import Runtime
from server.settings import Settings

Row = TypeVar("Row", bound=SQLModel)
NO_OWNER = "(no owner)"


def when(moment: datetime | None) -> str:
    """A time as the CLI shows it: minutes, in UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if moment else "-"


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


async def rows_of(
    connection: asyncpg.Connection,
    spec: pages.ListSpec[Row],
    filters: dict[str, Any],
    limit: int | None = None,
) -> list[Row]:
    """The list's rows in its order, page by page, at most `limit` (all when None)."""
    rows: list[Row] = []
    cursor: str | None = None
    while limit is None or len(rows) < limit:
        size = pages.MAX_PAGE_SIZE if limit is None else min(pages.MAX_PAGE_SIZE, limit - len(rows))
        page = await pages.fetch_page(connection, spec, filters, first=size, after=cursor)
        rows.extend(page.rows)
        if not page.has_next_page or not page.rows:
            break
        cursor = page.cursor_of(page.rows[-1])
    return rows


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Left-aligned columns, two spaces apart (the last column is not padded)."""
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *rows]
    ]


def channel_json(row: ChannelWithServer) -> dict[str, Any]:
    return {
        "id": global_id(CHANNEL, row.id),
        "name": row.name,
        # Servers are no nodes: their ids stay numeric strings, as the API gives them.
        "serverId": None if row.server_id is None else str(row.server_id),
        "server": row.server_name,
    }


def channel_label(row: ChannelWithServer, escape: Callable[[str], str] = one_line) -> str:
    """`#name on server`, one line, safe for a terminal (`escape=md`: for a Markdown line)."""
    server = f" on {escape(row.server_name)}" if row.server_name else ""
    return f"#{escape(row.name)}{server}"


def _reading(settings: Settings, body: Callable[[Runtime], Coroutine[Any, Any, int]]) -> int:
    return asyncio.run(with_runtime(settings, body))


async def _channel(
    runtime: Runtime, args: argparse.Namespace, command: str
) -> ChannelWithServer | int:
    """The channel CHANNEL names (a name, a numeric id or the API's global id), or the exit
    status of the refusal already printed."""
    try:
        channel_id = await channel_named(runtime, args.channel, args.server)
    except ValueError as error:
        return refuse(command, str(error), args.json, status=1)
    async with runtime.pool.acquire() as connection:
        row = await channel_queries.channel_by_id(connection, channel_id)
    assert row is not None
    return row


def _checked_limit(args: argparse.Namespace, command: str) -> int | None:
    """The exit status of a refused --limit, or None when it is usable."""
    if args.limit < 1:
        return refuse(command, f"--limit must be at least 1, got {args.limit}", args.json)
    return None


def cmd_channels(args: argparse.Namespace, settings: Settings) -> int:
    async def body(runtime: Runtime) -> int:
        async with runtime.pool.acquire() as connection:
            rows = await channel_queries.channel_overviews(connection)
        if args.json:
            emit({"channels": [overview_json(row) for row in rows]})
            return 0
        if not rows:
            say("no channels: `digestd import PATH` imports one")
            return 0
        cells = [
            [
                one_line(row.name),
                one_line(row.server_name or "-"),
                str(row.message_count),
                when(row.last_digest_at),
                str(row.open_questions),
                str(row.open_action_items),
                str(row.decisions_in_force),
            ]
            for row in rows
        ]
        headers = ["CHANNEL", "SERVER", "MESSAGES", "LAST DIGEST", "QUESTIONS", "ACTIONS"]
        for line in table([*headers, "DECISIONS"], cells):
            say(line)
        return 0

    return _reading(settings, body)


def overview_json(row: ChannelOverview) -> dict[str, Any]:
    return {
        **channel_json(row),
        "messageCount": row.message_count,
        "lastDigestAt": iso(row.last_digest_at),
        "openQuestions": row.open_questions,
        "openActionItems": row.open_action_items,
        "decisionsInForce": row.decisions_in_force,
    }


def digest_json(row: Digest) -> dict[str, Any]:
    return {
        "id": global_id(DIGEST, row.id),
        "title": row.title,
        "createdAt": iso(row.created_at),
        "windowStart": iso(row.window_start),
        "windowEnd": iso(row.window_end),
        "messageCount": row.message_count,
        "signalQuality": {"level": row.signal_quality.upper(), "reason": row.signal_reason},
    }


def cmd_digests(args: argparse.Namespace, settings: Settings) -> int:
    command = "digestd digests"

    async def body(runtime: Runtime) -> int:
        channel = await _channel(runtime, args, command)
        if isinstance(channel, int):
            return channel
        async with runtime.pool.acquire() as connection:
            rows = await rows_of(connection, pages.DIGESTS, {"channel_id": channel.id}, args.limit)
        if args.json:
            emit({"channel": channel_json(channel), "digests": [digest_json(r) for r in rows]})
            return 0
        if not rows:
            say(f"{channel_label(channel)}: no digests yet (`digestd digest CHANNEL --wait`)")
            return 0
        cells = [
            [
                str(row.id),
                when(row.created_at),
                f"{when(row.window_start)} → {when(row.window_end)}",
                str(row.message_count),
                row.signal_quality,
                one_line(row.title),
            ]
            for row in rows
        ]
        for line in table(["ID", "MADE", "WINDOW", "MESSAGES", "SIGNAL", "TITLE"], cells):
            say(line)
        return 0

    refused = _checked_limit(args, command)
    return refused if refused is not None else _reading(settings, body)


def item_json(row: ChannelItem) -> dict[str, Any]:
    return {
        "id": global_id(TRACKED_ITEM, row.id),
        "kind": row.kind.upper(),
        "status": row.status.upper(),
        "text": row.text,
        "owner": row.owner,
        "conversationId": optional_global_id(CONVERSATION, row.conversation_id),
        "messageIds": list(row.message_ids),
        "firstSaidAt": iso(row.said_at),
    }


def by_owner(items: list[ChannelItem]) -> list[tuple[str | None, list[ChannelItem]]]:
    """Action items grouped by owner (case folded, first spelling kept), owners by name, the
    items nobody owns last; each group newest first, as the list was."""
    groups: dict[str | None, tuple[str | None, list[ChannelItem]]] = {}
    for item in items:
        key = item.owner.casefold() if item.owner else None
        groups.setdefault(key, (item.owner, []))[1].append(item)
    owned = sorted((key, group) for key, group in groups.items() if key is not None)
    return [group for _, group in owned] + ([groups[None]] if None in groups else [])


def item_line(row: ChannelItem) -> str:
    cited = ", ".join(md(i) for i in row.message_ids[:4]) + (
        " …" if len(row.message_ids) > 4 else ""
    )
    return f"- {md(row.text)} (since {when(row.said_at)}; msg {cited})"


def cmd_open(args: argparse.Namespace, settings: Settings) -> int:
    async def body(runtime: Runtime) -> int:
        channel = await _channel(runtime, args, "digestd open")
        if isinstance(channel, int):
            return channel
        # What `trackedItems(filter: {channelId, open: true})` lists, and the decisions
        # `decisions(filter: {channelId, status: IN_FORCE})` does.
        async with runtime.pool.acquire() as connection:
            still_open = await rows_of(
                connection, pages.CHANNEL_ITEMS, {"channel_id": channel.id, "open": True}
            )
            decisions = await rows_of(
                connection,
                pages.CHANNEL_ITEMS,
                {"channel_id": channel.id, "kind": "decision", "status": "in_force"},
            )
        questions = [item for item in still_open if item.kind == "question"]
        owners = by_owner([item for item in still_open if item.kind == "action_item"])
        if args.json:
            emit(
                {
                    "channel": channel_json(channel),
                    "openQuestions": [item_json(item) for item in questions],
                    "actionItemsByOwner": [
                        {"owner": owner, "items": [item_json(item) for item in items]}
                        for owner, items in owners
                    ],
                    "decisionsInForce": [item_json(item) for item in decisions],
                }
            )
            return 0
        lines = [f"# Open in {channel_label(channel, md)}"]
        lines += ["", f"## Open questions ({len(questions)})", *map(item_line, questions)]
        actions = sum(len(items) for _, items in owners)
        lines += ["", f"## Action items ({actions})"]
        for owner, items in owners:
            lines += ["", f"### {md(owner) if owner else NO_OWNER}", *map(item_line, items)]
        lines += ["", f"## Decisions in force ({len(decisions)})", *map(item_line, decisions)]
        say("\n".join(lines))
        return 0

    return _reading(settings, body)


def conversation_json(row: ConversationWithState) -> dict[str, Any]:
    return {
        "id": global_id(CONVERSATION, row.id),
        "title": row.title,
        "state": row.state.upper(),
        "participants": list(row.participants),
        "messageCount": row.message_count,
        "firstAt": iso(row.first_ts),
        "lastAt": iso(row.last_ts),
    }


def participants(names: list[str], shown: int = 3) -> str:
    more = f" +{len(names) - shown}" if len(names) > shown else ""
    return ", ".join(one_line(name) for name in names[:shown]) + more


def cmd_conversations(args: argparse.Namespace, settings: Settings) -> int:
    command = "digestd conversations"

    async def body(runtime: Runtime) -> int:
        channel = await _channel(runtime, args, command)
        if isinstance(channel, int):
            return channel
        async with runtime.pool.acquire() as connection:
            rows = await rows_of(
                connection, pages.CONVERSATIONS, {"channel_id": channel.id}, args.limit
            )
        if args.json:
            emit(
                {
                    "channel": channel_json(channel),
                    "conversations": [conversation_json(row) for row in rows],
                }
            )
            return 0
        if not rows:
            say(f"{channel_label(channel)}: no conversations yet (a digest threads the messages)")
            return 0
        cells = [
            [
                str(row.id),
                row.state,
                str(row.message_count),
                when(row.first_ts),
                participants(list(row.participants)),
                one_line(row.title),
            ]
            for row in rows
        ]
        for line in table(["ID", "STATE", "MESSAGES", "STARTED", "PARTICIPANTS", "TITLE"], cells):
            say(line)
        return 0

    refused = _checked_limit(args, command)
    return refused if refused is not None else _reading(settings, body)
