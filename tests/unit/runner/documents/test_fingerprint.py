"""The near-duplicate fingerprint on real documents (../shared/data): each readability page and
its extracted article, and crazyones.pdf and its expected text, are near-duplicates; no two
distinct documents are (the web pages, the PDFs, and the hardest case measured: the IRC logs
and annotation files of one channel, which share timestamps, nicks and line numbers), and the
closest distinct pair stays well below the threshold. Plus the fingerprint's own properties: stable across processes, blind to case,
punctuation and wrapping, None for a text without words."""

from __future__ import annotations

import itertools
import logging

import pytest

from runner.documents.errors import ExtractionError
from runner.documents.fingerprint import (
    NEAR_DUPLICATE_MIN_SIMILARITY,
    PERMUTATIONS,
    as_signed,
    is_near_duplicate,
    minhash,
    similarity,
)
from runner.documents.ingest import ingest_bytes
from tests.support.documents import DOCS_DIR, HTML_DIR, PDF_DIR
from tests.support.paths import DATA_DIR

IRC_DEV = DATA_DIR / "chat" / "ubuntu_irc_disentanglement" / "dev"

# The closest distinct pair must leave this much room below the threshold.
MARGIN = 0.15


def _documents() -> dict[str, str]:
    """name → canonical text of every ingestible document under ../shared/data/docs."""
    if not DOCS_DIR.is_dir():
        pytest.skip(f"{DOCS_DIR} is absent (real data lives in ../shared/data beside the repo)")
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)
    texts: dict[str, str] = {}
    for path in sorted(HTML_DIR.glob("*/*.html")):
        texts[f"{path.parent.name}/{path.name}"] = ingest_bytes(
            path.read_bytes(), "text/html"
        ).canonical_text
    for path in sorted(PDF_DIR.glob("*.pdf")):
        try:
            texts[path.name] = ingest_bytes(path.read_bytes(), "application/pdf").canonical_text
        except ExtractionError:  # encrypted, scanned: nothing to compare
            continue
    texts["crazyones.expected.txt"] = (PDF_DIR / "crazyones.expected.txt").read_text("utf-8")
    for path in sorted(IRC_DEV.glob("*.txt")):  # ten hours of one channel, and their annotations
        texts[f"irc/{path.name}"] = ingest_bytes(path.read_bytes(), "text/plain").canonical_text
    return texts


def _article(name: str) -> str:
    """Which text a file holds: a readability page's folder, a PDF's stem, an IRC file's own."""
    if name.startswith("irc/"):
        return name
    return name.split("/")[0] if "/" in name else name.split(".")[0]


def test_variants_of_one_text_are_near_duplicates_and_distinct_documents_are_not() -> None:
    texts = _documents()
    prints = {name: minhash(text) for name, text in texts.items()}
    variants: list[tuple[float, str, str]] = []
    distinct: list[tuple[float, str, str]] = []
    for a, b in itertools.combinations(sorted(prints), 2):
        first, second = prints[a], prints[b]
        assert first is not None and second is not None
        pair = (similarity(first, second), a, b)
        (variants if _article(a) == _article(b) else distinct).append(pair)
    assert len(variants) >= 8 and len(distinct) > 100
    weakest = min(variants)
    closest = max(distinct)
    assert weakest[0] >= NEAR_DUPLICATE_MIN_SIMILARITY, weakest
    assert closest[0] <= NEAR_DUPLICATE_MIN_SIMILARITY - MARGIN, closest


def test_the_fingerprint_ignores_case_punctuation_and_wrapping() -> None:
    text = "The rollback plan is approved by the on-call lead before the migration starts."
    wrapped = text.upper().replace(" ", "\n  ").replace(".", "!")
    assert minhash(text) == minhash(wrapped)
    assert minhash("  --- ... ") is None
    short = minhash("rollback")
    assert short is not None and len(short) == PERMUTATIONS


def test_the_fingerprint_is_the_same_in_every_process() -> None:
    # Fixed seeds and BLAKE2b, not Python's salted hash(): stored fingerprints stay comparable.
    fingerprint = minhash("the same article from two URLs")
    assert fingerprint is not None
    assert fingerprint[:3] == [447582763, 1644345933, 257165209]
    assert all(-(2**31) <= value < 2**31 for value in as_signed(fingerprint))


def test_an_edited_copy_is_a_near_duplicate_and_half_a_text_is_not() -> None:
    words = [f"word{i}" for i in range(400)]
    text = " ".join(words)
    edited = " ".join(words[:200] + ["inserted", "sentence"] + words[200:])
    half = " ".join(words[:150])
    full, copy, part = minhash(text), minhash(edited), minhash(half)
    assert full is not None and copy is not None and part is not None
    assert is_near_duplicate(full, copy)
    assert not is_near_duplicate(full, part)
