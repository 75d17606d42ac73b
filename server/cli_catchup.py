"""`digestd catchup PERSON [--since 2d|ISO] [--channel CH]... [--mark-read] [--json]`: what waits
on a person across channels (runner/catchup/store.py), printed as cited Markdown
(runner/exports/catchup.py) or, with --json, one object with the API's field names; --mark-read
then moves the person's read marker of each channel shown (and each given) to the catch-up's
time, so the next one starts there. `--deliver NAME` queues it for a destination instead (any
kind: a Slack or Discord DM webhook, e-mail), sent by the workers' delivery loop."""

from __future__ import annotations

import argparse
import asyncio
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from runner.catchup import store as catchups
from runner.catchup.ranking import EntryKind
from runner.catchup.sections import CatchUp
from runner.delivery.store import deliver_catch_up
from runner.exports.catchup import catch_up_markdown
from runner.triggers import TriggerRefused
from schema.types.ids import CHANNEL, DELIVERY, MESSAGE, TRACKED_ITEM, global_id, optional_global_id
from server.cli_json import emit, refuse
from server.cli_runtime import channel_named, with_runtime
from server.cli_text import say
from server.runtime import Runtime
from server.settings import Settings

COMMAND = "digestd catchup"
_DURATION = re.compile(r"(\d{1,6})([mhdw])\Z")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str | None, now: datetime) -> datetime | None:
    """--since as a time: `2d` is two days before `now`, else an ISO 8601 time (UTC when it
    names no zone); ValueError with the line to print."""
    if text is None:
        return None
    cleaned = text.strip()
    duration = _DURATION.match(cleaned)
    if duration:
        return now - timedelta(**{_UNITS[duration[2]]: int(duration[1])})
    try:
        moment = datetime.fromisoformat(cleaned.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"--since {text!r} is neither a duration (30m, 12h, 2d, 1w) nor an ISO 8601 time"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def catch_up_json(data: CatchUp) -> dict[str, Any]:
    """The catch-up with the field names and ids of the API's `catchUp`."""
    return {
        "person": data.person,
        "known": data.person_id is not None,
        "handles": list(data.handles),
        "since": data.since.isoformat() if data.since else None,
        "defaultSince": data.default_since.isoformat(),
        "generatedAt": data.generated_at.isoformat(),
        "truncated": data.truncated,
        "channels": [
            {
                "channelId": global_id(CHANNEL, section.channel.channel_id),
                "channelName": section.channel.name,
                "serverName": section.channel.server_name,
                "since": section.channel.since.isoformat(),
                "rank": rank,
                "score": section.score,
                "counts": {
                    "questions": section.counts.get(EntryKind.QUESTION, 0),
                    "actionItems": section.counts.get(EntryKind.ACTION_ITEM, 0),
                    "mentions": section.counts.get(EntryKind.MENTION, 0),
                    "decisions": section.counts.get(EntryKind.DECISION, 0),
                    "total": len(section.entries),
                },
                "entries": [
                    {
                        "kind": entry.kind.name,
                        "text": entry.text,
                        "at": entry.at.isoformat(),
                        "itemId": optional_global_id(TRACKED_ITEM, entry.item_id),
                        "status": entry.status.upper() if entry.status else None,
                        "owner": entry.owner,
                        "citations": [
                            {
                                "messageId": global_id(MESSAGE, cited.row_id),
                                "externalId": cited.message_id,
                                "author": cited.author,
                                "at": cited.at.isoformat(),
                                "revision": cited.revision,
                                "charStart": cited.char_start,
                                "charEnd": cited.char_end,
                                "quote": cited.quote,
                            }
                            for cited in entry.citations
                        ],
                    }
                    for entry in section.entries
                ],
            }
            for rank, section in enumerate(data.channels, 1)
        ],
    }


async def catch_up_command(runtime: Runtime, args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    try:
        since = parse_since(args.since, now)
        channel_ids = [await channel_named(runtime, name, args.server) for name in args.channel]
    except ValueError as error:
        return refuse(COMMAND, str(error), args.json)
    if args.deliver:
        return await _deliver(runtime, args, since, channel_ids, now)
    try:
        async with runtime.pool.acquire() as connection:
            data = await catchups.catch_up(
                connection, args.person, since, channel_ids or None, now=now
            )
            marked: list[int] = []
            if args.mark_read:
                shown = [section.channel.channel_id for section in data.channels]
                for channel_id in dict.fromkeys([*shown, *channel_ids]):
                    await catchups.mark_read(connection, args.person, channel_id, now)
                    marked.append(channel_id)
    except catchups.CatchUpRefused as refused:
        return refuse(COMMAND, refused.message, args.json)
    if args.json:
        emit({**catch_up_json(data), "markedRead": [global_id(CHANNEL, c) for c in marked]})
    else:
        say(catch_up_markdown(data).rstrip("\n"))
        if marked:
            say(f"\nMarked {len(marked)} channel(s) read up to {now.isoformat()}.")
    return 0


async def _deliver(
    runtime: Runtime,
    args: argparse.Namespace,
    since: datetime | None,
    channel_ids: list[int],
    now: datetime,
) -> int:
    """--deliver: queue the catch-up for the destination; the workers' delivery loop sends it."""
    try:
        async with runtime.pool.acquire() as connection:
            queued, data = await deliver_catch_up(
                connection, args.person, args.deliver, since, channel_ids or None, now
            )
            if args.mark_read:
                shown = [section.channel.channel_id for section in data.channels]
                for channel_id in dict.fromkeys([*shown, *channel_ids]):
                    await catchups.mark_read(connection, args.person, channel_id, now)
    except (catchups.CatchUpRefused, TriggerRefused) as refused:
        return refuse(COMMAND, refused.message, args.json)
    if args.json:
        emit(
            {
                "deliveryId": str(queued.delivery_id),
                "id": global_id(DELIVERY, queued.id),
                "destination": args.deliver,
                "state": queued.state.upper(),
            }
        )
    else:
        say(f"Catch-up of {args.person} queued for {args.deliver} (delivery {queued.delivery_id}).")
    return 0


def cmd_catchup(args: argparse.Namespace, settings: Settings) -> int:
    return asyncio.run(with_runtime(settings, lambda runtime: catch_up_command(runtime, args)))
