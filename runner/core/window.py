"""The plain data an extraction works on: the messages of one digest window, and the keys and
bounds a stored window is known by."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class WindowMessage:
    """One stored message as an extractor sees it. `message_id` is the external id (a string)."""

    message_id: str
    author: str
    ts: datetime
    normalized_text: str
    reply_to: str | None = None
    # The conversation it belongs to (runner/conversations/store.py), None when not threaded:
    # chunking keeps a conversation's messages together where they fit.
    conversation: str | None = None


@dataclass(frozen=True)
class Window:
    """The messages of one channel after its last digest: oldest first, or, once threaded,
    conversation by conversation (each oldest first, conversations by their first message)."""

    channel_name: str
    messages: tuple[WindowMessage, ...]

    def by_id(self) -> dict[str, WindowMessage]:
        return {message.message_id: message for message in self.messages}


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
    """A job's window: coverage (no bounds) or a catch-up [since, until) over message ts; a
    coverage slice reads only the uncovered messages from `slice_bounds`' first (ts, id)
    through its last."""

    since: datetime | None = None
    until: datetime | None = None
    slice_bounds: tuple[tuple[datetime, int], tuple[datetime, int]] | None = None

    @property
    def catch_up(self) -> bool:
        return self.since is not None or self.until is not None
