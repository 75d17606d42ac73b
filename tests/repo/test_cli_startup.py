"""`digestd --help` (and any command's --help, or a mistyped command) answers without importing
the database, API, model or progress libraries: server/cli.py only parses, and each command's
handler is imported when it runs. Checked on the modules a fresh interpreter holds afterwards,
so the test does not depend on how fast the machine is."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.paths import REPO_ROOT

# Each is a tenth of a second or more to import; none is needed to print help.
HEAVY = (
    "asyncpg",
    "sqlalchemy",
    "sqlmodel",
    "pydantic",
    "pydantic_settings",
    "strawberry",
    "graphql",
    "starlette",
    "uvicorn",
    "openai",
    "httpx",
    "numpy",
    "bm25s",
    "tiktoken",
    "trafilatura",
    "pypdf",
    "tqdm",
    "db",
    "schema",
    "server.runtime",
    "server.settings",
    "runner.worker",
)

PROBE = """
import json, sys
from server.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = json.loads({heavy!r})
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy or m in heavy)))
"""


def loaded_after(*args: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=json.dumps(HEAVY)), *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    found: list[str] = json.loads(result.stdout.splitlines()[-1])
    return found


@pytest.mark.parametrize(
    "args",
    [["--help"], ["digest", "--help"], ["show", "--help"], ["no-such-command"]],
    ids=" ".join,
)
def test_help_imports_no_heavy_module(args: list[str]) -> None:
    assert loaded_after(*args) == []


def test_the_probe_sees_a_heavy_import() -> None:
    """The check is not vacuous: a command that runs does import them."""
    found = loaded_after("schema")
    assert "schema" in found and "strawberry" in found
