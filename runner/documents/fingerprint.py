"""Near-duplicate fingerprints of canonical text: a MinHash of its word shingles.

Two documents are near-duplicates when the estimated Jaccard similarity of their shingle sets
reaches `NEAR_DUPLICATE_MIN_SIMILARITY`: the same article fetched from two URLs, or stored as a
PDF and as an HTML page, whose canonical texts differ in boilerplate, page markers or a
sentence, but not in what they say.

The text is folded to lower-case words (letters and digits; punctuation, page markers' dashes and
whitespace dropped); every run of `SHINGLE_WORDS` consecutive words is a shingle, and a document
is the set of its shingles' 64-bit BLAKE2b hashes (a text shorter than one shingle: the one
shingle of all its words). The fingerprint keeps, for each of `PERMUTATIONS` fixed bijections of
64-bit values, the smallest image of the set (its top 32 bits). Two sets agree on one such
minimum with probability equal to their Jaccard similarity (Broder 1997), so the share of
positions where two fingerprints agree estimates it (standard error at most 1/(2·√128) ≈ 0.044).

A weighted SimHash was tried first and rejected: on chat logs, whose lines share timestamps and
join messages, distinct days' logs were 2 bits of 64 apart, closer than variants of one article.
Set similarity does not weigh repeated boilerplate more than the words that differ.

Values are stored as PostgreSQL `integer[]` (`as_signed`), so the database can compare a new
document's fingerprint with every stored one without shipping them to Python.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
import numpy.typing as npt

PERMUTATIONS = 128
SHINGLE_WORDS = 3
# Measured over every file in ../shared/data (363 texts; README, "Documents"): one text in two
# forms (a page and its readability extract, a PDF and its text, a chat export as CSV, HTML and
# text) agrees on 0.56 to 1.0 of the positions, distinct texts on at most 0.20 (two annotation
# files of one IRC channel). tests/unit/runner/documents/test_fingerprint.py keeps it so.
NEAR_DUPLICATE_MIN_SIMILARITY = 0.5
NEAR_DUPLICATE_MIN_AGREEMENTS = round(NEAR_DUPLICATE_MIN_SIMILARITY * PERMUTATIONS)

_WORD = re.compile(r"[^\W_]+")
_CHUNK = 8192  # shingles hashed per numpy pass: 8192 x 128 x 8 bytes = 8 MiB at most
# Fixed, so fingerprints computed by any process and any version agree.
_SEEDS = np.random.default_rng(0x6467737421).integers(
    0, np.iinfo(np.uint64).max, size=(2, PERMUTATIONS), dtype=np.uint64, endpoint=True
)
_XOR = _SEEDS[0]
_ODD = _SEEDS[1] | np.uint64(1)  # an odd multiplier is a bijection modulo 2^64


def words(text: str) -> list[str]:
    """The text's words, case-folded (the features ignore case and punctuation)."""
    return _WORD.findall(text.casefold())


def shingle_hashes(text: str) -> npt.NDArray[np.uint64]:
    """The distinct 64-bit hashes of the text's shingles (empty for a text without words)."""
    tokens = words(text)
    if not tokens:
        return np.empty(0, dtype=np.uint64)
    width = min(SHINGLE_WORDS, len(tokens))
    shingles = {" ".join(tokens[i : i + width]) for i in range(len(tokens) - width + 1)}
    return np.fromiter(
        (
            int.from_bytes(hashlib.blake2b(s.encode("utf-8"), digest_size=8).digest(), "big")
            for s in shingles
        ),
        dtype=np.uint64,
        count=len(shingles),
    )


def minhash(text: str) -> list[int] | None:
    """The fingerprint: `PERMUTATIONS` unsigned 32-bit minima; None for a text without words."""
    hashes = shingle_hashes(text)
    if hashes.size == 0:
        return None
    minima = np.full(PERMUTATIONS, np.iinfo(np.uint64).max, dtype=np.uint64)
    with np.errstate(over="ignore"):  # multiplication modulo 2^64 is the point
        for start in range(0, hashes.size, _CHUNK):
            chunk = hashes[start : start + _CHUNK, None]
            mixed = (chunk ^ _XOR) * _ODD
            mixed ^= mixed >> np.uint64(31)
            np.minimum(minima, mixed.min(axis=0), out=minima)
    return [int(value) >> 32 for value in minima]


def similarity(a: list[int], b: list[int]) -> float:
    """The estimated Jaccard similarity of two fingerprints' shingle sets (0..1)."""
    return sum(1 for x, y in zip(a, b, strict=True) if x == y) / PERMUTATIONS


def is_near_duplicate(a: list[int], b: list[int]) -> bool:
    return similarity(a, b) >= NEAR_DUPLICATE_MIN_SIMILARITY


def as_signed(fingerprint: list[int]) -> list[int]:
    """The fingerprint as PostgreSQL `integer`s hold it (equality is all that is compared)."""
    return [value - (1 << 32) if value >= 1 << 31 else value for value in fingerprint]
