"""Smoke test of bench/scale.py's end-to-end mode: a small generated channel imported with
`digestd import` and digested by two `digestd worker` processes over a small window cap, so its
backlog is cut into coverage slices; the figures are printed as JSON lines and every message is
covered exactly once. No thresholds: the figures are for bench/scale.py's reader."""

from __future__ import annotations

import pytest

from tests.support.bench import run_quick

pytestmark = pytest.mark.bench


# Three `digestd` processes start and a PostgreSQL database is made: minutes on a busy machine.
@pytest.mark.timeout(900)
def test_scale_bench_end_to_end_quick() -> None:
    rows = run_quick("scale.py", timeout=900, database=True, args=("--end-to-end",))
    assert all(row["bench"] == "scale" and row["mode"] == "end_to_end" for row in rows)
    [run] = [row for row in rows if row["kind"] == "run"]
    assert run["messages"] == 2000 and run["cap"] == 500 and run["workers"] == 2
    # 2,000 messages over a cap of 500: four slices, all succeeded, each message covered once.
    assert run["slices"] == 4 and run["failed_jobs"] == 0 and run["exactly_once"] is True
    assert sum(run["slices_per_worker"]) == 4
    for key in ("import_seconds", "digest_seconds", "total_seconds", "msgs_per_s"):
        assert run[key] > 0
    assert len(run["worker_peak_rss_mb"]) == 2 and min(run["worker_peak_rss_mb"]) > 0
    summary = rows[-1]
    assert summary["kind"] == "summary" and summary["exactly_once"] is True
    assert {"target_seconds_met", "target_rss_met", "pool_peak_rss_mb"} <= summary.keys()
