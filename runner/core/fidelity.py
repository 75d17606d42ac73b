"""Fidelity of content fitted to a token budget: the levels an item goes through, the floors
no fitting goes below, and the version of the per-item records stored with a result. Pure: the
report writer's evidence fitting (runner.reports.evidence_budget) and runner.llm.budget share it.
"""

from __future__ import annotations

from enum import Enum

# Not settings: guardrails every fitting keeps.
MIN_ITEMS_KEPT = 3  # never fewer items than this (unless fewer exist)
TOP_ITEMS_CONDENSED = 5  # the top items by priority are never cut below their condensed form
# The share of a call's effective input budget its content may take in the synthesis phase
# (writing a report from its evidence); the rest is for the instructions, the tool schema, the
# question and slack for what counting misses. Hardcoded, not a setting.
SYNTHESIS_BUDGET_SHARE = 0.85
# The version of the per-item fidelity records stored with a result (`content_fidelity`).
FIDELITY_SCHEMA_VERSION = "fidelity-v1"


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
