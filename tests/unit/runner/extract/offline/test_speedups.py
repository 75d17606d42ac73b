"""The offline map's fast paths give what the plain code gives: folded case-insensitive
searches and the TF-IDF similarity graph of centrality."""

from __future__ import annotations

import random
import re
from collections import defaultdict

import pytest

from runner.extract.offline import overview
from runner.extract.offline.text import FoldedPattern

_TRICKY = ["K", "ſ", "ı", "İ", "ß", "é", "É", "👍", "’", "—", "Ω", "ǅ", "ŉ", "µ", "\u212a"]
_WORDS = (
    "We WILL decided Agreed maybe LUNCH thanks THX error Fixed going forward u we'll I'm".split()
)


def _texts(count: int) -> list[str]:
    rng = random.Random(7)
    texts = []
    for _ in range(count):
        tokens = [
            rng.choice(_WORDS + _TRICKY) + rng.choice(["", "s", ".", "?", "ed"])
            for _ in range(rng.randint(1, 8))
        ]
        texts.append(rng.choice([" ", "", "-"]).join(tokens))
    return texts


@pytest.mark.parametrize(
    ("source", "flags"),
    [
        (r"(?i)\b(?:will|we'll|going forward|fixed)\b", 0),
        (r"\b(?:thanks|thx|sked|ok)\b|\+1|👍", re.IGNORECASE),
        (r"(?i)\b(?:\w{3,}ed|was)\b", 0),
        (r"(?i)^\W*(?:we|i'm)\s+\w+", 0),
    ],
)
def test_folded_pattern_finds_what_the_case_insensitive_pattern_finds(
    source: str, flags: int
) -> None:
    folded = FoldedPattern(source, flags or re.IGNORECASE)
    plain = re.compile(source, flags)
    texts = _texts(3000)
    found = [folded.search(text) for text in texts]
    assert found == [plain.search(text) is not None for text in texts]
    assert any(found) and not all(found)


def test_folded_pattern_refuses_what_folding_would_change() -> None:
    with pytest.raises(ValueError):
        FoldedPattern(r"(?i):D|xD")  # upper-case letters: the folded text has none
    with pytest.raises(ValueError):
        FoldedPattern(r"\bwill\b", 0)  # not case-insensitive


def _reference_similarities(vectors: list[dict[str, float]]) -> dict[int, dict[int, float]]:
    """The similarity graph as a plain loop: pair sums term by term, top neighbours by weight."""
    postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for index, vector in enumerate(vectors):
        for term, weight in vector.items():
            postings[term].append((index, weight))
    pairs: dict[tuple[int, int], float] = {}
    for term in sorted(postings):
        posting = postings[term]
        if not 2 <= len(posting) <= overview._MAX_POSTINGS:
            continue
        for a, (i, wi) in enumerate(posting):
            for j, wj in posting[a + 1 :]:
                pairs[i, j] = pairs.get((i, j), 0.0) + wi * wj
    neighbours: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for (i, j), weight in pairs.items():
        if weight >= overview._MIN_SIMILARITY:
            neighbours[i].append((weight, j))
            neighbours[j].append((weight, i))
    graph: dict[int, dict[int, float]] = defaultdict(dict)
    for i in sorted(neighbours):
        for weight, j in sorted(neighbours[i], key=lambda item: (-item[0], item[1]))[
            : overview._NEIGHBOURS
        ]:
            graph[i][j] = weight
            graph[j][i] = weight
    return graph


def test_similarity_graph_is_the_plain_loops() -> None:
    rng = random.Random(11)
    for _ in range(60):
        vocabulary = [f"w{k}" for k in range(rng.randint(1, 120))]
        vectors: list[dict[str, float]] = []
        for _ in range(rng.randint(0, 250)):
            terms = sorted(rng.sample(vocabulary, min(len(vocabulary), rng.randint(0, 10))))
            vector = {term: rng.random() for term in terms}
            if vectors and rng.random() < 0.2:
                vector = dict(vectors[-1])  # equal weights: ties broken by index
            vectors.append(vector)
        expected = _reference_similarities(vectors)
        graph = overview._similarities(vectors)
        assert {i: dict(sorted(d.items())) for i, d in graph.items()} == {
            i: dict(sorted(d.items())) for i, d in expected.items()
        }
