"""Fidelity of content fitted to a token budget: the levels an item goes through, the floors
no fitting goes below, and the version of the per-item records stored with a result. Pure: the
report writer's evidence fitting (runner.reports.evidence_budget) and runner.llm.budget share it.

The per-item records follow one merge rule (`merge_phase`): the latest write of a phase replaces
that phase's entry, the item's other phases are kept as its history, and the phases are kept in
the order items pass through them (`PHASE_ORDER`); a reader of stored records orders them again
(`ordered_phases`): the database's JSON keeps no key order.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

# Not settings: guardrails every fitting keeps.
MIN_ITEMS_KEPT = 3  # never fewer items than this (unless fewer exist)
TOP_ITEMS_CONDENSED = 5  # the top items by priority are never cut below their condensed form
# The share of a call's effective input budget its content may take in the synthesis phase
# (writing a report from its evidence); the rest is for the instructions, the tool schema, the
# question and slack for what counting misses. Hardcoded, not a setting.
SYNTHESIS_BUDGET_SHARE = 0.85
# The version of the per-item fidelity records stored with a result (`content_fidelity`):
# {item_id: {"phases": {phase: {level, reason, warnings, timestamp, ...}}}}. v1 held one phase
# per item (synthesis); v2 holds every phase the item passed through, in `PHASE_ORDER`, and the
# item's state is its latest phase's (a final fit supersedes the synthesis fitting). A v1
# record reads as a v2 record with one phase.
FIDELITY_SCHEMA_VERSION = "fidelity-v2"
FIDELITY_SCHEMA_VERSIONS = ("fidelity-v1", FIDELITY_SCHEMA_VERSION)

# The phases an item of a report goes through, in order: ranked for the question's
# sub-questions and merged (gathering), added for a point the first answer left open
# (refinement), fitted to the writer's budget (synthesis), fitted again after the whole request
# was counted over its limit (final_fit).
PHASE_GATHERING = "gathering"
PHASE_REFINEMENT = "refinement"
PHASE_SYNTHESIS = "synthesis"
PHASE_FINAL_FIT = "final_fit"
PHASE_ORDER = (PHASE_GATHERING, PHASE_REFINEMENT, PHASE_SYNTHESIS, PHASE_FINAL_FIT)


class FidelityLevel(str, Enum):
    """What one content item became in a request, from whole to left out."""

    FULL = "full"  # the whole text
    TRUNCATED = "truncated"  # a longer prefix (a lower-priority item cut)
    CONDENSED = "condensed"  # the item's headline sentence within a small token cap
    HEADLINE = "headline"  # a few leading words: protected content that did not fit otherwise
    DROPPED = "dropped"  # not in the request

    @property
    def degraded(self) -> bool:
        return self is not FidelityLevel.FULL


def phase_entry(
    level: FidelityLevel, reason: str, warnings: list[str], timestamp: str, **extra: Any
) -> dict[str, Any]:
    """One phase's entry of an item record: what the item became, why, the warning codes naming
    it and when (ISO 8601 UTC), with any figures of the phase (tokens, rank, ...)."""
    return {
        "level": level.value,
        "reason": reason,
        "warnings": list(warnings),
        "timestamp": timestamp,
        **extra,
    }


def _phase_place(phase: str) -> int:
    return PHASE_ORDER.index(phase) if phase in PHASE_ORDER else len(PHASE_ORDER)


def ordered_phases(phases: Mapping[str, Any]) -> dict[str, Any]:
    """`phases` in `PHASE_ORDER`; a phase this version does not know after them, in its order."""
    names = sorted(enumerate(phases), key=lambda pair: (_phase_place(pair[1]), pair[0]))
    return {name: phases[name] for _, name in names}


def merge_phase(
    record: Mapping[str, Any] | None, phase: str, entry: Mapping[str, Any]
) -> dict[str, Any]:
    """An item record with `entry` as `phase`'s: a phase written again is replaced whole, the
    other phases are kept as they were (a new object; `record` is not changed)."""
    phases = dict((record or {}).get("phases") or {})
    phases[phase] = dict(entry)
    return {**(record or {}), "phases": ordered_phases(phases)}


def merge_fidelity(
    stored: Mapping[str, Mapping[str, Any]], written: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Per-item records `stored` with each phase of `written` merged in by `merge_phase`; items
    only in one of them are kept as they are."""
    merged = {item_id: dict(record) for item_id, record in stored.items()}
    for item_id, record in written.items():
        for phase, entry in (record.get("phases") or {}).items():
            merged[item_id] = merge_phase(merged.get(item_id), phase, entry)
    return merged


def latest_phase(record: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The item's last phase in `PHASE_ORDER` and its entry: what the item ended as."""
    phases = ordered_phases(record.get("phases") or {})
    if not phases:
        return None
    name = list(phases)[-1]
    return name, phases[name]
