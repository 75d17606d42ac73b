"""Evidence gathered for each sub-question of a report's question, merged into one list for
the writer, with no sub-question crowding out the others.

- Each sub-question ranks the units by its own words (`runner.reports.evidence.rank_evidence`),
  its best `MAX_UNITS_PER_SUB_QUESTION` gathered; its scores are divided by its best one, so a
  sub-question whose words are rare in the sources weighs as much as one whose words are common.
- Merge (`merge_rankings`): round-robin by rank (the first of each sub-question, then the second
  of each, ...), so every sub-question's best units come before any one's tail. A unit is kept
  once, the first time it comes, with every sub-question it serves (`RankedEvidence.serves`);
  two units are the same when they point at the same spans, or say the same words (a message
  pasted twice, a claim repeating its message).
An atomic question has one sub-question: its ranking, cut at the bound, is the merged list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from runner.reports.evidence import Evidence, RankedEvidence, rank_evidence
from runner.reports.evidence_budget import DEFAULT_MAX_UNITS

# Units gathered per sub-question before the writer's first answer; the refinement round
# (`runner.reports.refine`) looks past them for a sub-question the answer left open. As many as
# the LLM writer's unit cap, so an atomic question gives the writer what it had before.
MAX_UNITS_PER_SUB_QUESTION = DEFAULT_MAX_UNITS


def pointer_key(unit: Evidence) -> tuple[str, ...]:
    """The spans a unit quotes: equal for the same evidence whichever way it was gathered."""
    return tuple(source.span_key for source in unit.sources)


def content_key(unit: Evidence) -> str:
    return " ".join(unit.text.casefold().split())


@dataclass(frozen=True)
class Gathered:
    """Each sub-question's full ranking (the refinement reads past the bound) and the merge."""

    rankings: list[list[RankedEvidence]]
    merged: list[RankedEvidence]

    def gathered_counts(self) -> list[int]:
        """How many merged units serve each sub-question."""
        return [
            sum(1 for item in self.merged if index in item.serves)
            for index in range(len(self.rankings))
        ]


def normalized(ranked: list[RankedEvidence], index: int) -> list[RankedEvidence]:
    """`ranked` with scores over its best and serving sub-question `index`."""
    best = max((item.score for item in ranked), default=0.0) or 1.0
    return [replace(item, score=item.score / best, serves=(index,)) for item in ranked]


def merge_rankings(
    rankings: Sequence[list[RankedEvidence]], limit: int = MAX_UNITS_PER_SUB_QUESTION
) -> list[RankedEvidence]:
    """Round-robin over the first `limit` of each ranking, each unit once (module docstring)."""
    merged: list[RankedEvidence] = []
    by_pointer: dict[tuple[str, ...], int] = {}
    by_content: dict[str, int] = {}
    for rank in range(limit):
        for ranking in rankings:
            if rank >= len(ranking):
                continue
            item = ranking[rank]
            pointer, content = pointer_key(item.evidence), content_key(item.evidence)
            seen = by_pointer.get(pointer, by_content.get(content))
            if seen is not None:
                kept = merged[seen]
                serves = tuple(dict.fromkeys((*kept.serves, *item.serves)))
                merged[seen] = replace(kept, serves=serves)
                continue
            by_pointer[pointer] = by_content[content] = len(merged)
            merged.append(item)
    return merged


def rank_for_sub_question(
    sub_question: str, index: int, units: list[Evidence]
) -> list[RankedEvidence]:
    """The units for sub-question `index`, best first, scores over its best."""
    return normalized(rank_evidence(sub_question, units), index)


def gather_for_sub_questions(
    sub_questions: Sequence[str],
    units: list[Evidence],
    limit: int = MAX_UNITS_PER_SUB_QUESTION,
) -> Gathered:
    """Rank `units` for each sub-question and merge the rankings."""
    rankings = [rank_for_sub_question(q, i, units) for i, q in enumerate(sub_questions)]
    return Gathered(rankings, merge_rankings(rankings, limit))
