"""Smoke test of bench/rows.py, bench/documents_digest.py and bench/pdf_memory.py: each runs
with `--quick` as a subprocess and prints JSON lines with the expected keys. No thresholds:
timings on a shared CI machine mean little."""

from __future__ import annotations

import pytest

from tests.support.bench import run_quick
from tests.support.paths import shared_data

# Smoke runs of bench/ scripts: `.ci/run` runs them after the main suite (`-m bench`), so the
# README's test command stays fast.
pytestmark = pytest.mark.bench

DIGEST_KEYS = {
    "ingest_ms",
    "canonical_chars",
    "digest_chars",
    "compression_ratio",
    "evidence",
    "key_points",
    "digest_ms",
    "warnings",
}


def test_rows_bench_quick() -> None:
    rows = run_quick("rows.py", timeout=120)
    assert len(rows) == 1
    (result,) = rows
    assert result["bench"] == "rows" and result["kind"] == "result" and result["rows"] == 100
    ways = ("query", "model_construct", "model_validate", "table_init")
    assert all(result[way] > 0 for way in ways)


def test_documents_digest_bench_quick() -> None:
    shared_data("docs")
    rows = run_quick("documents_digest.py", timeout=120, database=False)
    assert all(row["bench"] == "documents_digest" for row in rows)
    runs = [row for row in rows if row["kind"] == "run"]
    assert {row["format"] for row in runs} == {"html", "pdf"}
    for row in runs:
        if "error" in row:  # a PDF refused with its code and why (no text layer, say)
            assert row["error"] and row["reason"]
        else:
            assert DIGEST_KEYS <= row.keys() and row["evidence"] > 0
    readability = [row for row in runs if row["format"] == "html"]
    assert readability and all(0 <= row["f1"] <= 1 for row in readability)
    summary = rows[-1]
    assert summary["kind"] == "summary" and summary["repeat"] == 1
    assert summary["documents"] == len(runs)
    assert summary["digested"] == sum(1 for row in runs if "error" not in row) > 0
    assert summary["refused"] == sum(1 for row in runs if "error" in row)


def test_pdf_memory_bench_quick() -> None:
    shared_data("docs/pdf/acl19irc.pdf")
    rows = run_quick("pdf_memory.py", timeout=180, database=False)
    assert all(row["bench"] == "pdf_memory" for row in rows)
    runs = [row for row in rows if row["kind"] == "run"]
    assert {(row["peer"], row["copies"]) for row in runs} == {
        (peer, copies) for peer in ("digestd", "pypdf_plain") for copies in (1, 2)
    }
    for row in runs:
        assert row["pages_read"] == 11 * row["copies"] and row["peak_mb"] > 0
        assert row["limits_cut"] is False
    summary = rows[-1]
    assert summary["kind"] == "summary" and summary["copies"] == 2
    assert {"digestd_peak_mb", "pypdf_plain_peak_mb", "peak_ratio"} <= summary.keys()
