"""The citation audit of a report, in code, after every report:

- every `[Sx]` marker resolves to a registered source (`unknown_source`);
- no registered source is left uncited (`orphan_source`);
- numbering is contiguous: markers first appear as S1, S2, S3, ... (`numbering_gap`);
- every sentence has at least one citation (`no_citation`), and its words are supported by what
  it cites (`low_support`): the overlap rule of claims (`runner.grounding.claim_support.support_share`
  against `DEFAULT_MIN_OVERLAP`, or the configured minimum), over the whole cited message or the
  located document span (in marked text, where `[S1]` names a document and not one of its
  spans: every span of it the report cites).

`accept_sentences` applies the per-sentence rules to a draft and drops what fails with its
reason, so nothing unsupported is stored as cited; `audit_marked` checks the finished,
numbered text, and finds nothing on a report that `accept_sentences` produced.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.grounding.claim_support import DEFAULT_MIN_OVERLAP, support_share
from runner.grounding.footnotes import FootnotedSentence, Section
from runner.reports.report import Report, ReportSentence, marked_sentence
from runner.reports.sources import RegisteredSource, ReportSource, SourceRegistry, source_number

_MARKER = re.compile(r"\[(S\d+)\]")


@dataclass(frozen=True)
class AuditProblem:
    code: str  # unknown_source, orphan_source, numbering_gap, no_citation, low_support
    sentence: int | None  # index in reading order; None for a problem of the whole report
    detail: str


@dataclass
class ReportAudit:
    """Audit figures of a report: what the writer proposed, what was kept, why the rest went."""

    proposed: int = 0
    kept: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    re_asked: int = 0  # sentences sent back to a model once (the offline writer asks nobody)
    sources: int = 0
    citations: int = 0  # (sentence, cited span) pairs of the kept sentences
    problems: list[AuditProblem] = field(default_factory=list)  # of the final report: none

    @property
    def dropped(self) -> int:
        return self.proposed - self.kept

    @property
    def orphan_sources(self) -> int:
        """Registered sources no sentence cites (0 unless the registry and text disagree)."""
        return sum(1 for problem in self.problems if problem.code == "orphan_source")

    @property
    def audit_failures(self) -> int:
        """Sentences dropped for a failed rule, plus problems the final report still has."""
        return self.dropped + len(self.problems)

    @property
    def coverage(self) -> float | None:
        """Share of the kept sentences with a resolving, supporting citation (None: none)."""
        if not self.kept:
            return None
        failing = {p.sentence for p in self.problems if p.code in {"no_citation", "low_support"}}
        return (self.kept - len(failing)) / self.kept

    def as_json(self) -> dict[str, Any]:
        return {
            "proposed": self.proposed,
            "kept": self.kept,
            "dropped": self.dropped,
            "re_asked": self.re_asked,
            "coverage": self.coverage,
            "sources": self.sources,
            "citations": self.citations,
            "orphan_sources": self.orphan_sources,
            "audit_failures": self.audit_failures,
            "reasons": dict(sorted(self.reasons.items())),
            "problems": [p.__dict__ for p in self.problems],
        }


def sentence_problem(
    text: str, sources: Sequence[ReportSource], min_overlap: float = DEFAULT_MIN_OVERLAP
) -> str | None:
    """Why a sentence citing `sources` cannot be stored as cited (None: it can)."""
    if not sources:
        return "no_citation"
    share = support_share(text, [source.supporting_text for source in sources])
    if share is None or share < min_overlap:
        return "low_support"
    return None


def accept_sentences(
    draft: Report, min_overlap: float = DEFAULT_MIN_OVERLAP
) -> tuple[Report, ReportAudit]:
    """The draft without the sentences that fail the per-sentence rules, and its audit."""
    audit = ReportAudit()
    sections = []
    for section in draft.sections:
        kept: list[ReportSentence] = []
        for sentence in section.sentences:
            audit.proposed += 1
            reason = sentence_problem(sentence.sentence, sentence.sources, min_overlap)
            if reason is None:
                kept.append(FootnotedSentence(sentence.sentence, sentence.sources))
            else:
                audit.reasons[reason] += 1
        sections.append(Section(section.heading, tuple(kept), section.bullets))
    report = Report(draft.question, draft.title, tuple(sections))
    audit.kept = audit.proposed - sum(audit.reasons.values())
    registry = report.registry()
    audit.sources = len(registry)
    audit.citations = registry.citations
    audit.problems = audit_marked(
        [marked_sentence(s, registry) for s in report.sentences()], registry, min_overlap
    )
    return report, audit


def audit_marked(
    marked: Sequence[str], registry: SourceRegistry, min_overlap: float = DEFAULT_MIN_OVERLAP
) -> list[AuditProblem]:
    """Every problem of `[Sx]`-marked sentences against the registry (empty: the report passes)."""
    problems: list[AuditProblem] = []
    order: dict[str, None] = {}
    for index, text in enumerate(marked):
        ids = _MARKER.findall(text)
        plain = " ".join(_MARKER.sub(" ", text).split())
        sources: list[RegisteredSource] = []
        for identifier in ids:
            source = registry.entry(identifier)
            if source is None:  # reported once, here, not again as a numbering gap
                problems.append(AuditProblem("unknown_source", index, identifier))
            else:
                order.setdefault(identifier, None)
                sources.append(source)
        if not ids:
            problems.append(AuditProblem("no_citation", index, "no [Sx] marker"))
        elif sources and _unsupported(plain, sources, min_overlap):
            problems.append(AuditProblem("low_support", index, " ".join(ids)))
    for identifier, _ in registry:
        if identifier not in order:
            problems.append(AuditProblem("orphan_source", None, identifier))
    numbers = [source_number(identifier) for identifier in order]
    if numbers != list(range(1, len(numbers) + 1)):
        shown = ", ".join(order)
        problems.append(AuditProblem("numbering_gap", None, f"first appearances: {shown}"))
    return problems


def _unsupported(text: str, sources: Sequence[RegisteredSource], min_overlap: float) -> bool:
    share = support_share(text, [source.supporting_text for source in sources])
    return share is None or share < min_overlap
