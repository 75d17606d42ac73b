"""The gold set itself: every file follows the format, every cited id is in its window, and
every span's quote is exactly the normalized text it points at."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from pydantic import ValidationError

from runner.evaluation.gold import (
    GoldArtifact,
    GoldFileError,
    WindowRoot,
    load_gold_dir,
    load_gold_file,
)
from runner.evaluation.windows import Roots, check_gold_against_window, load_window
from tests.support.paths import DATA_DIR, REPO_ROOT, shared_data

GOLD_DIR = REPO_ROOT / "docs" / "gold-set"
GOLD_FILES = sorted(GOLD_DIR.glob("*.json"))


def test_the_gold_set_has_the_sample_and_at_least_three_real_windows() -> None:
    golds = [gold for _, gold in load_gold_dir(GOLD_DIR)]
    roots = [gold.window.root for gold in golds]
    assert roots.count(WindowRoot.REPO) == 1
    assert roots.count(WindowRoot.DATA) >= 3
    assert len({gold.name for gold in golds}) == len(golds)
    assert all(
        gold.window.path.startswith(("chat/", "meetings/"))
        for gold in golds
        if gold.window.root == "data"
    )


@pytest.mark.parametrize("path", GOLD_FILES, ids=[p.stem for p in GOLD_FILES])
def test_gold_file_matches_its_window(path: Path) -> None:
    gold = load_gold_file(path)
    if gold.window.root == WindowRoot.DATA:
        shared_data(gold.window.path)  # skips when ../shared/data is absent
    window = load_window(gold, Roots(repo=REPO_ROOT, data=DATA_DIR))
    assert len(window.messages) == gold.window.message_count
    assert check_gold_against_window(gold, window) == []
    texts = {m.message_id: m.normalized_text for m in window.messages}
    for artifact in gold.artifacts:  # the same check, spelled out
        sliced = texts[artifact.message_id][artifact.char_start : artifact.char_end]
        if artifact.quote is not None:
            assert sliced == artifact.quote
        else:
            assert hashlib.sha256(sliced.encode()).hexdigest() == artifact.quote_sha256
    owners = [item.owner for item in gold.action_items]
    assert all(owners), "every gold action item names its owner"


def test_a_wrong_quote_is_reported(tmp_path: Path) -> None:
    gold = load_gold_file(GOLD_DIR / "sample_team_platform.json")
    window = load_window(gold, Roots(repo=REPO_ROOT, data=None))
    first = gold.artifacts[0]
    shifted = first.model_copy(
        update={"char_start": first.char_start + 1, "char_end": first.char_end + 1}
    )
    broken = gold.model_copy(update={"artifacts": [shifted]})
    [problem] = check_gold_against_window(broken, window)
    assert "is not its quote" in problem


def test_artifact_quote_forms_are_validated() -> None:
    base = {"kind": "code", "title": "t", "message_id": "m", "char_start": 0}
    GoldArtifact.model_validate({**base, "char_end": 3, "quote": "abc"})
    with pytest.raises(ValidationError, match="len\\(quote\\)"):
        GoldArtifact.model_validate({**base, "char_end": 4, "quote": "abc"})
    with pytest.raises(ValidationError, match="quote_head"):
        GoldArtifact.model_validate({**base, "char_end": 300, "quote_head": "abc"})
    digest = hashlib.sha256(b"abc-xyz").hexdigest()
    long_form = GoldArtifact.model_validate(
        {**base, "char_end": 7, "quote_head": "abc", "quote_tail": "xyz", "quote_sha256": digest}
    )
    assert long_form.quotes("abc-xyz") and not long_form.quotes("abc_xyz")


def test_bad_gold_files_and_folders_are_rejected_with_their_name(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"format": "digestd-gold/0"}', encoding="utf-8")
    with pytest.raises(GoldFileError, match="bad.json"):
        load_gold_file(path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(GoldFileError, match="no \\*.json"):
        load_gold_dir(empty)
    with pytest.raises(GoldFileError, match="not a directory"):
        load_gold_dir(tmp_path / "missing")
