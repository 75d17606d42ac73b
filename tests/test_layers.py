"""The import direction of the data layer: db/ is imported by runner/, schema/ and server/, never
the other way round, so the SQL layer can be read (and reused) without the rest of the service."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UPPER_LAYERS = ("runner", "schema", "server")


def _imported_modules(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
    return modules


DB_MODULES = sorted((ROOT / "db").glob("*.py"))


def test_db_modules_are_found() -> None:
    names = {path.stem for path in DB_MODULES}
    assert {"jobs", "channels", "digests", "documents", "queries"} <= names


@pytest.mark.parametrize("path", DB_MODULES, ids=lambda path: path.name)
def test_db_imports_nothing_from_upper_layers(path: Path) -> None:
    uphill = sorted(
        module
        for module in _imported_modules(path)
        if module.split(".")[0] in UPPER_LAYERS
    )
    assert uphill == [], f"{path.name} imports {uphill}"


def test_upper_layers_run_no_named_query_themselves() -> None:
    """Every SQL call of runner/, schema/ and server/ goes through a db/ function."""
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for layer in UPPER_LAYERS
        for path in sorted((ROOT / layer).rglob("*.py"))
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if "QUERIES[" in line
    ]
    assert offenders == []


JOB_RUNNER_MODULES = ("runner.jobs", "runner.worker")
# The process wiring starts workers, so it alone builds them (and the document job's settings).
WORKER_WIRING = {Path("server/runtime.py")}


def test_api_and_cli_trigger_jobs_without_importing_a_job_runner() -> None:
    """schema/ and server/ queue jobs through runner.triggers; only the runtime wires workers."""
    offenders = sorted(
        f"{path.relative_to(ROOT)} imports {module}"
        for layer in ("schema", "server")
        for path in sorted((ROOT / layer).rglob("*.py"))
        if path.relative_to(ROOT) not in WORKER_WIRING
        for module in _imported_modules(path)
        if module.startswith(JOB_RUNNER_MODULES)
    )
    assert offenders == []
