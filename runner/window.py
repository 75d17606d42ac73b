"""The plain data an extraction works on: the messages of one digest window."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class WindowMessage:
    """One stored message as an extractor sees it. `message_id` is the external id (a string)."""

    message_id: str
    author: str
    ts: datetime
    normalized_text: str
    reply_to: str | None = None
    # The conversation it belongs to (runner/jobs/conversations.py), None when not threaded:
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
