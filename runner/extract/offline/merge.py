"""Deterministic helpers shared by the offline map and reduce steps: rank-and-cut to a limit,
the renumbering and supersession links of knowledge items, and the signal level. The merging of
items across chunks is runner.core.merge's (shared with the LLM stack's plain merge)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from runner.core.contract import KnowledgeItem, SignalLevel, SignalQuality
from runner.extract.offline.text import squash

Item = TypeVar("Item")


def rank_and_cut(
    items: list[Item],
    limit: int,
    strength: Callable[[Item], int],
    position: Callable[[Item], int],
) -> list[Item]:
    """The `limit` strongest items (earlier first among equals), returned in window order."""
    indexed = list(enumerate(items))
    best = sorted(indexed, key=lambda pair: (-strength(pair[1]), position(pair[1]), pair[0]))
    kept = best[:limit]
    return [item for _, item in sorted(kept, key=lambda pair: (position(pair[1]), pair[0]))]


def even_sample(items: Sequence[Item], must: Callable[[Item], bool], limit: int) -> list[Item]:
    """`items` when there are at most `limit`; else those `must` keeps (the first `limit`) and
    evenly spaced others up to `limit`, in their order. Positions only: deterministic."""
    if len(items) <= limit:
        return list(items)
    keep = [i for i, item in enumerate(items) if must(item)][:limit]
    kept = set(keep)
    others = [i for i in range(len(items)) if i not in kept]
    room = limit - len(keep)
    if room > 0:
        step = len(others) / room
        keep.extend(others[int(k * step)] for k in range(room))
    return [items[i] for i in sorted(keep)]


def _lines(text: str) -> set[str]:
    return {squash(line) for line in text.split("\n") if line.strip()}


def link_knowledge(items: list[KnowledgeItem]) -> list[KnowledgeItem]:
    """Keys K1..Kn in the given order, and `supersedes_id` from a later verbatim item to an
    earlier one of the same kind and title, or the same kind sharing most of its lines (a config
    re-posted with changes)."""
    keyed = [item.model_copy(update={"key": f"K{i}"}) for i, item in enumerate(items, start=1)]
    for later_index, later in enumerate(keyed):
        if later.content_pointer is None:
            continue
        later_lines = _lines(later.content_pointer.quote or "")
        for earlier in reversed(keyed[:later_index]):
            if earlier.content_pointer is None or earlier.kind != later.kind:
                continue
            earlier_lines = _lines(earlier.content_pointer.quote or "")
            if earlier_lines == later_lines:
                continue
            same_title = squash(earlier.title).casefold() == squash(later.title).casefold()
            shared = len(earlier_lines & later_lines) / max(1, len(earlier_lines | later_lines))
            if (same_title and later.kind.value != "command") or (
                shared >= 0.5 and len(earlier_lines) >= 3
            ):
                later.supersedes_id = earlier.key
                break
    return keyed


def signal_quality(
    counts: dict[str, int], has_topics: bool, *, high: int, medium: int, min_kinds: int = 1
) -> SignalQuality:
    """How much a chunk or window says, from what was found: decisions weigh 3, action and
    knowledge items 2, questions, links and artifacts 1. `high` needs `min_kinds` kinds of item.
    Empty only when nothing at all was found (so the lists are empty too)."""
    score = (
        3 * counts["decisions"]
        + 2 * counts["action items"]
        + 2 * counts["knowledge items"]
        + counts["open questions"]
        + counts["links"]
        + counts["artifacts"]
    )
    if score == 0:
        if has_topics:
            return SignalQuality(
                level=SignalLevel.LOW,
                reason="discussion only: no decisions, tasks, questions, links or snippets",
            )
        return SignalQuality(
            level=SignalLevel.EMPTY,
            reason="no decisions, action items, questions, links or snippets found",
        )
    kinds = sum(1 for n in counts.values() if n)
    if score >= high and kinds >= min_kinds:
        level = SignalLevel.HIGH
    elif score >= medium:
        level = SignalLevel.MEDIUM
    else:
        level = SignalLevel.LOW
    found = count_phrase(counts)
    return SignalQuality(level=level, reason=f"found {found}"[:300])


def counted(n: int, plural: str, bold: bool = False) -> str:
    """ "1 decision", "3 decisions" (`plural` is the plural form, as the count keys are)."""
    noun = plural[:-1] if n == 1 and plural.endswith("s") else plural
    return f"**{n}** {noun}" if bold else f"{n} {noun}"


def count_phrase(counts: dict[str, int], separator: str = ", ", bold: bool = False) -> str:
    """The non-zero counts as words: "1 decision, 4 action items"."""
    return separator.join(counted(n, name, bold) for name, n in counts.items() if n)
