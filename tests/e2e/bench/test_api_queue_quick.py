"""Smoke test of bench/api.py, bench/api_layers.py and bench/job_queue.py: each runs with
`--quick` as a subprocess and prints JSON lines with the expected keys. No thresholds: timings on
a shared CI machine mean little; the benchmarks themselves compare against their baselines in the
same run."""

from __future__ import annotations

import pytest

from tests.support.bench import run_quick

# Smoke runs of bench/ scripts: `.ci/run` runs them after the main suite (`-m bench`), so the
# README's test command stays fast.
pytestmark = pytest.mark.bench


LOAD_KEYS = {"requests", "requests_per_s", "p50_ms", "p99_ms", "errors"}
API_SUMMARY_KEYS = {
    "scenario",
    "graphql_rps",
    "graphql_p50_ms",
    "graphql_p99_ms",
    "plain_rps",
    "plain_p50_ms",
    "plain_p99_ms",
    "ratio",
    "target_met",
}
EXACTLY_ONCE_KEYS = {
    "all_succeeded_no_new_messages",
    "jobs_attempts_not_1",
    "jobs_claimed_twice",
    "jobs_finished_twice",
    "jobs_never_claimed",
}
QUEUE_SUMMARY_KEYS = {
    "jobs_per_s",
    "exactly_once",
    "notify_p50_ms",
    "notify_p99_ms",
    "polling_p50_ms",
    "polling_p99_ms",
    "target_met",
}


def test_api_bench_quick() -> None:
    rows = run_quick("api.py", timeout=90)
    assert all(row["bench"] == "api" for row in rows)
    check = next(row for row in rows if row.get("check") == "same_data")
    assert check["job"] and check["digests"] and check["digests_nested"]
    runs = [row for row in rows if "server" in row]
    assert {(row["scenario"], row["server"]) for row in runs} == {
        (scenario, server)
        for scenario in ("job", "digests", "digests_nested")
        for server in ("graphql", "plain")
    }
    for row in runs:
        assert LOAD_KEYS <= row.keys()
        assert row["requests"] > 0 and row["errors"] == 0
    summaries = [row for row in rows if row.get("summary")]
    assert len(summaries) == 3
    for row in summaries:
        assert API_SUMMARY_KEYS <= row.keys()
    # Polling with If-None-Match: every answer a 304, measured apart from the ratios.
    conditional = next(row for row in rows if row.get("conditional_summary") == "job")
    assert conditional["errors"] == 0
    assert conditional["full_get_rps"] > 0 and conditional["not_modified_rps"] > 0


def test_api_layers_bench_quick() -> None:
    rows = run_quick("api_layers.py", timeout=120)
    assert all(row["bench"] == "api_layers" for row in rows)
    assert [row["scenario"] for row in rows] == ["job", "digests"]
    for row in rows:
        figures = row["us_per_request"]
        assert figures.keys() == {
            "plain",
            "graphql_app",
            "compiled",
            "strawberry",
            "graphql_core",
            "sql",
        }
        assert all(value > 0 for value in figures.values())
        assert 0 < row["ratio_if_only_graphql_core"] and 0 < row["ratio_in_process"]
        assert 0 < row["ratio_if_only_compiled"]


def test_queue_bench_quick() -> None:
    rows = run_quick("job_queue.py", timeout=90)
    assert all(row["bench"] == "queue" for row in rows)
    throughput = [row for row in rows if row.get("phase") == "throughput"]
    latency = [row for row in rows if row.get("phase") == "latency"]
    assert len(throughput) == 1 and EXACTLY_ONCE_KEYS <= throughput[0].keys()
    assert throughput[0]["jobs"] == 200 and throughput[0]["workers"] == 2
    assert {row["mode"] for row in latency} == {"notify", "polling"}
    for row in latency:
        assert {"p50_ms", "p99_ms", "jobs"} <= row.keys()
    summary = rows[-1]
    assert summary.get("summary") and QUEUE_SUMMARY_KEYS <= summary.keys()
    # Correctness is not a timing: a job run twice fails the smoke test too.
    assert summary["exactly_once"] is True
