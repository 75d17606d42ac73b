"""docs/architecture.md stays true to the tree: its index is the first sentence of each module
docstring (scripts/module_index.py --write refreshes it), the files and folders it names exist,
the dependency chain it states is the one the imports follow, the file counts of its tree are
the real counts, its table of the runner modules that do I/O is the DOES_IO list of
tests/repo/test_layers.py, and each of its four flows names the files it passes through."""

from __future__ import annotations

import ast
import re
from itertools import pairwise
from pathlib import Path

import pytest

from scripts.module_index import DOC, ROOT, index, modules

TEXT = DOC.read_text("utf-8")


def section(title: str) -> str:
    """The text under the `## title` heading, up to the next heading of the same level."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", TEXT, flags=re.S | re.M)
    assert match is not None, f"no section '## {title}'"
    return match.group(1)


def test_the_module_index_is_current() -> None:
    assert index() in TEXT, "run: python scripts/module_index.py --write"


def test_every_module_has_a_docstring() -> None:
    missing = [
        str(path.relative_to(ROOT))
        for path in modules()
        if not ast.get_docstring(ast.parse(path.read_text("utf-8")))
    ]
    assert missing == []


TOP = r"(?:server|schema|db|runner|bench|scripts|tests|docs)"


def test_every_file_the_document_names_exists() -> None:
    named = set(re.findall(rf"`({TOP}/[\w/.]+\.(?:py|sql|md|json|graphql))`", TEXT))
    assert len(named) > 100
    assert sorted(name for name in named if not (ROOT / name).is_file()) == []


def test_every_folder_the_document_names_exists() -> None:
    named = set(re.findall(rf"`({TOP}/(?:[\w.-]+/)*)`", TEXT))
    assert len(named) > 20
    assert sorted(name for name in named if not (ROOT / name).is_dir()) == []


# The chain, left to right: a package imports only packages to its right.
CHAIN = ("server", "schema", "runner", "db")


def _imported_packages(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names & set(CHAIN)


IMPORTS = {
    package: {
        str(path.relative_to(ROOT)): _imported_packages(path)
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    for package in CHAIN
}


def test_the_document_states_the_chain() -> None:
    assert "## The chain: server → schema → runner → db" in TEXT


@pytest.mark.parametrize("package", CHAIN)
def test_no_package_imports_one_to_its_left(package: str) -> None:
    left = set(CHAIN[: CHAIN.index(package)])
    uphill = sorted(
        f"{path} imports {sorted(found & left)}"
        for path, found in IMPORTS[package].items()
        if found & left
    )
    assert uphill == []


@pytest.mark.parametrize("importer, imported", list(pairwise(CHAIN)))
def test_each_link_of_the_chain_is_used(importer: str, imported: str) -> None:
    assert any(imported in found for found in IMPORTS[importer].values())


# A line of the tree: the folder, its count and what is counted, then what it holds.
TREE_LINE = re.compile(r"^\s*((?:[\w.-]+/)+)\s+(\d+) (\.py|\.sql|files)\s+\S")


def _tree() -> dict[str, tuple[int, str]]:
    block = re.search(r"```\n(.*?)```", section("The tree"), flags=re.S)
    assert block is not None
    lines = block.group(1).splitlines()
    entries = {}
    for line in lines:
        match = TREE_LINE.match(line)
        assert match is not None, f"not a tree line: {line!r}"
        entries[match.group(1)] = (int(match.group(2)), match.group(3))
    assert len(entries) == len(lines), "a folder is listed twice"
    return entries


def _count(folder: str, unit: str) -> int:
    files = [
        path
        for path in (ROOT / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    ]
    return len(files) if unit == "files" else sum(path.suffix == unit for path in files)


def test_the_tree_counts_are_the_real_counts() -> None:
    wrong = {
        folder: f"says {count} {unit}, holds {_count(folder, unit)}"
        for folder, (count, unit) in _tree().items()
        if _count(folder, unit) != count
    }
    assert wrong == {}


def test_the_tree_lists_every_code_folder() -> None:
    """Every folder of the four packages that holds Python, each level of tests/, and the other
    top-level folders."""
    code = {
        f"{path.parent.relative_to(ROOT)}/"
        for package in CHAIN
        for path in (ROOT / package).rglob("*.py")
    }
    levels = {
        f"tests/{path.name}/"
        for path in (ROOT / "tests").iterdir()
        if path.is_dir() and path.name != "__pycache__"
    }
    expected = code | levels | {"tests/", "bench/", "scripts/", "docs/"}
    assert sorted(expected - set(_tree())) == []


def _does_io() -> dict[str, str]:
    """DOES_IO as tests/repo/test_layers.py writes it (read, not imported: no test module
    imports another)."""
    tree = ast.parse((ROOT / "tests" / "repo" / "test_layers.py").read_text("utf-8"))
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "DOES_IO"
        ):
            value: dict[str, str] = ast.literal_eval(node.value)
            return value
    raise AssertionError("no DOES_IO in tests/repo/test_layers.py")


def test_the_io_table_lists_exactly_does_io() -> None:
    rows = re.findall(r"^\| `([\w/.]+)` \|", section("Runner modules that do I/O"), flags=re.M)
    assert len(rows) == len(set(rows))
    assert sorted(rows) == sorted(_does_io())


def test_the_io_section_names_every_store_and_job_module() -> None:
    shells = {
        str(path.relative_to(ROOT))
        for name in ("store.py", "job.py")
        for path in (ROOT / "runner").rglob(name)
    }
    rule = section("Runner modules that do I/O").split("| module |")[0]
    assert set(re.findall(r"`(runner/[\w/]+/(?:store|job)\.py)`", rule)) == shells


FLOWS = ("Import of a chat export", "A channel digest", "A document digest", "A report")


def test_the_four_flows_are_there() -> None:
    flows = section("The four flows")
    assert re.findall(r"^### (.+)$", flows, flags=re.M) == list(FLOWS)


@pytest.mark.parametrize("flow", FLOWS)
def test_each_flow_walks_through_existing_files_from_api_to_db(flow: str) -> None:
    text = section("The four flows").split(f"### {flow}\n")[1].split("\n### ")[0]
    steps = re.findall(r"^\d+\. (.*?)(?=^\d+\. |^\n|\Z)", text, flags=re.S | re.M)
    files = [name for step in steps for name in re.findall(rf"`({TOP}/[\w/.]+\.(?:py|sql))`", step)]
    assert len(steps) >= 4 and len(set(files)) >= 6
    assert [name for name in files if not (ROOT / name).is_file()] == []
    # Each flow enters through the API or the CLI and ends in the database.
    assert files[0].startswith(("schema/", "server/"))
    assert any(name.startswith("runner/") for name in files)
    assert files[-1].startswith("db/") or re.search(r"`db/[\w/]+\.py`", steps[-1])
