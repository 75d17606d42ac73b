"""How a catch-up orders channels: by what needs the person, scored in one place.

What waits on the person outranks what is only news to them. An open question put to them
weighs most: someone is waiting on their answer and nobody else can give it. An action item
they own is their own promise, usually with time to run. A mention may ask for nothing; a
decision is news, not a request. Mentions and decisions count up to a cap each (at most 15
together), so no busy channel that merely names the person, however often, outranks one where
a question or an action item waits on them (20 and more). Ties go to more questions, then more
action items, then the most recent entry, then the channel's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum


class EntryKind(str, Enum):
    """What a catch-up entry is, in the order a channel's section lists them."""

    QUESTION = "question"
    ACTION_ITEM = "action_item"
    MENTION = "mention"
    DECISION = "decision"


WEIGHTS = {
    EntryKind.QUESTION: 30,
    EntryKind.ACTION_ITEM: 20,
    EntryKind.MENTION: 2,
    EntryKind.DECISION: 1,
}
# The most of a kind counted in a score (None: all): see the module docstring.
COUNTED_AT_MOST: dict[EntryKind, int | None] = {
    EntryKind.QUESTION: None,
    EntryKind.ACTION_ITEM: None,
    EntryKind.MENTION: 5,
    EntryKind.DECISION: 5,
}
KIND_ORDER = {kind: position for position, kind in enumerate(EntryKind)}


def score(counts: dict[EntryKind, int]) -> int:
    total = 0
    for kind, weight in WEIGHTS.items():
        cap = COUNTED_AT_MOST[kind]
        count = counts.get(kind, 0)
        total += weight * (count if cap is None else min(count, cap))
    return total


@dataclass(frozen=True)
class Rankable:
    """What ranking reads of a channel's section."""

    name: str
    counts: dict[EntryKind, int]
    latest: datetime | None


def rank_key(section: Rankable) -> tuple[int, int, int, float, str]:
    """Sort key, smallest first: higher score, then more questions and action items, then the
    most recent entry, then the name."""
    latest = section.latest.timestamp() if section.latest else 0.0
    return (
        -score(section.counts),
        -section.counts.get(EntryKind.QUESTION, 0),
        -section.counts.get(EntryKind.ACTION_ITEM, 0),
        -latest,
        section.name,
    )


def ranked(sections: Sequence[Rankable]) -> list[int]:
    """The positions of `sections`, the one that needs the person most first."""
    return sorted(range(len(sections)), key=lambda i: rank_key(sections[i]))
