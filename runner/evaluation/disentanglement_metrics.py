"""The reply-link and conversation metrics of the Ubuntu IRC disentanglement paper (Kummerfeld
and others, ACL 2019), computed as its scripts compute them (tools/evaluation/graph-eval.py and
conversation-eval.py of jkkummerfeld/irc-disentanglement):

- links: a message's links are the earlier messages it answers, or itself when it starts a
  conversation; precision = matched / predicted links, recall = matched / gold links, over all
  scored messages of all logs (a gold message may have several parents).
- conversations: the connected components of a log's links (sources and their targets, context
  messages included), then restricted to the scored messages.
- VI: variation of information (Meila 2007) in bits over all logs' conversations (pooled, every
  scored message once), reported as the paper does: 1 - VI / log2(n), n = scored messages.
- one-to-one: share of scored messages in the best one-to-one pairing of predicted with gold
  conversations (Hungarian algorithm, per log), system messages kept.
- exact match: P/R/F1 of predicted conversations equal, as sets, to a gold one; conversations of
  one message are left out on both sides (as the paper does).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

Links = Mapping[int, set[int]]  # scored message -> earlier messages it answers (itself: a start)


@dataclass(frozen=True)
class Prf:
    matched: int
    predicted: int
    gold: int

    @property
    def precision(self) -> float:
        return self.matched / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.matched / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __add__(self, other: Prf) -> Prf:
        return Prf(
            self.matched + other.matched, self.predicted + other.predicted, self.gold + other.gold
        )


def links_from_parents(parents: list[int | None], first_scored: int) -> dict[int, set[int]]:
    """One link per scored message: its parent, or itself when it has none."""
    return {
        index: {index if parent is None else parent}
        for index, parent in enumerate(parents)
        if index >= first_scored
    }


def link_prf(gold: Links, predicted: Links) -> Prf:
    gold_pairs = {(source, target) for source, targets in gold.items() for target in targets}
    predicted_pairs = {(s, t) for s, targets in predicted.items() for t in targets}
    return Prf(len(gold_pairs & predicted_pairs), len(predicted_pairs), len(gold_pairs))


def conversations(links: Links) -> list[frozenset[int]]:
    """Connected components of `links`, restricted to the scored messages (the link sources),
    each a set; ordered by their first message."""
    root: dict[int, int] = {}

    def find(node: int) -> int:
        root.setdefault(node, node)
        while root[node] != node:
            root[node] = root[root[node]]
            node = root[node]
        return node

    for source, targets in links.items():
        for target in targets:
            a, b = find(source), find(target)
            if a != b:
                root[max(a, b)] = min(a, b)
    groups: dict[int, set[int]] = {}
    for source in links:
        groups.setdefault(find(source), set()).add(source)
    return sorted((frozenset(g) for g in groups.values()), key=min)


def _contingency(
    gold: list[frozenset[int]], predicted: list[frozenset[int]]
) -> Counter[tuple[int, int]]:
    gold_of = {m: g for g, members in enumerate(gold) for m in members}
    table: Counter[tuple[int, int]] = Counter()
    for p, members in enumerate(predicted):
        for message in members:
            table[(gold_of[message], p)] += 1
    return table


def variation_of_information(
    logs: list[tuple[list[frozenset[int]], list[frozenset[int]]]],
) -> float:
    """1 - VI / log2(n) over all logs' (gold, predicted) conversations pooled."""
    n = sum(len(c) for gold, _ in logs for c in gold)
    if n <= 1:
        return 1.0
    joint = 0.0
    gold_entropy = 0.0
    predicted_entropy = 0.0
    for gold, predicted in logs:
        for count in _contingency(gold, predicted).values():
            joint -= count / n * math.log2(count / n)
        gold_entropy -= sum(len(c) / n * math.log2(len(c) / n) for c in gold)
        predicted_entropy -= sum(len(c) / n * math.log2(len(c) / n) for c in predicted)
    # VI = H(G|P) + H(P|G) = 2 H(G,P) - H(G) - H(P)
    vi = 2 * joint - gold_entropy - predicted_entropy
    return 1 - vi / math.log2(n)


def _max_assignment(weights: list[list[int]]) -> int:
    """Largest total weight of a one-to-one pairing of rows with columns (rows <= columns);
    the Hungarian algorithm (Kuhn-Munkres, potentials form) on cost = -weight."""
    rows, columns = len(weights), len(weights[0])
    infinity = float("inf")
    u = [0.0] * (rows + 1)
    v = [0.0] * (columns + 1)
    owner = [0] * (columns + 1)  # column -> row (1-based), 0: free
    way = [0] * (columns + 1)
    for row in range(1, rows + 1):
        owner[0] = row
        column0 = 0
        minimum = [infinity] * (columns + 1)
        used = [False] * (columns + 1)
        while True:
            used[column0] = True
            row0 = owner[column0]
            delta = infinity
            column1 = 0
            for column in range(1, columns + 1):
                if not used[column]:
                    current = -weights[row0 - 1][column - 1] - u[row0] - v[column]
                    if current < minimum[column]:
                        minimum[column] = current
                        way[column] = column0
                    if minimum[column] < delta:
                        delta = minimum[column]
                        column1 = column
            for column in range(columns + 1):
                if used[column]:
                    u[owner[column]] += delta
                    v[column] -= delta
                else:
                    minimum[column] -= delta
            column0 = column1
            if owner[column0] == 0:
                break
        while column0:
            column1 = way[column0]
            owner[column0] = owner[column1]
            column0 = column1
    return sum(weights[owner[c] - 1][c - 1] for c in range(1, columns + 1) if owner[c])


def one_to_one_overlap(gold: list[frozenset[int]], predicted: list[frozenset[int]]) -> int:
    """Messages covered by the best one-to-one pairing of predicted with gold conversations.
    Conversations that share no message are solved apart (connected parts of the overlap
    graph), which keeps each Hungarian run small."""
    table = _contingency(gold, predicted)
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(node: tuple[str, int]) -> tuple[str, int]:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for g, p in table:
        a, b = find(("g", g)), find(("p", p))
        if a != b:
            parent[a] = b
    parts: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    for (g, p), count in table.items():
        parts.setdefault(find(("g", g)), []).append((g, p, count))
    total = 0
    for cells in parts.values():
        gs = sorted({g for g, _, _ in cells})
        ps = sorted({p for _, p, _ in cells})
        if len(gs) == 1 or len(ps) == 1:
            total += max(count for _, _, count in cells)
            continue
        matrix = [[0] * len(ps) for _ in gs]
        for g, p, count in cells:
            matrix[gs.index(g)][ps.index(p)] = count
        if len(gs) > len(ps):
            matrix = [list(column) for column in zip(*matrix, strict=True)]
        total += _max_assignment(matrix)
    return total


def exact_match(gold: list[frozenset[int]], predicted: list[frozenset[int]]) -> Prf:
    """Conversations of two or more messages found exactly."""
    gold_set = {c for c in gold if len(c) > 1}
    predicted_set = {c for c in predicted if len(c) > 1}
    return Prf(len(gold_set & predicted_set), len(predicted_set), len(gold_set))
