"""scripts/train_items.py as a contributor runs it: on a tiny gold folder (the repository's own
sample window, no shared data needed) it writes the same weights twice, byte for byte, and
`--check` tells an up-to-date file from a stale one."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "train_items.py"


def train(gold: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--gold", str(gold), "--data", str(out.parent / "none")]
        + ["--out", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
    )


def test_same_gold_gives_the_same_weights(tmp_path: Path) -> None:
    gold = tmp_path / "gold"
    gold.mkdir()
    shutil.copy(REPO_ROOT / "docs" / "gold-set" / "sample_team_platform.json", gold)
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    run = train(gold, first)
    assert run.returncode == 0, run.stderr
    assert "1 windows, 70 messages, sources: sample" in run.stdout
    assert "Chat gold set: leave-one-source-out" in run.stdout
    assert train(gold, second).returncode == 0
    assert first.read_bytes() == second.read_bytes()
    data = json.loads(first.read_text(encoding="utf-8"))
    assert set(data["kinds"]) == {"decisions", "action_items", "open_questions"}
    # One source: the held-out model never saw a labelled message, so no model may decide.
    assert {kind["mode"] for kind in data["kinds"].values()} == {"rules"}
    assert train(gold, first, "--check").returncode == 0
    first.write_text(first.read_text(encoding="utf-8").replace('"bias": ', '"bias": 1', 1))
    stale = train(gold, first, "--check")
    assert stale.returncode == 1 and "differs" in stale.stdout
