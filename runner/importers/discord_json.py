"""DiscordChatExporter JSON: `{"guild": {...}, "channel": {...}, "messages": [...]}`.

Streamed with ijson: the head (guild, channel) is read first, then the messages one at a time,
so an export of any size is never in memory whole. DiscordChatExporter writes the guild and
channel before the messages; if a file puts them after, its records carry no channel name and
the caller's `--channel` applies.

Per message: `id`, `timestamp` (ISO with zone), `author` (`name#discriminator`, or just `name`
for the new-style "0" discriminator), `content`, `reference.messageId` as `reply_to` (unless it
points into another channel, as crossposts and pins do), `attachments` and `embeds` as
attachments tagged with `"kind"`. System messages (joins, pins, calls, renames, boosts)
are skipped and counted, not rejected.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runner.importers.dates import describe, parse_iso_timestamp
from runner.importers.inputs import open_regular
from runner.importers.jsonstream import BadItem, JsonStreamError, iter_items, read_head_objects
from runner.importers.records import (
    ParseOptions,
    ParseStats,
    Record,
    RecordError,
    message_from_fields,
)

SYSTEM_TYPES = frozenset(
    {
        "RecipientAdd",
        "RecipientRemove",
        "Call",
        "ChannelNameChange",
        "ChannelIconChange",
        "ChannelPinnedMessage",
        "GuildMemberJoin",
        "ThreadCreated",
        "UserPremiumGuildSubscription",
        "UserPremiumGuildSubscriptionTier1",
        "UserPremiumGuildSubscriptionTier2",
        "UserPremiumGuildSubscriptionTier3",
        "ChannelFollowAdd",
        "GuildDiscoveryDisqualified",
        "GuildDiscoveryRequalified",
    }
)


def _name(value: Any) -> str | None:
    name = value.get("name") if isinstance(value, dict) else None
    return name if isinstance(name, str) else None


def author_name(author: Any) -> str | None:
    """`name#1234` as the CSV/TXT exports show it; just `name` for the "0"/"0000" discriminator."""
    if not isinstance(author, dict):
        return None
    name = author.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    discriminator = author.get("discriminator")
    if isinstance(discriminator, str) and discriminator.strip("0"):
        return f"{name}#{discriminator}"
    return name


def _attachments(message: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for kind, key in (("attachment", "attachments"), ("embed", "embeds")):
        items = message.get(key)
        if isinstance(items, list):
            found.extend({**item, "kind": kind} for item in items if isinstance(item, dict))
    return found


def _reply_to(message: dict[str, Any], channel_id: str | None) -> str | None:
    reference = message.get("reference")
    if not isinstance(reference, dict):
        return None
    target = reference.get("messageId")
    other_channel = reference.get("channelId")
    if target is None or (
        other_channel is not None and channel_id and str(other_channel) != channel_id
    ):
        return None
    return str(target)


def discord_message(
    message: Any,
    location: str,
    head: dict[str, Any],
    options: ParseOptions,
    stats: ParseStats,
) -> Record | None:
    """One `messages[]` item to a record (None when it is a skipped system message)."""
    if not isinstance(message, dict):
        return RecordError(location, f"expected a message object, got {type(message).__name__}")
    kind = message.get("type")
    if kind in SYSTEM_TYPES:
        stats.skip(f"Discord system message ({kind})")
        return None
    stamp = message.get("timestamp")
    if stamp is None:
        return RecordError(location, "missing timestamp")
    try:
        ts = parse_iso_timestamp(stamp)
    except (ValueError, TypeError, OverflowError, OSError):
        return RecordError(location, f"unparseable timestamp {describe(stamp)}")
    channel = head.get("channel")
    channel_id = channel.get("id") if isinstance(channel, dict) else None
    channel_id = str(channel_id) if channel_id is not None else None
    return message_from_fields(
        location=location,
        external_id=message.get("id"),
        author=author_name(message.get("author")),
        ts=ts,
        text=message.get("content"),
        reply_to=_reply_to(message, channel_id),
        attachments=_attachments(message),
        channel=_name(channel),
        server=_name(head.get("guild")),
        channel_external_id=channel_id,
        max_message_chars=options.max_message_chars,
    )


def parse_discord_json(path: Path, options: ParseOptions, stats: ParseStats) -> Iterator[Record]:
    with open_regular(path) as raw:
        head, has_messages, head_error = read_head_objects(raw, {"guild", "channel"}, "messages")
    if head_error is not None:
        yield RecordError(
            "record 1", f"malformed JSON before the messages list ({head_error}); nothing was read"
        )
        return
    if not has_messages:
        yield RecordError(
            "file", 'no top-level "messages" list: not a DiscordChatExporter JSON export'
        )
        return
    with open_regular(path) as raw:
        number = 0
        for item in iter_items(raw, "messages.item"):
            if isinstance(item, JsonStreamError):
                yield RecordError(f"record {number + 1}", item.reason())
                return
            number += 1
            if isinstance(item, BadItem):
                yield RecordError(f"record {number}", item.reason)
                continue
            record = discord_message(item, f"record {number}", head, options, stats)
            if record is not None:
                yield record
