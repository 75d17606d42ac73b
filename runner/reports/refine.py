"""One bounded refinement round: the parts of the question a first answer left open drive one
more evidence gathering, at most once and at most `REFINE_MAX_UNITS` units, before the final
answer.

Open points (`open_points`), from the first answer and the merged evidence:
- `no_cited_evidence`: a sub-question none of whose gathered units the answer cites (one the
  other sub-questions crowded out, or one nothing was gathered for);
- `terms_not_covered`: when every sub-question is cited, the question's words (at least
  `MIN_QUESTION_TERMS` of them) that no cited sentence names, nor the author of a cited message
  (an author the question names is covered by their messages).
Gathering (`refine_evidence`): for each open point, the units not gathered yet (past each
sub-question's bound, below the two-word minimum, and the sentences of a digested document
that its snippets left out, `runner.reports.digest_evidence.rest_of_document`), ranked by BM25
over the point's words; a unit must name `MIN_QUESTION_TERMS` of them (one, for a point of one
word or when none names two). The best `REFINE_UNITS_PER_POINT` of each point are added,
round-robin across points, at most `REFINE_MAX_UNITS` in all, each with its score over its
point's best, serving the sub-question of its point. Nothing already gathered is added again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runner.grounding.bm25 import bm25_scores
from runner.grounding.claim_support import content_tokens
from runner.reports.evidence import (
    MIN_QUESTION_TERMS,
    Evidence,
    RankedEvidence,
    named_terms,
    question_terms,
)
from runner.reports.merge import content_key, pointer_key
from runner.reports.report import Report
from runner.reports.sources import MessageSource

REFINE_UNITS_PER_POINT = 3
REFINE_MAX_UNITS = 8


@dataclass(frozen=True)
class OpenPoint:
    """A part of the question the first answer left open: a sub-question, or the words of the
    question that nothing cited names."""

    reason: str  # no_cited_evidence | terms_not_covered
    text: str
    terms: tuple[str, ...]
    sub_question: int | None = None  # its index, for `no_cited_evidence`

    def as_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "text": self.text, "terms": list(self.terms)}


def _cited_keys(report: Report) -> set[str]:
    return {source.span_key for sentence in report.sentences() for source in sentence.sources}


def open_points(
    question: str,
    sub_questions: Sequence[str],
    merged: list[RankedEvidence],
    report: Report,
) -> list[OpenPoint]:
    """The open points of `report`, the first answer (module docstring)."""
    cited = _cited_keys(report)
    points: list[OpenPoint] = []
    for index, sub_question in enumerate(sub_questions):
        served = [item for item in merged if index in item.serves]
        if not any(set(pointer_key(item.evidence)) & cited for item in served):
            terms = tuple(dict.fromkeys(question_terms(sub_question)))
            points.append(OpenPoint("no_cited_evidence", sub_question, terms, index))
    if points:
        return points
    said: set[str] = set()
    for sentence in report.sentences():
        said.update(content_tokens(sentence.sentence))
        for source in sentence.sources:
            if isinstance(source, MessageSource):
                said.update(content_tokens(source.author))
    asked = list(dict.fromkeys(question_terms(question)))
    covered = named_terms(set(asked), said)
    missing = tuple(term for term in asked if term not in covered)
    if len(missing) >= MIN_QUESTION_TERMS:
        points.append(OpenPoint("terms_not_covered", " ".join(missing), missing))
    return points


def _point_ranking(point: OpenPoint, pool: list[Evidence]) -> list[RankedEvidence]:
    """The pool's units for one point, best first (ties: pool order)."""
    if not point.terms or not pool:
        return []
    terms = set(point.terms)
    scores = bm25_scores([unit.text for unit in pool], " ".join(point.terms))
    named = [len(named_terms(terms, set(content_tokens(unit.text)))) for unit in pool]
    order = sorted(range(len(pool)), key=lambda i: (not pool[i].prose, -scores[i], i))
    serves = () if point.sub_question is None else (point.sub_question,)
    for needed in range(min(MIN_QUESTION_TERMS, len(terms)), 0, -1):
        chosen = [i for i in order if scores[i] > 0 and named[i] >= needed]
        if chosen:
            best = scores[chosen[0]] or 1.0
            return [RankedEvidence(pool[i], scores[i] / best, serves) for i in chosen]
    return []


def refine_evidence(
    points: list[OpenPoint],
    candidates: list[Evidence],
    merged: list[RankedEvidence],
) -> list[RankedEvidence]:
    """At most `REFINE_MAX_UNITS` units for the open `points` out of `candidates`, none
    already in `merged` (module docstring)."""
    taken_pointers = {pointer_key(item.evidence) for item in merged}
    taken_content = {content_key(item.evidence) for item in merged}
    pool = [
        unit
        for unit in candidates
        if pointer_key(unit) not in taken_pointers
        and content_key(unit) not in taken_content
        and not unit.is_question
    ]
    rankings = [_point_ranking(point, pool)[:REFINE_UNITS_PER_POINT] for point in points]
    added: list[RankedEvidence] = []
    seen: set[tuple[str, ...]] = set()
    for rank in range(REFINE_UNITS_PER_POINT):
        for ranking in rankings:
            if rank < len(ranking) and len(added) < REFINE_MAX_UNITS:
                item = ranking[rank]
                if pointer_key(item.evidence) not in seen:
                    seen.add(pointer_key(item.evidence))
                    added.append(item)
    return added
