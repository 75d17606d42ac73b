"""`digestd report --json` (`report_json`) carries the per-item fidelity records of a stored
report as the fitting stored them, with when the fitting ran, as the GraphQL `Report` reads
them; a row stored before those fields existed reads with the empty defaults."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from db.models import Report as ReportRow
from runner.core.fidelity import FIDELITY_SCHEMA_VERSION, FidelityLevel
from runner.reports.evidence import Evidence, RankedEvidence
from runner.reports.evidence_budget import fit_evidence
from runner.reports.sources import MessageSource
from schema.types.report import Report
from server.cli_reports import report_json

T0 = datetime(2024, 5, 1, tzinfo=UTC)


def _ranked(count: int) -> list[RankedEvidence]:
    units = []
    for i in range(count):
        text = " ".join(["rollback"] * 30) + f" step {i}."
        source = MessageSource("ops", f"m{i}", 1, "ann", T0 + timedelta(minutes=i), text, 0, 9)
        units.append(RankedEvidence(Evidence(text, source, "#ops", 0, i), float(count - i)))
    return units


def _row(fidelity: dict[str, Any]) -> ReportRow:
    return ReportRow(
        id=7,
        job_id=None,
        question="How is a rollback approved?",
        request={},
        cache_key="k",
        title="Rollbacks",
        sections=[],
        sources=[],
        markdown="",
        audit={},
        writer="llm:fake:v1:60",
        fidelity=fidelity,
        created_at=T0,
    )


def test_report_json_carries_each_units_record_with_its_time_as_the_api_reads_it() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    fit = fit_evidence(_ranked(40), 600, counter=lambda text: len(text.split()))
    fit.content_archive_hashes = {item: "sha256:ab" for item in fit.degraded_texts()}
    row = _row(fit.as_json())
    printed = report_json(row)
    assert printed["content_fidelity_schema_version"] == FIDELITY_SCHEMA_VERSION
    assert printed["content_archive_hashes"] == fit.content_archive_hashes
    records = {i: r["phases"]["synthesis"] for i, r in printed["content_fidelity"].items()}
    assert len(records) == 40 and {r["level"] for r in records.values()} >= {"dropped"}
    for record in records.values():
        assert {"level", "reason", "warnings", "timestamp"} <= set(record)
        assert before <= datetime.fromisoformat(record["timestamp"]) <= datetime.now(UTC)
    api = Report.from_row(row)
    assert api.content_fidelity_schema_version == printed["content_fidelity_schema_version"]
    assert [(i.content_id, i.rank) for i in api.content_fidelity] == sorted(
        ((item, r["rank"]) for item, r in records.items()), key=lambda pair: pair[1]
    )
    for item in api.content_fidelity:
        record = records[item.content_id]
        assert item.level is FidelityLevel(record["level"]) and item.warnings == record["warnings"]
        assert item.recorded_at == datetime.fromisoformat(record["timestamp"])
    assert {h.content_id: h.hash for h in api.content_archive_hashes} == fit.content_archive_hashes


def test_a_row_stored_before_the_per_item_records_reads_with_defaults() -> None:
    old_item = {"phases": {"synthesis": {"level": "condensed"}}}
    row = _row({"fidelity": [], "warnings": [], "dropped_content_ids": []})
    printed = report_json(row)
    assert printed["content_fidelity_schema_version"] == FIDELITY_SCHEMA_VERSION
    assert printed["content_fidelity"] == {} and printed["content_archive_hashes"] == {}
    api = Report.from_row(row)
    assert api.content_fidelity == [] and api.content_archive_hashes == []
    (item,) = Report.from_row(_row({"content_fidelity": {"u1": old_item}})).content_fidelity
    assert (item.content_id, item.phase, item.level) == ("u1", "synthesis", FidelityLevel.CONDENSED)
    assert (item.rank, item.archive_hash, item.recorded_at, item.warnings) == (None, None, None, [])
    assert (item.reason, item.original_tokens, item.protected) == ("", 0, False)
    # A level this server does not know reads as null, not an error.
    odd = {"u2": {"phases": {"synthesis": {"level": "key_points", "timestamp": "soon"}}}}
    (item,) = Report.from_row(_row({"content_fidelity": odd})).content_fidelity
    assert item.level is None and item.recorded_at is None


def test_a_report_stored_with_fidelity_v1_reads_as_one_phase_per_unit() -> None:
    """Before v2 a unit's record held its synthesis phase only: it reads as a unit with that one
    phase, and the version it was stored with is the one shown."""
    v1 = {
        "content_fidelity_schema_version": "fidelity-v1",
        "content_fidelity": {
            "u2": {
                "phases": {
                    "synthesis": {
                        "level": "dropped",
                        "reason": "budget_limit",
                        "rank": 2,
                        "warnings": ["CONTENT_DROPPED"],
                        "timestamp": "2026-01-05T10:00:00Z",
                    }
                }
            },
            "u1": {
                "phases": {
                    "synthesis": {
                        "level": "full",
                        "reason": "within_budget",
                        "rank": 1,
                        "warnings": [],
                        "timestamp": "2026-01-05T10:00:00Z",
                    }
                }
            },
        },
    }
    api = Report.from_row(_row(v1))
    assert api.content_fidelity_schema_version == "fidelity-v1"
    assert [(i.content_id, i.level) for i in api.content_fidelity_items] == [
        ("u1", FidelityLevel.FULL),
        ("u2", FidelityLevel.DROPPED),
    ]
    assert [[p.phase for p in i.phases] for i in api.content_fidelity_items] == [["synthesis"]] * 2
    assert [(i.content_id, i.phase) for i in api.content_fidelity] == [
        ("u1", "synthesis"),
        ("u2", "synthesis"),
    ]
    assert api.content_fidelity_items[1].phases[0].warnings == ["CONTENT_DROPPED"]


def test_a_v2_units_phases_read_in_phase_order_and_it_ends_as_its_last() -> None:
    stamp = "2026-01-05T10:00:00Z"
    phases = {  # as the database's JSON may return them: not in phase order
        "synthesis": {
            "level": "truncated",
            "reason": "budget_limit",
            "rank": 1,
            "timestamp": stamp,
        },
        "final_fit": {
            "level": "condensed",
            "reason": "budget_limit",
            "rank": 1,
            "timestamp": stamp,
        },
        "gathering": {"level": "full", "reason": "gathered", "timestamp": stamp},
    }
    api = Report.from_row(_row({"content_fidelity": {"u1": {"phases": phases}}}))
    (item,) = api.content_fidelity_items
    assert [p.phase for p in item.phases] == ["gathering", "synthesis", "final_fit"]
    assert item.level is FidelityLevel.CONDENSED
    assert item.phases[0].rank is None and item.phases[0].original_tokens == 0
