"""The merge rule of per-item fidelity records: the latest write of a phase replaces that
phase's entry, the item's other phases stay as its history, and phases keep the order items
pass through them, whatever order they were written in."""

from __future__ import annotations

from typing import Any

from runner.core.fidelity import (
    PHASE_FINAL_FIT,
    PHASE_GATHERING,
    PHASE_ORDER,
    PHASE_REFINEMENT,
    PHASE_SYNTHESIS,
    FidelityLevel,
    latest_phase,
    merge_fidelity,
    merge_phase,
    ordered_phases,
    phase_entry,
)

T1 = "2026-11-29T10:00:00Z"
T2 = "2026-11-29T10:00:05Z"


def entry(level: FidelityLevel, reason: str, stamp: str = T1, **extra: Any) -> dict[str, Any]:
    return phase_entry(level, reason, [], stamp, **extra)


def test_an_entry_holds_the_seeds_fields_and_the_phases_figures() -> None:
    made = phase_entry(
        FidelityLevel.TRUNCATED, "budget_limit", ["CONTENT_TRUNCATED"], T1, final_tokens=40
    )
    assert made == {
        "level": "truncated",
        "reason": "budget_limit",
        "warnings": ["CONTENT_TRUNCATED"],
        "timestamp": T1,
        "final_tokens": 40,
    }


def test_the_same_phase_written_again_is_replaced_whole() -> None:
    first = merge_phase(None, PHASE_SYNTHESIS, entry(FidelityLevel.FULL, "x", rank=3))
    again = merge_phase(first, PHASE_SYNTHESIS, entry(FidelityLevel.CONDENSED, "budget_limit", T2))
    assert again == {
        "phases": {PHASE_SYNTHESIS: entry(FidelityLevel.CONDENSED, "budget_limit", T2)}
    }
    assert "rank" not in again["phases"][PHASE_SYNTHESIS]  # no field of the old entry lingers
    assert first["phases"][PHASE_SYNTHESIS]["level"] == "full"  # the input is not changed


def test_other_phases_are_kept_as_history() -> None:
    record = merge_phase(None, PHASE_GATHERING, entry(FidelityLevel.FULL, "gathered"))
    record = merge_phase(record, PHASE_SYNTHESIS, entry(FidelityLevel.TRUNCATED, "budget_limit"))
    record = merge_phase(record, PHASE_FINAL_FIT, entry(FidelityLevel.CONDENSED, "budget_limit"))
    record = merge_phase(record, PHASE_SYNTHESIS, entry(FidelityLevel.FULL, "within_budget", T2))
    assert list(record["phases"]) == [PHASE_GATHERING, PHASE_SYNTHESIS, PHASE_FINAL_FIT]
    assert record["phases"][PHASE_GATHERING]["reason"] == "gathered"
    assert record["phases"][PHASE_SYNTHESIS]["timestamp"] == T2
    assert record["phases"][PHASE_FINAL_FIT]["level"] == "condensed"


def test_phases_are_ordered_by_phase_order_not_by_write_order() -> None:
    record: dict[str, Any] | None = None
    for phase in reversed(PHASE_ORDER):
        record = merge_phase(record, phase, entry(FidelityLevel.FULL, phase))
    assert record is not None and list(record["phases"]) == list(PHASE_ORDER)
    # A phase this version does not know goes after the known ones, in its own order.
    odd = merge_phase(record, "summarization", entry(FidelityLevel.FULL, "later"))
    odd = merge_phase(odd, PHASE_GATHERING, entry(FidelityLevel.FULL, "again"))
    assert list(odd["phases"]) == [*PHASE_ORDER, "summarization"]
    assert list(ordered_phases({"b": 1, "a": 2, PHASE_SYNTHESIS: 3})) == [PHASE_SYNTHESIS, "b", "a"]


def test_the_latest_phase_is_what_the_item_ended_as() -> None:
    record = merge_phase(None, PHASE_FINAL_FIT, entry(FidelityLevel.DROPPED, "budget_limit"))
    record = merge_phase(record, PHASE_REFINEMENT, entry(FidelityLevel.FULL, "open_point"))
    latest = latest_phase(record)
    assert latest is not None and latest[0] == PHASE_FINAL_FIT and latest[1]["level"] == "dropped"
    assert latest_phase({"phases": {}}) is None and latest_phase({}) is None


def test_records_of_many_items_merge_phase_by_phase() -> None:
    stored = {
        "a": merge_phase(None, PHASE_GATHERING, entry(FidelityLevel.FULL, "gathered")),
        "b": merge_phase(None, PHASE_GATHERING, entry(FidelityLevel.FULL, "gathered")),
    }
    written = {
        "a": merge_phase(None, PHASE_SYNTHESIS, entry(FidelityLevel.TRUNCATED, "budget_limit")),
        "c": merge_phase(None, PHASE_SYNTHESIS, entry(FidelityLevel.FULL, "within_budget")),
    }
    merged = merge_fidelity(stored, written)
    assert {item: list(r["phases"]) for item, r in merged.items()} == {
        "a": [PHASE_GATHERING, PHASE_SYNTHESIS],
        "b": [PHASE_GATHERING],
        "c": [PHASE_SYNTHESIS],
    }
    assert list(stored["a"]["phases"]) == [PHASE_GATHERING]  # the inputs are not changed
