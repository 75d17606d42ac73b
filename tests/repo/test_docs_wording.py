"""The README and docs speak to users and contributors: they say what a part does and why, not
which issue or specification draft it came from. A reference like "seed 000", "issue 10" or
"issue #12" means nothing to a reader of the project as it is, so none may appear."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

REPO = REPO_ROOT
# The prose a reader opens: the READMEs and every Markdown page under docs/ (the gold set's JSON
# files are data and are not read).
DOCUMENTS = sorted(
    [REPO / "README.md", REPO / "bench" / "README.md", *(REPO / "docs").rglob("*.md")]
)
# "seed 000", "seed-004", "Seed 1", "issue 10", "issue #12", "Issue 15": a number is what makes
# it history ("a fixed random seed" or "the issue a user reports" stay allowed).
HISTORY = re.compile(r"\b(?:seed|issue)[ -]?#?\d", re.IGNORECASE)


def history_mentions(text: str) -> list[str]:
    """Each line of `text` that names an issue or a seed by number, with its line number."""
    return [
        f"{number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), start=1)
        if HISTORY.search(line)
    ]


def test_the_pattern_finds_history_and_nothing_else() -> None:
    text = "\n".join(
        [
            "the cache key (seed 000, 'Cache Key Specification')",
            "the seed-004 audit",
            "Targets are from issue 5.",
            "as asked in issue #12",
            "## Issue 14: digests built on conversations",
            "a fixed random seed (`HIDDEN_SEED = 14`)",
            "Seeds 1,000 digests and jobs",
            "comment on the issue before release 2",
        ]
    )
    assert [entry.split(":")[0] for entry in history_mentions(text)] == ["1", "2", "3", "4", "5"]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_docs_do_not_speak_of_issues_or_seeds(path: Path) -> None:
    assert history_mentions(path.read_text(encoding="utf-8")) == []
