"""Which messages a channel digest reads, and which of them it leaves out.

A coverage digest reads the channel's messages that no successful digest covers at their current
revision, in (ts, id) order, at most `max_messages`; a catch-up digest reads exactly the
messages with since <= ts < until and changes no coverage. What a digest read but does not
cover (failed chunks, messages edited while it ran) and what the cap left for the next digest
are reported as ranges with a reason (`Digest.messageCoverage.leftOut`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import asyncpg

from db import channels
from db.models import ChannelColumns, WindowMessageRow
from runner.window import Window, WindowMessage

REASON_CHUNK_FAILED = "chunk_failed"
REASON_WINDOW_CAP = "window_cap"
REASON_EDITED = "edited_during_digest"


@dataclass(frozen=True)
class MessageKey:
    """One window message as the database knows it: the revision read, and its position."""

    external_id: str
    message_id: int
    revision: int
    ts: datetime


@dataclass(frozen=True)
class StoredWindow:
    """The window's message keys (external id → internal id, revisions), its bounds, and how it
    was chosen (coverage or catch-up, what the cap left out)."""

    internal_ids: dict[str, int]
    first_message_id: int | None
    last_message_id: int | None
    window_start: datetime | None
    window_end: datetime | None
    message_count: int
    keys: tuple[MessageKey, ...] = ()
    catch_up: bool = False
    since: datetime | None = None
    until: datetime | None = None
    left_out: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    # External id → the revision read; pointers and cited messages refer to it.
    revisions: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class WindowSpec:
    """A job's window: coverage (no bounds) or a catch-up [since, until) over message ts."""

    since: datetime | None = None
    until: datetime | None = None

    @property
    def catch_up(self) -> bool:
        return self.since is not None or self.until is not None


# Catch-up bounds outside these years are refused: nobody asks what they missed in year 9999, and
# such values overflow time-zone arithmetic (year 9999 at -14:00) and Postgres' range alike.
EARLIEST_WINDOW = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_WINDOW = datetime(2200, 1, 1, tzinfo=UTC)


def window_options(since: datetime | None, until: datetime | None) -> dict[str, str]:
    """The job options of a catch-up window: canonical UTC ISO strings, so that the same window
    asked twice (in any time zone) is the same active job (see migration 0003's index).
    A naive datetime is taken as UTC. Raises ValueError with a message for the client."""
    bounds: dict[str, datetime] = {}
    for name, value in (("since", since), ("until", until)):
        if value is None:
            continue
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        try:
            value = value.astimezone(UTC)
        except (OverflowError, ValueError):
            raise ValueError(f"options.{name} is out of range") from None
        if not EARLIEST_WINDOW <= value <= LATEST_WINDOW:
            raise ValueError(f"options.{name} must be between 1970 and 2200")
        bounds[name] = value
    if "since" in bounds and "until" in bounds and bounds["since"] >= bounds["until"]:
        raise ValueError("options.since must be before options.until")
    return {name: value.isoformat() for name, value in bounds.items()}


def window_messages(rows: Iterable[WindowMessageRow]) -> tuple[WindowMessage, ...]:
    """Stored message rows as the plain messages an extractor reads."""
    return tuple(
        WindowMessage(
            message_id=row.external_id, author=row.author, ts=row.ts,
            normalized_text=row.normalized_text, reply_to=row.reply_to,
        )  # fmt: skip
        for row in rows
    )


async def load_window(
    connection: asyncpg.Connection,
    channel: ChannelColumns,
    spec: WindowSpec,
    max_messages: int,
) -> tuple[Window, StoredWindow]:
    """The messages a digest of `channel` reads, as plain data and as their database keys."""
    if spec.catch_up:
        rows = await channels.catch_up_messages(
            connection, channel.id, spec.since, spec.until, max_messages
        )
    else:
        rows = await channels.window_messages(connection, channel.id, max_messages)
    left_out: list[dict[str, Any]] = []
    if rows and len(rows) >= max_messages:
        last = (channel.id, rows[-1].ts, rows[-1].id)
        if spec.catch_up:
            rest = await channels.catch_up_after(connection, *last, spec.until)
        else:
            rest = await channels.uncovered_after(connection, *last)
        if rest is not None and rest.message_count:
            left_out.append(
                {
                    "first_message_id": rest.first_message_id,
                    "last_message_id": rest.last_message_id,
                    "first_at": rest.first_at.isoformat(),
                    "last_at": rest.last_at.isoformat(),
                    "message_count": rest.message_count,
                    "reason": REASON_WINDOW_CAP,
                }
            )
    messages = window_messages(rows)
    stored = StoredWindow(
        internal_ids={row.external_id: row.id for row in rows},
        first_message_id=rows[0].id if rows else None,
        last_message_id=rows[-1].id if rows else None,
        window_start=rows[0].ts if rows else None,
        window_end=rows[-1].ts if rows else None,
        message_count=len(rows),
        keys=tuple(MessageKey(r.external_id, r.id, r.revision, r.ts) for r in rows),
        catch_up=spec.catch_up,
        since=spec.since,
        until=spec.until,
        left_out=tuple(left_out),
        revisions={row.external_id: row.revision for row in rows},
    )
    return Window(channel_name=channel.name, messages=messages), stored


def window_key(extractor_fingerprint: str, chunk_tokens: int, keys: Iterable[MessageKey]) -> str:
    """Identifies a digest's input: extraction settings and each message at its revision."""
    digest = hashlib.sha256(f"{extractor_fingerprint}\n{chunk_tokens}\n".encode())
    for key in keys:
        digest.update(f"{key.message_id}:{key.revision},".encode())
    return digest.hexdigest()


def left_out_ranges(
    keys: tuple[MessageKey, ...], reasons: dict[int, str]
) -> list[dict[str, Any]]:
    """Runs of consecutive window messages (window order) left out for the same reason;
    `reasons` maps internal message id → reason."""
    ranges: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    previous_reason: str | None = None
    for key in keys:
        reason = reasons.get(key.message_id)
        if reason is None or reason != previous_reason:
            current = None
        if reason is not None:
            if current is None:
                current = {
                    "first_message_id": key.external_id,
                    "first_at": key.ts.isoformat(),
                    "message_count": 0,
                    "reason": reason,
                }
                ranges.append(current)
            current["last_message_id"] = key.external_id
            current["last_at"] = key.ts.isoformat()
            current["message_count"] += 1
        previous_reason = reason
    return ranges
