"""Where the tests find things: the repository root, the bundled sample channel, and the real
data kept beside the checkout (../shared/data), whatever the depth of the test asking."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE = REPO_ROOT / "runner" / "samples" / "sample_channel.jsonl"
DATA_DIR = REPO_ROOT.parent / "shared" / "data"


def shared_data(relative: str) -> Path:
    """A file under ../shared/data, or a skip when the data is not beside the checkout."""
    path = DATA_DIR / relative
    if not path.exists():
        pytest.skip(f"../shared/data/{relative} is absent (real data lives beside the repo)")
    return path
