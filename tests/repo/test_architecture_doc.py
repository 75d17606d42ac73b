"""docs/architecture.md names every module's job, in the module's own words: its index is the
first sentence of each module docstring (scripts/module_index.py --write refreshes it), and the
files it walks a reader through exist."""

from __future__ import annotations

import re

from scripts.module_index import DOC, ROOT, index, modules


def test_the_module_index_is_current() -> None:
    document = DOC.read_text("utf-8")
    assert index() in document, "run: python scripts/module_index.py --write"


def test_every_module_has_a_docstring() -> None:
    import ast

    missing = [
        str(path.relative_to(ROOT))
        for path in modules()
        if not ast.get_docstring(ast.parse(path.read_text("utf-8")))
    ]
    assert missing == []


def test_every_file_the_document_names_exists() -> None:
    # The paragraph on the earlier layout names files that are gone on purpose.
    text = re.sub(r"\nBefore the restructure.*?\n\n", "\n", DOC.read_text("utf-8"), flags=re.S)
    named = set(
        re.findall(
            r"`((?:server|schema|db|runner|bench|scripts|tests)/[\w/.]+\.(?:py|sql|md))`", text
        )
    )
    assert len(named) > 20
    assert sorted(name for name in named if not (ROOT / name).exists()) == []
