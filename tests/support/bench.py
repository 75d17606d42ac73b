"""A bench/ script in its quick mode, for the smoke tests of tests/e2e/bench: run as a subprocess
(as a user runs it), its exit status checked and its stdout read as JSON lines, one object each.
No timings are checked: on a shared CI machine they mean little, and each benchmark compares
against its peer in the same run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.support.paths import REPO_ROOT


def run_quick(
    script: str, timeout: float, *, database: bool = True, args: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """The JSON lines of `bench/<script> --quick <args>`; with `database`, the suite's
    disposable TEST_DATABASE_URL when it has one (else the script starts an embedded one)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DIGESTD_API_TOKENS")}
    extra = (
        ["--database-url", os.environ["TEST_DATABASE_URL"]]
        if database and "TEST_DATABASE_URL" in env
        else []
    )
    completed = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / script), "--quick", *args, *extra],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    lines = [line for line in completed.stdout.splitlines() if line.strip()]
    assert lines, "the benchmark printed nothing"
    rows = [json.loads(line) for line in lines]  # every line is one JSON object
    assert all(isinstance(row, dict) for row in rows)
    return rows
