"""Smoke test of bench/workers.py: a small backlog of channel digests drained by real `digestd
worker` processes (one, two, and two machines of one) in `--quick` mode, printing JSON lines with
the expected keys and every run exactly once. No thresholds: timings on a shared CI machine mean
little; the benchmark compares the configurations in the same run."""

from __future__ import annotations

import pytest

from tests.support.bench import run_quick

# Smoke runs of bench/ scripts: `.ci/run` runs them after the main suite (`-m bench`), so the
# README's test command stays fast.
pytestmark = pytest.mark.bench

RUN_KEYS = {
    "config",
    "repeat",
    "workers",
    "machines",
    "jobs",
    "messages",
    "wall_seconds",
    "drain_seconds",
    "jobs_per_s",
    "msgs_per_s",
    "worker_cpu_seconds",
    "worker_cores",
    "machine_busy_cores",
    "load_average",
    "jobs_per_worker",
}
# Counts of what went wrong, each 0 in a run that was exactly once.
FAULT_KEYS = {
    "jobs_not_succeeded",
    "jobs_attempts_not_1",
    "jobs_digests_not_1",
    "messages_uncovered",
    "messages_not_read_once",
    "messages_covered_elsewhere",
}


def test_workers_bench_quick() -> None:
    rows = run_quick("workers.py", timeout=240)
    assert all(row["bench"] == "workers" for row in rows)
    setup = rows[0]
    assert setup["kind"] == "setup" and setup["configs"] == ["1", "2", "1+1"]
    assert setup["channels"] == 12 and setup["messages"] > 0
    runs = [row for row in rows if row["kind"] == "run"]
    assert [row["config"] for row in runs] == ["1", "2", "1+1"]
    for row in runs:
        assert RUN_KEYS | FAULT_KEYS <= row.keys()
        assert row["jobs"] == row["jobs_checked"] == setup["channels"]
        assert row["messages"] == row["messages_checked"] == setup["messages"]
        # Correctness is not a timing: a job run twice or a message lost fails the smoke test.
        assert row["exactly_once"] is True
        assert all(row[key] == 0 for key in FAULT_KEYS)
        assert sum(row["jobs_per_worker"]) == row["jobs"]
        assert row["workers_that_ran_jobs"] <= row["workers"]
    assert [row["machines"] for row in runs] == [1, 1, 2]
    summary = rows[-1]
    assert summary["kind"] == "summary" and summary["exactly_once"] is True
    assert summary["configs"].keys() == {"1", "2", "1+1"}
    assert summary["speedup_median"]["1"] == 1.0
    assert isinstance(summary["grows_until_cores"], bool)
