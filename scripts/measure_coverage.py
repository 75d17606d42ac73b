"""Measure line and branch coverage of the document and report code: run their unit and
integration tests (and those of their GraphQL parts) under coverage.py with branch
coverage, then print each module's line and branch percentages, worst first, and the total.

    python scripts/measure_coverage.py [--html DIR] [extra pytest arguments]

It runs pytest in this process, so coverage sees every module the tests import; it takes
minutes (the integration tests start an embedded PostgreSQL), which is why it is a script run on
demand and not part of the test run. The exit code is pytest's.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import coverage
import pytest

ROOT = Path(__file__).resolve().parents[1]

# What is measured: the two feature folders and the GraphQL modules that expose them (paths
# relative to the repository root, as coverage.py's file patterns). Not their CLI commands
# (server/cli_documents.py, server/cli_reports.py): their tests run `digestd` in subprocesses
# (tests/e2e/server), which a measure of this process cannot see.
MEASURED = [
    "runner/documents/*",
    "runner/reports/*",
    "schema/types/document.py",
    "schema/types/report.py",
    "schema/resolvers/documents.py",
    "schema/resolvers/reports.py",
]
# The folders holding them: traced from the start, so a module no test imports counts as 0%.
# (Not `source_pkgs`: resolving a module name imports its parent packages before tracing.)
TRACED = ["runner/documents", "runner/reports", "schema/types", "schema/resolvers"]
# The tests of what is measured (paths relative to the repository root; globs allowed).
TESTS = [
    "tests/unit/runner/documents",
    "tests/unit/runner/reports",
    "tests/integration/runner/documents",
    "tests/integration/runner/reports",
    "tests/integration/schema/resolvers/test_document_batch.py",
    "tests/integration/schema/resolvers/test_report*.py",
    "tests/integration/server/test_documents_api.py",
    "tests/integration/server/test_document_metadata.py",
]


@dataclass(frozen=True)
class ModuleCoverage:
    """One module's counts, as coverage.py's JSON report gives them."""

    path: str
    statements: int
    missed_statements: int
    branches: int
    missed_branches: int

    @property
    def line_percent(self) -> float:
        return _percent(self.statements - self.missed_statements, self.statements)

    @property
    def branch_percent(self) -> float:
        return _percent(self.branches - self.missed_branches, self.branches)


def _percent(covered: int, total: int) -> float:
    return 100.0 * covered / total if total else 100.0


def test_paths() -> list[str]:
    """The test files and folders of `TESTS` that exist (globs expanded, in order)."""
    found: list[str] = []
    for pattern in TESTS:
        found += sorted(str(path.relative_to(ROOT)) for path in ROOT.glob(pattern))
    return found


def read_report(report: dict[str, object]) -> list[ModuleCoverage]:
    """Each measured file of a coverage.py JSON report, sorted worst first (line percentage,
    then branch percentage, then path)."""
    files = report["files"]
    assert isinstance(files, dict)
    modules = [
        ModuleCoverage(
            str(Path(path).resolve().relative_to(ROOT)) if Path(path).is_absolute() else path,
            int(entry["summary"]["num_statements"]),
            int(entry["summary"]["missing_lines"]),
            int(entry["summary"]["num_branches"]),
            int(entry["summary"]["missing_branches"]),
        )
        for path, entry in files.items()
    ]
    return sorted(modules, key=lambda m: (m.line_percent, m.branch_percent, m.path))


def table(modules: list[ModuleCoverage]) -> str:
    """The per-module lines and the total, aligned."""
    width = max([len(m.path) for m in modules] + [len("TOTAL")])
    header = f"{'module':<{width}}  {'lines':>13}  {'line %':>6}  {'branches':>11}  {'branch %':>8}"
    rows = [header, "-" * len(header)]

    def row(name: str, m: ModuleCoverage) -> str:
        lines = f"{m.statements - m.missed_statements}/{m.statements}"
        branches = f"{m.branches - m.missed_branches}/{m.branches}"
        return (
            f"{name:<{width}}  {lines:>13}  {m.line_percent:>6.1f}  {branches:>11}  "
            f"{m.branch_percent:>8.1f}"
        )

    rows += [row(m.path, m) for m in modules]
    total = ModuleCoverage(
        "TOTAL",
        sum(m.statements for m in modules),
        sum(m.missed_statements for m in modules),
        sum(m.branches for m in modules),
        sum(m.missed_branches for m in modules),
    )
    rows += ["-" * len(header), row("TOTAL", total)]
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", type=Path, help="also write coverage.py's HTML report here")
    args, pytest_args = parser.parse_known_args(argv)
    with tempfile.TemporaryDirectory(prefix="digestd-coverage-") as scratch:
        measured = coverage.Coverage(
            data_file=str(Path(scratch) / ".coverage"),
            branch=True,
            source=[str(ROOT / folder) for folder in TRACED],
            config_file=False,
        )
        measured.start()
        try:
            status = pytest.main(["-q", "-p", "no:cacheprovider", *test_paths(), *pytest_args])
        finally:
            measured.stop()
            measured.save()
        report_file = Path(scratch) / "coverage.json"
        include = [str(ROOT / pattern) for pattern in MEASURED]
        measured.json_report(outfile=str(report_file), include=include)
        if args.html is not None:
            measured.html_report(directory=str(args.html), include=include)
        modules = read_report(json.loads(report_file.read_text("utf-8")))
    print(table(modules))
    return int(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
