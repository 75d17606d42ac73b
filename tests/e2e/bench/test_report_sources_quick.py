"""Smoke test of bench/report_sources.py: it runs with `--quick` as a subprocess and prints, at
100 and 1,000 citations, the registry and footnote figures against their peers and the seed's
targets. No thresholds on time: timings on a shared CI machine mean little."""

from __future__ import annotations

import pytest

from tests.support.bench import run_quick

# Smoke runs of bench/ scripts: `.ci/run` runs them after the main suite (`-m bench`).
pytestmark = pytest.mark.bench


def test_report_sources_bench_quick() -> None:
    rows = run_quick("report_sources.py", timeout=120, database=False)
    assert all(row["bench"] == "report_sources" for row in rows)
    runs = [row for row in rows if row["kind"] == "run"]
    assert {(row["step"], row["peer"]) for row in runs} == {
        ("register", "registry"),
        ("register", "list_registry"),
        ("footnotes", "report_markdown"),
        ("footnotes", "digest_markdown"),
    }
    setups = [row for row in rows if row["kind"] == "setup" and "citations" in row]
    # Three in four citations quote documents cited in eight places: far fewer sources.
    assert [(row["citations"], row["spans"]) for row in setups] == [(100, 100), (1000, 1000)]
    assert all(row["sources"] < row["citations"] / 2 for row in setups)
    summaries = [row for row in rows if row["kind"] == "summary"]
    assert [row["citations"] for row in summaries] == [100, 1000]
    for row in summaries:
        assert {
            "register_ms_per_call",
            "dedup_ms_per_call",
            "footnotes_s_per_100_citations",
            "register_ratio_to_list",
            "footnotes_ratio_to_digest_markdown",
            "target_register_met",
            "target_dedup_met",
            "target_footnotes_met",
        } <= row.keys()
