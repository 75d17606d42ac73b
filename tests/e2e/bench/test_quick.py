"""Smoke test of bench/ingest.py, bench/pipeline.py, bench/keyset.py, bench/disentangle.py,
bench/coverage.py, bench/scale.py and bench/all.py: each runs with `--quick` as a subprocess and
prints valid JSON lines with the expected keys. No thresholds: timings on a shared CI machine mean
little; each benchmark compares against its peer in the same run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.bench import run_quick
from tests.support.paths import REPO_ROOT, shared_data

# Smoke runs of bench/ scripts: `.ci/run` runs them after the main suite (`-m bench`), so the
# README's test command stays fast.
pytestmark = pytest.mark.bench


def test_ingest_bench_quick() -> None:
    rows = run_quick("ingest.py", timeout=120, database=True)
    assert all(row["bench"] == "ingest" for row in rows)
    setup = rows[0]
    assert setup["kind"] == "setup" and {"messages", "nproc", "cpu", "postgres"} <= setup.keys()
    runs = [row for row in rows if row["kind"] == "run" and "skipped" not in row]
    peers = {row["peer"] for row in runs}
    assert {"cli", "import_path", "asyncpg_per_row"} <= peers
    for row in runs:
        assert {"messages", "seconds", "msgs_per_s", "stored"} <= row.keys()
        assert row["stored"] == row["messages"]  # every message landed, once
    summary = rows[-1]
    assert summary["kind"] == "summary"
    expected = {"cli_msgs_per_s", "ratio", "baseline", "target_rate_met", "target_ratio_met"}
    assert expected <= summary.keys()


def test_pipeline_bench_quick() -> None:
    rows = run_quick("pipeline.py", timeout=120, database=False)
    assert all(row["bench"] == "pipeline" for row in rows)
    runs = [row for row in rows if row["kind"] == "run"]
    assert {row["mode"] for row in runs} == {"instant", "server"}
    for row in runs:
        assert {"wall_seconds", "llm_calls", "prompt_per_content", "chunks"} <= row.keys()
        # A map request per `chunks_per_request` chunks (DIGESTD_CHUNKS_PER_REQUEST), a reduce.
        map_requests = -(-row["chunks"] // row["chunks_per_request"])
        assert row["chunks_failed"] == 0 and row["llm_calls"] >= map_requests + 1
    served = next(row for row in runs if row["mode"] == "server")
    assert {"model_busy_seconds", "overhead_share", "ideal_seconds", "slack_share"} <= served.keys()
    summary = rows[-1]
    assert summary["kind"] == "summary"
    assert {
        "overhead_share",
        "prompt_per_content",
        "target_overhead_met",
        "target_prompt_per_content_met",
    } <= summary.keys()


def test_keyset_bench_quick() -> None:
    rows = run_quick("keyset.py", timeout=120, database=True)
    assert all(row["bench"] == "keyset" for row in rows)
    assert any(row["kind"] == "check" and row["same_rows"] for row in rows)
    methods = {row["method"] for row in rows if row["kind"] == "method"}
    assert methods == {"sql/keyset", "sql/offset", "graphql/keyset"}
    for row in rows:
        if row["kind"] == "method":
            assert {"first_page_ms", "deep_page_ms", "deep_over_first"} <= row.keys()
    summary = rows[-1]
    assert summary["kind"] == "summary"
    assert {
        "sql_keyset_deep_over_first",
        "graphql_keyset_deep_over_first",
        "sql_offset_deep_over_first",
        "target_met",
    } <= summary.keys()


def test_disentangle_bench_quick() -> None:
    shared_data("chat/ubuntu_irc_disentanglement/dev")
    rows = run_quick("disentangle.py", timeout=120, database=False)
    assert all(row["bench"] == "disentangle" for row in rows)
    assert rows[0]["kind"] == "setup" and rows[0]["logs"] == 1
    runs = [row for row in rows if row["kind"] == "run"]
    assert {row["peer"] for row in runs} == {"model", "lowe", "previous"}
    for row in runs:
        assert row["messages"] == rows[0]["messages"] and row["msgs_per_cpu_s"] > 0
    summary = rows[-1]
    assert summary["kind"] == "summary"
    assert {
        "model_msgs_per_cpu_s",
        "lowe_msgs_per_cpu_s",
        "scoring_share",
        "target_rate_met",
    } <= summary.keys()


def test_all_runs_the_chosen_benchmarks_and_passes_their_lines_through() -> None:
    rows = run_quick("all.py", timeout=120, database=True, args=("--only", "keyset"))
    assert any(row["bench"] == "keyset" and row["kind"] == "summary" for row in rows)
    assert rows[-1] == {**rows[-1], "bench": "all", "script": "keyset", "exit": 0}


def test_all_refuses_an_unknown_benchmark_by_name() -> None:
    completed = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "all.py"), "--only", "keyset,nope"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 2 and "unknown benchmark(s): nope" in completed.stderr


def test_coverage_bench_quick() -> None:
    rows = run_quick("coverage.py", timeout=180, database=True)
    assert all(row["bench"] == "coverage" for row in rows)
    runs = [row for row in rows if row["kind"] == "run"]
    assert {row["peer"] for row in runs} == {"watermark", "coverage"}
    for row in runs:
        assert {"seconds", "window_seconds", "pipeline_seconds", "store_seconds"} <= row.keys()
        assert row["messages"] == rows[0]["messages"]  # each peer read the whole channel
    assert any(
        row["kind"] == "check" and row["coverage_channels_uncovered_after"] == 0 for row in rows
    )
    summary = rows[-1]
    assert summary["kind"] == "summary"
    assert {
        "watermark_seconds",
        "coverage_seconds",
        "overhead",
        "database_overhead",
        "target_met",
    } <= summary.keys()


def test_scale_bench_quick() -> None:
    rows = run_quick("scale.py", timeout=300, database=False, args=("--repeats", "2"))
    assert all(row["bench"] == "scale" for row in rows)
    runs = [row for row in rows if row["kind"] == "run"]
    assert {row["messages"] for row in runs} == {1000, 5000}
    for row in runs:
        assert row["failed_chunks"] == 0 and row["msgs_per_s"] > 0 and row["peak_rss_mb"] > 0
    summary = rows[-1]
    assert summary["kind"] == "summary" and summary["deterministic"] is True
    assert {"per_message_ratio", "cpu_per_message_ratio", "target_linear_met"} <= summary.keys()
