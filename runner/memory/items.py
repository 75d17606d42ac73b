"""The items channel memory tracks: their kinds and open states, their keys, the channel's
tracked items and a new digest's items, and the one view of either the rules read.

A tracked item is named to the map step by its key (`item:<id>`, `item_key`); a knowledge item
of a new digest that supersedes or contradicts it names it by that key.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from runner.grounding.claim_support import content_tokens

# The share of content words that make two items of one conversation the same thing (linking,
# Jaccard) or a decision the one a later decision of its conversation names (transitions).
THREAD_OVERLAP = 0.3
# The prefix of a tracked item's key, as the map step is shown it (runner/digests/job.py).
KEY_PREFIX = "item:"


class ItemKind(str, Enum):
    QUESTION = "question"
    ACTION_ITEM = "action_item"
    DECISION = "decision"
    KNOWLEDGE = "knowledge"


# The state an item starts in, the only one it is linked and changed from.
OPEN_STATUS = {
    ItemKind.QUESTION: "open",
    ItemKind.ACTION_ITEM: "open",
    ItemKind.DECISION: "in_force",
    ItemKind.KNOWLEDGE: "current",
}


def item_key(item_id: int) -> str:
    return f"{KEY_PREFIX}{item_id}"


@dataclass(frozen=True)
class TrackedItem:
    """An item the channel tracks, in its open state."""

    id: int
    kind: ItemKind
    text: str
    owner: str | None
    conversation_id: int | None
    message_ids: tuple[str, ...]
    said_at: datetime
    said_text: str = ""  # the text of the message it was said in (whom a question was put to)


@dataclass(frozen=True)
class NewItem:
    """An item of the digest being stored (already validated), at `position` in its section."""

    kind: ItemKind
    position: int
    text: str
    owner: str | None
    message_ids: tuple[str, ...]
    key: str | None = None  # knowledge items: the digest's key, and what it supersedes
    supersedes: str | None = None
    conflicts_with: str | None = None
    pointer_message_id: str | None = None  # a verbatim knowledge item's message (also cited)


# An item a change is about: a tracked one by id, or one of this digest.
ItemRef = int | NewItem


def words(text: str) -> set[str]:
    """An item's or a message's content words, what the rules compare."""
    return set(content_tokens(text))


@dataclass
class RuleItem:
    """A tracked or new item as the rules see it."""

    ref: ItemRef
    kind: ItemKind
    text: str
    owner: str | None
    conversation_id: int | None
    said_at: datetime
    message_ids: tuple[str, ...]
    tokens: set[str]
    said_text: str = ""


def rule_item(tracked: TrackedItem) -> RuleItem:
    """A tracked item as the rules see it."""
    return RuleItem(
        tracked.id,
        tracked.kind,
        tracked.text,
        tracked.owner,
        tracked.conversation_id,
        tracked.said_at,
        tracked.message_ids,
        words(tracked.text),
        tracked.said_text,
    )
