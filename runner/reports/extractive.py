"""The offline report writer: an extractive report, made of chosen sentences of the evidence,
each citing the source it was taken from, so reports work without a model.

- Answer up front: the `ANSWER_SENTENCES` best-ranked statements (not questions).
- Sections: the next `BODY_SENTENCES` statements, one section per channel or document, sections
  in the order of their best-ranked sentence, sentences in source order (time for a channel,
  reading order for a document) so each section reads as its source does.
- Open points: up to `OPEN_POINTS` of the best-ranked questions asked in the sources.
- A unit that repeats a chosen one (`NEAR_DUPLICATE` of its content words already said by one
  chosen sentence, `runner.grounding.claim_support.share_in`) is skipped: a chat says the same thing often.
- The title is the question, without its final punctuation (`Report` when no word is left).
Rules are about ranks and sentence shapes only, never about any one data set.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.grounding.claim_support import DEFAULT_MIN_OVERLAP, share_in, token_set
from runner.grounding.footnotes import FootnotedSentence, Section
from runner.reports.audit import ReportAudit, accept_sentences
from runner.reports.evidence import (
    ChannelMessage,
    DigestClaim,
    DocumentText,
    Evidence,
    RankedEvidence,
    gather_evidence,
    rank_evidence,
)
from runner.reports.report import ANSWER_HEADING, OPEN_POINTS_HEADING, Report, ReportSection

ANSWER_SENTENCES = 2
BODY_SENTENCES = 8
OPEN_POINTS = 3
NEAR_DUPLICATE = 0.8
MAX_TITLE_CHARS = 120
FALLBACK_TITLE = "Report"
# The version of these rules: part of a report's cache key, bumped when the output changes.
EXTRACTOR_VERSION = "extractive-4"


def report_title(question: str) -> str:
    """The question on one line without its final punctuation, capitalized and capped; a
    question without a letter or digit (`???!!!`) would leave nothing to read: `FALLBACK_TITLE`."""
    title = " ".join(question.split()).rstrip("?.! ")
    if not any(char.isalnum() for char in title):
        return FALLBACK_TITLE
    if len(title) > MAX_TITLE_CHARS:
        cut = title.rfind(" ", 0, MAX_TITLE_CHARS)
        title = title[: cut if cut > MAX_TITLE_CHARS // 2 else MAX_TITLE_CHARS] + "…"
    return title[:1].upper() + title[1:]


def _pick(ranked: list[RankedEvidence], questions: bool, limit: int) -> list[Evidence]:
    chosen: list[Evidence] = []
    said: list[set[str]] = []
    for item in ranked:
        unit = item.evidence
        if unit.is_question != questions:
            continue
        if any((share_in(unit.text, tokens) or 0.0) >= NEAR_DUPLICATE for tokens in said):
            continue
        chosen.append(unit)
        said.append(token_set([unit.text]))
        if len(chosen) == limit:
            break
    return chosen


def write_extractive_report(question: str, ranked: list[RankedEvidence]) -> Report:
    """The report for `question` from its ranked evidence (`runner.reports.evidence`)."""
    statements = _pick(ranked, questions=False, limit=ANSWER_SENTENCES + BODY_SENTENCES)
    answer, body = statements[:ANSWER_SENTENCES], statements[ANSWER_SENTENCES:]
    open_points = _pick(ranked, questions=True, limit=OPEN_POINTS)
    sections: list[ReportSection] = [
        Section(ANSWER_HEADING, tuple(FootnotedSentence(u.text, u.sources) for u in answer))
    ]
    origins: dict[int, list[Evidence]] = {}
    for unit in body:
        origins.setdefault(unit.origin_index, []).append(unit)
    for units in origins.values():
        units.sort(key=lambda unit: unit.position)
        sections.append(
            Section(
                f"In {units[0].origin}",
                tuple(FootnotedSentence(u.text, u.sources) for u in units),
            )
        )
    sections.append(
        Section(
            OPEN_POINTS_HEADING,
            tuple(FootnotedSentence(u.text, u.sources) for u in open_points),
            bullets=True,
        )
    )
    return Report(question, report_title(question), tuple(sections))


@dataclass(frozen=True)
class ExtractiveRun:
    """One offline report from end to end: the evidence units, the writer's draft, and the
    report the citation audit kept, with its audit."""

    units: list[Evidence]
    draft: Report
    report: Report
    audit: ReportAudit


def run_extractive_report(
    question: str,
    channels: list[list[ChannelMessage]],
    documents: list[DocumentText],
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    claims: list[list[DigestClaim]] | None = None,
) -> ExtractiveRun:
    """Gather, rank, write and audit: the one sequence the report job and the evaluation run."""
    units = gather_evidence(channels, documents, claims)
    draft = write_extractive_report(question, rank_evidence(question, units))
    report, audit = accept_sentences(draft, min_overlap)
    return ExtractiveRun(units, draft, report, audit)
