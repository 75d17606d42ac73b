"""Which messages carry a window: TF-IDF similarity between messages and a weighted PageRank
over it (TextRank); the most central ones open the extractive overview (offline.prose).

Centrality alone favours long rambling messages and repeats, so the score is PageRank times a
length prior, the personalization favours messages the map step called notable, and selection
is greedy with a redundancy cut (no two picks more similar than `_REDUNDANT`). Windows with
more than `_MAX_NODES` candidate messages are ranked on an evenly spaced sample (plus every
notable message). All sorting breaks ties on window position: same window, same overview.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter

import numpy

from runner.extract.offline.artifacts import command_like
from runner.extract.offline.merge import even_sample
from runner.extract.offline.text import PartView, truncate_words
from runner.extract.offline.threads import Participants, is_social, strip_address

_DAMPING = 0.85
_ITERATIONS = 30
_MIN_SIMILARITY = 0.05
_REDUNDANT = 0.5
# Postings longer than this are terms nearly every message has: they add cost, not signal.
_MAX_POSTINGS = 400
_NEIGHBOURS = 20
_MAX_NODES = 1500
_WEIGHT = itemgetter(0)
_INDEX = itemgetter(1)


@dataclass(frozen=True)
class Central:
    view: PartView
    score: float


def _vectors(views: Sequence[PartView]) -> list[dict[str, float]]:
    tokens = [Counter(view.prose_words) for view in views]
    df: Counter[str] = Counter()
    for counts in tokens:
        df.update(counts.keys())
    n = max(1, len(views))
    common = max(5, int(n * 0.5))
    vectors: list[dict[str, float]] = []
    for counts in tokens:
        vector = {
            term: (1.0 + math.log(tf)) * math.log((n + 1) / df[term])
            for term, tf in sorted(counts.items())
            if df[term] <= common
        }
        norm = math.sqrt(sum(w * w for w in vector.values())) or 1.0
        vectors.append({term: w / norm for term, w in vector.items()})
    return vectors


def _similarities(vectors: list[dict[str, float]]) -> dict[int, dict[int, float]]:
    n = len(vectors)
    graph: dict[int, dict[int, float]] = defaultdict(dict)
    # Every term occurrence as (term, message index, weight), grouped by term in sorted order
    # (a stable sort keeps each term's occurrences in window order): each term's postings.
    terms: list[str] = []
    indices: list[int] = []
    weights: list[float] = []
    for index, vector in enumerate(vectors):
        terms.extend(vector)
        indices.extend([index] * len(vector))
        weights.extend(vector.values())
    vocabulary = {term: rank for rank, term in enumerate(sorted(set(terms)))}
    term_ids = numpy.fromiter(map(vocabulary.__getitem__, terms), numpy.int64, len(terms))
    order = numpy.argsort(term_ids, kind="stable")
    term_ids = term_ids[order]
    posting_sizes = numpy.bincount(term_ids, minlength=len(vocabulary))[term_ids]
    used = (posting_sizes >= 2) & (posting_sizes <= _MAX_POSTINGS)
    term_ids, posting_sizes = term_ids[used], posting_sizes[used]
    message = numpy.array(indices, dtype=numpy.int64)[order][used]
    weight = numpy.array(weights, dtype=numpy.float64)[order][used]
    if not len(term_ids):
        return graph
    # Every pair (a, b), a before b, of each term's postings, keyed i * n + j, in the order the
    # Python loop visited them (terms sorted, then a, then b): `bincount` adds each key's
    # products one by one in array order from 0.0, so every pair weight is the same float as
    # `pairs[key] = pairs.get(key, 0.0) + wi * wj` gave (that loop was the hottest of the map).
    positions = numpy.arange(len(term_ids))
    first_of_term = numpy.r_[True, term_ids[1:] != term_ids[:-1]]
    term_start = numpy.maximum.accumulate(numpy.where(first_of_term, positions, 0))
    later = term_start + posting_sizes - 1 - positions  # postings after a in its term
    a = numpy.repeat(positions, later)
    b = a + 1 + numpy.arange(len(a)) - numpy.repeat(numpy.cumsum(later) - later, later)
    unique_keys, slots = numpy.unique(message[a] * n + message[b], return_inverse=True)
    sums = numpy.bincount(slots, weights=weight[a] * weight[b])
    strong = sums >= _MIN_SIMILARITY
    firsts, seconds = numpy.divmod(unique_keys[strong], n)
    pair_weights = sums[strong]
    # Each message keeps its `_NEIGHBOURS` most similar ones: the graph stays sparse (linear in
    # the window) and big windows rank in seconds. Most similar first, ties by index (a total
    # order): every pair seen from both ends, ordered by node, then weight descending, then the
    # neighbour's index.
    nodes = numpy.concatenate([firsts, seconds])
    others = numpy.concatenate([seconds, firsts])
    both = numpy.concatenate([pair_weights, pair_weights])
    order = numpy.lexsort((others, -both, nodes))
    nodes, others, both = nodes[order], others[order], both[order]
    starts = numpy.searchsorted(nodes, nodes, side="left")
    keep = numpy.arange(len(nodes)) - starts < _NEIGHBOURS
    for i, j, similarity in zip(
        nodes[keep].tolist(), others[keep].tolist(), both[keep].tolist(), strict=True
    ):
        graph[i][j] = similarity
        graph[j][i] = similarity
    return graph


def _pagerank(graph: dict[int, dict[int, float]], prior: list[float]) -> list[float]:
    """Weighted PageRank, `_ITERATIONS` power steps. Each step's edge sums run in numpy
    (`bincount` adds each node's incoming shares one by one, in edge order: the same float
    additions, in the same order, as a loop over the edges, so the ranks are the same floats;
    the loop was a fifth of the offline map)."""
    n = len(prior)
    total = sum(prior) or 1.0
    personal = [p / total for p in prior]
    rank = personal[:]
    # Edges in a fixed order, so float sums (and the ranking) never depend on dict history.
    edges = [sorted(graph[i].items()) if i in graph else [] for i in range(n)]
    out_weight = [sum(w for _, w in node) for node in edges]
    linked = [i for i in range(n) if edges[i]]
    dangling_nodes = [i for i in range(n) if not edges[i]]
    sources = numpy.array([i for i in linked for _ in edges[i]], dtype=numpy.intp)
    targets = numpy.array([j for i in linked for j, _ in edges[i]], dtype=numpy.intp)
    weights = numpy.array([w for i in linked for _, w in edges[i]], dtype=numpy.float64)
    divisors = numpy.array([out_weight[i] if edges[i] else 1.0 for i in range(n)])
    personal_array = numpy.array(personal, dtype=numpy.float64)
    teleport = (1 - _DAMPING) * personal_array
    rank_array = numpy.array(rank, dtype=numpy.float64)
    for _ in range(_ITERATIONS):
        dangling = 0.0
        for i in dangling_nodes:
            dangling += rank[i]
        share = rank_array / divisors
        spread = numpy.bincount(targets, weights=share[sources] * weights, minlength=n)
        rank_array = teleport + _DAMPING * (spread + dangling * personal_array)
        rank = rank_array.tolist()
    return rank


def _length_prior(words: int) -> float:
    if words < 3:
        return 0.0
    if words <= 40:
        return 0.5 + words / 40
    return max(0.6, 1.5 - (words - 40) / 200)


def _sample(views: Sequence[PartView], notable_ids: set[str]) -> list[PartView]:
    """At most `_MAX_NODES` messages with something to say: all notable ones, then evenly
    spaced others, so a huge window ranks in seconds and every stretch of it is represented."""
    candidates = [v for v in views if len(v.prose_words) >= 3]
    return even_sample(candidates, lambda v: v.message_id in notable_ids, _MAX_NODES)


def central_messages(views: Sequence[PartView], notable_ids: set[str], limit: int) -> list[Central]:
    """The `limit` most central, mutually non-redundant messages, most central first."""
    views = _sample(views, notable_ids) if limit > 0 else []
    if not views:
        return []
    vectors = _vectors(views)
    prior = [
        _length_prior(len(view.prose_words))
        * (2.0 if view.message_id in notable_ids else 1.0)
        * (0.2 if is_social(view.prose) else 1.0)
        for view in views
    ]
    rank = _pagerank(_similarities(vectors), prior)
    scored = sorted(
        ((rank[i] * prior[i], i) for i in range(len(views))),
        key=lambda item: (-item[0], item[1]),
    )
    chosen: list[int] = []
    for _, index in scored:
        if any(_cosine(vectors[index], vectors[c]) >= _REDUNDANT for c in chosen):
            continue
        chosen.append(index)
        if len(chosen) == limit:
            break
    return [Central(views[i], rank[i] * prior[i]) for i in chosen]


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(weight * b.get(term, 0.0) for term, weight in a.items())


def excerpt(view: PartView, participants: Participants, limit: int = 240) -> str:
    """The opening prose of a message, without its addressee, at most `limit` characters."""
    prose = [s.text for s in view.sentences if not command_like(s.text)]
    text = " ".join(prose[:3]) or view.message.normalized_text
    return truncate_words(strip_address(text, participants), limit)
