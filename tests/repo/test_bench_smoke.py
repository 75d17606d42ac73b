"""Every bench/ script has a smoke test: tests/e2e/bench runs each one in its `--quick` mode
(through tests/support/bench.py's `run_quick`) in modules marked `bench`, which `.ci/run` runs.
A new script without one fails here, not months later when its imports have rotted."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import REPO_ROOT

SMOKE = REPO_ROOT / "tests" / "e2e" / "bench"


def bench_scripts() -> set[str]:
    """bench/*.py that a user runs (underscore modules are the scripts' children and helpers)."""
    return {
        path.name for path in (REPO_ROOT / "bench").glob("*.py") if not path.name.startswith("_")
    }


def quick_runs(module: ast.Module) -> set[str]:
    """The scripts a smoke module runs: the first argument of each `run_quick("x.py", ...)`."""
    return {
        node.args[0].value
        for node in ast.walk(module)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "run_quick"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


def marked_bench(module: ast.Module) -> bool:
    """`pytestmark = pytest.mark.bench` at the module's top level."""
    return any(
        isinstance(node, ast.Assign)
        and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        )
        and ast.unparse(node.value) == "pytest.mark.bench"
        for node in module.body
    )


def smoke_modules() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in SMOKE.glob("test_*.py")}


def test_every_bench_script_has_a_smoke_test() -> None:
    covered = set().union(*(quick_runs(module) for module in smoke_modules().values()))
    missing = sorted(bench_scripts() - covered)
    assert not missing, (
        f"bench scripts without a run_quick smoke test in tests/e2e/bench: {missing}"
    )
    unknown = sorted(covered - bench_scripts())
    assert not unknown, f"smoke tests of scripts that bench/ does not have: {unknown}"


def test_every_smoke_module_is_marked_bench() -> None:
    unmarked = [
        str(path.relative_to(REPO_ROOT))
        for path, module in smoke_modules().items()
        if not marked_bench(module)
    ]
    assert not unmarked, f"smoke modules not marked bench (.ci/run would skip them): {unmarked}"


def test_bench_all_runs_every_script() -> None:
    from bench.all import NEEDS_NO_DATABASE, SCRIPTS

    listed = {f"{name}.py" for name in SCRIPTS}
    missing = sorted(bench_scripts() - {"all.py"} - listed)
    assert not missing, f"bench scripts that bench/all.py does not run: {missing}"
    assert NEEDS_NO_DATABASE <= set(SCRIPTS)
