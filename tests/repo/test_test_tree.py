"""The layout of tests/ itself: every folder is a package, so a test folder named like a code
package (tests/unit/runner) is imported as `tests.unit.runner` and never shadows `runner`; and no
test module imports another one (shared helpers live in tests/support, fixtures in conftest.py)."""

from __future__ import annotations

import ast

from tests.support.paths import REPO_ROOT

TESTS = REPO_ROOT / "tests"


def test_every_test_folder_is_a_package() -> None:
    folders = [
        TESTS,
        *(path for path in TESTS.rglob("*") if path.is_dir() and path.name != "__pycache__"),
    ]
    missing = [
        str(folder.relative_to(REPO_ROOT))
        for folder in folders
        if not (folder / "__init__.py").exists()
    ]
    assert not missing, f"folders without __init__.py: {missing}"


def test_no_test_module_imports_another_test_module() -> None:
    offenders = []
    for path in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                last = name.rsplit(".", 1)[-1]
                if last.startswith("test_") or last == "conftest":
                    offenders.append(f"{path.relative_to(REPO_ROOT)}: {name}")
    assert not offenders, offenders
