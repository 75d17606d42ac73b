"""The evidence of a report from question to final ranking: its sub-questions
(`runner.reports.decompose`), the evidence gathered for each and merged
(`runner.reports.merge`), a first answer, and one refinement round for what that answer left
open (`runner.reports.refine`); the report job and the evaluation both run it.

The first answer is always the offline extractive writer's (no model call: it only has to show
which parts of the question have cited evidence); the final answer is the worker's writer's
over the merged units and those the refinement added. With no open point the offline first
answer is the final one. What was done is recorded on the report (`Research.as_json`, in its
`fidelity` under `research`): the sub-questions and how they were found, the units gathered
and whether each is cited, the open points and the units the refinement added and cited; and,
per unit, its `gathering` or `refinement` phase (`research_fidelity`), which the report job
merges into the writer's per-item records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.core.fidelity import (
    FIDELITY_SCHEMA_VERSION,
    PHASE_GATHERING,
    PHASE_REFINEMENT,
    FidelityLevel,
    merge_fidelity,
    merge_phase,
    phase_entry,
)
from runner.grounding.claim_support import DEFAULT_MIN_OVERLAP
from runner.reports.audit import ReportAudit, accept_sentences
from runner.reports.decompose import Decomposition, rules_decomposition
from runner.reports.digest_evidence import rest_of_document
from runner.reports.evidence import (
    ChannelMessage,
    DigestClaim,
    DocumentText,
    Evidence,
    RankedEvidence,
    gather_evidence,
)
from runner.reports.evidence_budget import content_id
from runner.reports.extractive import write_extractive_report
from runner.reports.merge import Gathered, gather_for_sub_questions, pointer_key
from runner.reports.refine import OpenPoint, open_points, refine_evidence
from runner.reports.report import Report


@dataclass
class Research:
    """The gathering of one report: the units, each sub-question's ranking and the merge, the
    first answer, its open points and what the refinement added."""

    decomposition: Decomposition
    units: list[Evidence]
    gathered: Gathered
    first: Report
    points: list[OpenPoint] = field(default_factory=list)
    added: list[RankedEvidence] = field(default_factory=list)

    @property
    def ranked(self) -> list[RankedEvidence]:
        """What the final answer is written from: the merged units, then the added ones."""
        return [*self.gathered.merged, *self.added]

    @property
    def question(self) -> str:
        return self.decomposition.question

    def as_json(self, final: Report) -> dict[str, Any]:
        """What was done, with what the final report cites of it."""
        cited = {s.span_key for sentence in final.sentences() for s in sentence.sources}

        def is_cited(item: RankedEvidence) -> bool:
            return bool(set(pointer_key(item.evidence)) & cited)

        counts = self.gathered.gathered_counts()
        sub_questions = [
            {
                "text": text,
                "gathered": counts[index],
                "cited": any(index in item.serves and is_cited(item) for item in self.ranked),
            }
            for index, text in enumerate(self.decomposition.sub_questions)
        ]
        return {
            "method": self.decomposition.method,
            "sub_questions": sub_questions,
            "refinement": {
                "ran": bool(self.points),
                "open_points": [point.as_json() for point in self.points],
                "added": len(self.added),
                "added_cited": sum(1 for item in self.added if is_cited(item)),
            },
        }


def research_fidelity(research: Research, timestamp: str) -> dict[str, dict[str, Any]]:
    """The per-item records of the research phases (runner.core.fidelity), by content id: a
    merged unit's `gathering` phase (the sub-questions it serves, 1-based, and its place in the
    merge) and an added unit's `refinement` phase. Whole units: gathering cuts nothing."""
    records: dict[str, dict[str, Any]] = {}
    for place, item in enumerate(research.gathered.merged):
        entry = phase_entry(
            FidelityLevel.FULL,
            "gathered",
            [],
            timestamp,
            sub_questions=[index + 1 for index in item.serves],
            position=place + 1,
        )
        item_id = content_id(item.evidence)
        records[item_id] = merge_phase(records.get(item_id), PHASE_GATHERING, entry)
    for item in research.added:
        entry = phase_entry(FidelityLevel.FULL, "open_point", [], timestamp)
        item_id = content_id(item.evidence)
        records[item_id] = merge_phase(records.get(item_id), PHASE_REFINEMENT, entry)
    return records


def with_research_phases(
    fidelity: dict[str, Any], research: Research, timestamp: str
) -> dict[str, Any]:
    """`fidelity` whose per-item records (the units the writer's fitting considered) also hold
    the phases each passed through before it: gathering, refinement (the merge rule of
    runner.core.fidelity). An offline report considers no unit: nothing is added."""
    considered = fidelity.get("content_fidelity") or {}
    if not considered:
        return fidelity
    history = research_fidelity(research, timestamp)
    earlier = {item_id: history[item_id] for item_id in considered if item_id in history}
    return {
        **fidelity,
        "content_fidelity_schema_version": FIDELITY_SCHEMA_VERSION,
        "content_fidelity": merge_fidelity(earlier, considered),
    }


def refinement_pool(
    units: list[Evidence], documents: Sequence[DocumentText], first_document_index: int
) -> list[Evidence]:
    """Every unit the refinement may add: the gathered ones and the sentences of each digested
    document that its snippets left out."""
    rest = [
        unit
        for offset, document in enumerate(documents)
        for unit in rest_of_document(document, first_document_index + offset)
    ]
    return [*units, *rest]


def refine_gathered(
    decomposition: Decomposition,
    units: list[Evidence],
    gathered: Gathered,
    pool: list[Evidence] | None = None,
) -> Research:
    """Write the first answer over the merged units and refine once for its open points from
    `pool` (by default the units themselves)."""
    first = write_extractive_report(decomposition.question, gathered.merged)
    points = open_points(
        decomposition.question, decomposition.sub_questions, gathered.merged, first
    )
    added = refine_evidence(points, units if pool is None else pool, gathered.merged)
    return Research(decomposition, units, gathered, first, points, added)


def research_evidence(
    decomposition: Decomposition, units: list[Evidence], pool: list[Evidence] | None = None
) -> Research:
    """Gather for each sub-question and merge, then `refine_gathered`."""
    gathered = gather_for_sub_questions(decomposition.sub_questions, units)
    return refine_gathered(decomposition, units, gathered, pool)


def final_extractive_report(research: Research) -> Report:
    """The offline final answer: the first one when the refinement added nothing."""
    if not research.added:
        return research.first
    return write_extractive_report(research.question, research.ranked)


@dataclass(frozen=True)
class ExtractiveRun:
    """One offline report from end to end: the evidence units, the gathering, the writer's
    draft, and the report the citation audit kept, with its audit."""

    units: list[Evidence]
    research: Research
    draft: Report
    report: Report
    audit: ReportAudit


def run_extractive_report(
    question: str,
    channels: list[list[ChannelMessage]],
    documents: list[DocumentText],
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    claims: list[list[DigestClaim]] | None = None,
    decomposition: Decomposition | None = None,
) -> ExtractiveRun:
    """Gather, decompose, rank, merge, write, refine, write and audit: the one sequence the
    report job and the evaluation run (the sub-questions by the rules unless given)."""
    units = gather_evidence(channels, documents, claims)
    pool = refinement_pool(units, documents, len(channels))
    research = research_evidence(decomposition or rules_decomposition(question), units, pool)
    draft = final_extractive_report(research)
    report, audit = accept_sentences(draft, min_overlap)
    return ExtractiveRun(units, research, draft, report, audit)
