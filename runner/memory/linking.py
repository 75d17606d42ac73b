"""Which tracked item of the channel a new digest's item is (then it is a mention of it, not a
new item), if any.

A new item is the tracked item of the same kind that cites one of its messages; or that lives
in the same conversation and shares `THREAD_OVERLAP` of their content words (Jaccard of
`runner.grounding.claim_support.content_tokens`, two words at least; not for knowledge items);
or, anywhere in the channel, `CONTENT_OVERLAP` (knowledge items, often a command where one word
makes another thing: `KNOWLEDGE_OVERLAP`) and `MIN_SHARED_WORDS` words. An action item or
question never links to one of another owner; a decision that reverses or replaces the tracked
one (`runner.memory.transitions.decision_ending`) is never the same one. Of the tracked items
that fit, the one citing the same message wins, then the same conversation, then the most
shared words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runner.memory.items import THREAD_OVERLAP, ItemKind, NewItem, RuleItem
from runner.memory.transitions import decision_ending

CONTENT_OVERLAP = 0.6
# Words two items must share to be linked on content alone: short items ("apt-get install
# vlc", "apt-get install googleearth") share most of their few words and are different things.
MIN_SHARED_WORDS = 4
# A knowledge item is often a command or a config line, where one other word ("grep Driver",
# "grep radeon") is another thing: linked on content only when nearly all words are the same.
KNOWLEDGE_OVERLAP = 0.9


@dataclass(frozen=True)
class Link:
    new: NewItem
    tracked: int
    reason: str


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _owners_agree(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a.casefold() == b.casefold()


def link_target(new: RuleItem, tracked: Sequence[RuleItem]) -> tuple[RuleItem, str] | None:
    """The tracked item `new` is, with why, or None (see the module's docstring)."""
    best: tuple[float, RuleItem, str] | None = None
    for old in tracked:
        if old.kind != new.kind or not _owners_agree(old.owner, new.owner):
            continue
        if new.kind == ItemKind.DECISION and decision_ending(old, new):
            continue
        overlap = _jaccard(old.tokens, new.tokens)
        shared = len(old.tokens & new.tokens)
        if set(old.message_ids) & set(new.message_ids):
            score, reason = 2.0 + overlap, "cites the same message"
        elif (
            old.conversation_id is not None
            and old.conversation_id == new.conversation_id
            and overlap >= THREAD_OVERLAP
            and shared >= 2
            and new.kind != ItemKind.KNOWLEDGE
        ):
            score, reason = 1.0 + overlap, f"same conversation, {overlap:.0%} shared words"
        elif shared >= MIN_SHARED_WORDS and overlap >= (
            KNOWLEDGE_OVERLAP if new.kind == ItemKind.KNOWLEDGE else CONTENT_OVERLAP
        ):
            score, reason = overlap, f"{overlap:.0%} shared words"
        else:
            continue
        if best is None or score > best[0]:
            best = (score, old, reason)
    return None if best is None else (best[1], best[2])
