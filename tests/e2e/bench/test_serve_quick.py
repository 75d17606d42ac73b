"""Smoke test of bench/event_loop.py and bench/subscriptions.py, the benchmarks that digest through
a `digestd serve` process: each runs with `--quick` as a subprocess and prints JSON lines with the
expected keys. No thresholds: timings on a shared CI machine mean little; each benchmark compares
against its peer in the same run."""

from __future__ import annotations

import pytest

from tests.support.bench import run_quick

# Smoke runs of bench/ scripts: `.ci/run` runs them after the main suite (`-m bench`), so the
# README's test command stays fast.
pytestmark = pytest.mark.bench

HEALTHZ_KEYS = {"healthz_probes", "healthz_p50_ms", "healthz_p95_ms", "healthz_max_ms"}


def test_event_loop_bench_quick() -> None:
    rows = run_quick("event_loop.py", timeout=180)
    assert all(row["bench"] == "event_loop" for row in rows)
    setup = rows[0]
    assert setup["kind"] == "setup" and {"messages", "machine"} <= setup.keys()
    runs = [row for row in rows if row["kind"] == "run"]
    assert [row["mode"] for row in runs] == ["in_loop", "offloaded"]
    for row in runs:
        assert HEALTHZ_KEYS | {"job_seconds", "job_attempts", "chunks"} <= row.keys()
        assert row["messages"] == setup["messages"] and row["job_status"] == "succeeded"
        assert row["healthz_probes"] > 0 and row["chunks"] > 0
    summary = rows[-1]
    assert summary["kind"] == "summary"
    assert {"healthz_max_ms", "healthz_p95_ms", "job_seconds", "attempts"} <= summary.keys()
    # The offline digest is deterministic: where its CPU work runs changes nothing it stores.
    assert summary["same_digest"] is True


def test_subscriptions_bench_quick() -> None:
    rows = run_quick("subscriptions.py", timeout=180)
    assert all(row["bench"] == "subscriptions" for row in rows)
    setup = rows[0]
    assert setup["kind"] == "setup" and setup["watches"] > 0
    runs = [row for row in rows if row["kind"] == "run"]
    assert [row["watches"] for row in runs] == [0, setup["watches"]]
    for row in runs:
        assert row["status"] == "succeeded" and row["messages"] == setup["messages"]
        assert row["job_seconds"] > 0
    unwatched, watched = runs
    assert unwatched["messages_received"] == 0
    # Every subscription ends with its own `complete`, after the job's progress.
    assert watched["messages_received"] >= watched["watches"]
    summary = rows[-1]
    assert summary["kind"] == "summary" and summary["watches"] == setup["watches"]
    assert {"unwatched", "watched", "ratio"} <= summary.keys()
    assert summary["watched"]["runs"] == summary["unwatched"]["runs"] == 1
