"""Hand-made windows for channel memory's pure rules: messages minutes after a start, and an
open question tracked from the first day."""

from __future__ import annotations

from datetime import datetime, timedelta

from runner.memory.items import ItemKind, TrackedItem
from runner.memory.window import MemoryMessage
from tests.support.items import DAY1, DAY2


def message(
    mid: str,
    author: str,
    minutes: int,
    text: str,
    conversation: int | None = 7,
    start: datetime = DAY2,
    reply_to: str | None = None,
) -> MemoryMessage:
    """A window message `minutes` after `start` (day 2), in conversation 7 unless told."""
    return MemoryMessage(
        mid, author, start + timedelta(minutes=minutes), text, conversation, reply_to
    )


# Asked by ann on day 1 in conversation 7, cited message "q1".
QUESTION = TrackedItem(
    1,
    ItemKind.QUESTION,
    "How do I make the backup script skip the cache directory?",
    "ann",
    7,
    ("q1",),
    DAY1,
)
