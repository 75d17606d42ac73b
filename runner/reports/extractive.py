"""The offline report writer: an extractive report, made of chosen sentences of the evidence,
each citing the source it was taken from, so reports work without a model.

- Candidates: the ranked statements (a question asks, it does not answer), each with its
  relevance (BM25 over the best), its neighbourhood's relevance (`candidates`), the question's
  words it names, and whether its author is one the question asks about.
- Answer up front: `ANSWER_SENTENCES` candidates chosen greedily (`choose`): relevance plus the
  share of the question's words not yet covered, so a question with several parts gets a sentence
  for each, weighed by how well it reads alone (`runner.reports.answer_shape`: not leaning on
  what came before, not a greeting, a problem statement or a table's caption); the best one
  first, then the others in source order so they read as a short paragraph.
- Sections: one per channel or document with candidates left, in the order of its best one,
  up to `SECTION_SENTENCES` chosen the same way (none under `MIN_SECTION_SHARE` of the section's
  best), in source order (time for a channel, reading order for a document). A source with no
  candidate has no section; the report job says why (`runner.reports.coverage`).
- Open points: up to `OPEN_POINTS` of the best-ranked questions asked in the sources.
- A unit that repeats a chosen one (`NEAR_DUPLICATE` of its content words already said by one
  chosen sentence, `runner.grounding.claim_support.share_in`) is skipped: a chat says the same thing often.
- The title is the question, without its final punctuation (`Report` when no word is left).
Rules are about ranks, neighbourhoods and sentence shapes only, never about any one data set.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.grounding.claim_support import (
    content_tokens,
    share_in,
    token_set,
)
from runner.grounding.footnotes import FootnotedSentence, Section
from runner.reports.answer_shape import answer_opening_weight
from runner.reports.evidence import (
    Evidence,
    RankedEvidence,
    named_authors,
    named_terms,
    question_terms,
)
from runner.reports.report import ANSWER_HEADING, OPEN_POINTS_HEADING, Report, ReportSection
from runner.reports.sources import MessageSource, ReportSource

ANSWER_SENTENCES = 3
SECTION_SENTENCES = 3
# A section's sentence scoring under this share of its best one's adds more noise than answer.
MIN_SECTION_SHARE = 0.5
NEIGHBOURS = 2
NEIGHBOURHOOD_WEIGHT = 0.5
COVERAGE_WEIGHT = 1.0
AUTHOR_WEIGHT = 0.5
OPEN_POINTS = 3
NEAR_DUPLICATE = 0.8
MAX_TITLE_CHARS = 120
FALLBACK_TITLE = "Report"
# The version of these rules: part of a report's cache key, bumped when the output changes.
EXTRACTOR_VERSION = "extractive-7"


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
    """Open points: the best-ranked units of the wanted shape, no near-duplicates."""
    chosen: list[Evidence] = []
    said: list[set[str]] = []
    for item in ranked:
        unit = item.evidence
        if unit.is_question != questions:
            continue
        if _repeats(unit, said):
            continue
        chosen.append(unit)
        said.append(token_set([unit.text]))
        if len(chosen) == limit:
            break
    return chosen


def _repeats(unit: Evidence, said: list[set[str]]) -> bool:
    return any((share_in(unit.text, tokens) or 0.0) >= NEAR_DUPLICATE for tokens in said)


@dataclass(frozen=True)
class Candidate:
    """A statement that may be quoted: its unit, its relevance (BM25 over the best, 0..1), the
    relevance of its neighbourhood, and which of the question's words it names."""

    unit: Evidence
    relevance: float
    neighbourhood: float
    terms: frozenset[str]
    by_named_author: bool = False

    @property
    def base(self) -> float:
        author = AUTHOR_WEIGHT if self.by_named_author else 0.0
        return self.relevance + NEIGHBOURHOOD_WEIGHT * self.neighbourhood + author


def candidates(question: str, ranked: list[RankedEvidence]) -> list[Candidate]:
    """The ranked statements (questions are asked, not answered, and go to the open points) with
    the features the writer chooses by, in ranking order.

    Neighbourhood: the mean relevance of the `NEIGHBOURS` units on either side of a unit in its
    own source (unranked ones count 0). A passage that answers is usually several sentences on
    the subject, while a sentence that names the question's words in passing sits among others
    that do not; the feature holds for a conversation (turns on one topic follow each other) and
    for a document (a paragraph on it) alike."""
    if not ranked:
        return []
    best = max(item.score for item in ranked) or 1.0
    relevance: dict[tuple[int, int], float] = {
        (item.evidence.origin_index, item.evidence.position): item.score / best for item in ranked
    }
    terms = set(question_terms(question))
    authors = named_authors(question, [item.evidence for item in ranked])
    found: list[Candidate] = []
    # Running text only, when there is any: a reference list's titles and a table's rows name
    # the question's words without saying anything about them (the ranking put them last).
    prose_only = any(item.evidence.prose for item in ranked)
    for item in ranked:
        unit = item.evidence
        if unit.is_question or (prose_only and not unit.prose):
            continue
        around = [
            relevance.get((unit.origin_index, unit.position + offset), 0.0)
            for offset in range(-NEIGHBOURS, NEIGHBOURS + 1)
            if offset
        ]
        named = frozenset(named_terms(terms, set(content_tokens(unit.text))))
        author = isinstance(unit.source, MessageSource) and unit.source.author in authors
        found.append(Candidate(unit, item.score / best, sum(around) / len(around), named, author))
    return found


def opening_weight(candidate: Candidate) -> float:
    """How well the candidate reads alone at the top of an answer (runner.reports.answer_shape)."""
    chat = isinstance(candidate.unit.source, MessageSource)
    return answer_opening_weight(candidate.unit.text, chat=chat)


def choose(
    pool: list[Candidate],
    limit: int,
    said: list[set[str]],
    covered: set[str],
    terms: int,
    *,
    answer: bool = False,
) -> list[Candidate]:
    """Up to `limit` candidates, greedily: each time the one whose base score plus the share of
    the question's words it adds to those already `covered` is highest (so a question with two
    parts gets a sentence for each), never one repeating a sentence already `said`. For the
    `answer`, that score is weighed by how well the sentence stands alone. `said` and
    `covered` are updated in place, so the answer and the sections never quote the same thing."""
    chosen: list[Candidate] = []
    left = list(pool)
    weight = {id(c): opening_weight(c) if answer else 1.0 for c in pool}
    while left and len(chosen) < limit:
        left = [c for c in left if not _repeats(c.unit, said)]
        if not left:
            break
        best = max(
            left,
            key=lambda c: (
                weight[id(c)] * (c.base + COVERAGE_WEIGHT * len(c.terms - covered) / max(terms, 1))
            ),
        )
        left.remove(best)
        chosen.append(best)
        said.append(token_set([best.unit.text]))
        covered |= best.terms
    return chosen


def _reading_order(chosen: list[Candidate]) -> list[Evidence]:
    """Source by source in the order given, each in its own order: a short paragraph that reads
    as the sources do, not in score order."""
    units = [c.unit for c in chosen]
    return sorted(units, key=lambda u: (u.origin_index, u.position))


def _answer_order(chosen: list[Candidate]) -> list[Evidence]:
    """The best sentence first, so the answer opens with what answers; the others after it in
    reading order."""
    return [c.unit for c in chosen[:1]] + _reading_order(chosen[1:])


def _sentences(units: list[Evidence]) -> tuple[FootnotedSentence[ReportSource], ...]:
    return tuple(FootnotedSentence(u.text, u.sources) for u in units)


def write_extractive_report(question: str, ranked: list[RankedEvidence]) -> Report:
    """The report for `question` from its ranked evidence (`runner.reports.evidence`)."""
    pool = candidates(question, ranked)
    terms = len(set(question_terms(question)))
    said: list[set[str]] = []
    covered: set[str] = set()
    answer = choose(pool, ANSWER_SENTENCES, said, covered, terms, answer=True)
    sections: list[ReportSection] = [Section(ANSWER_HEADING, _sentences(_answer_order(answer)))]
    # One section per source that has evidence, in the order of its best candidate: a source
    # outranked everywhere by another still says what it has on the question.
    quoted = {id(c.unit) for c in answer}
    by_origin: dict[int, list[Candidate]] = {}
    for candidate in pool:
        if id(candidate.unit) not in quoted:
            by_origin.setdefault(candidate.unit.origin_index, []).append(candidate)
    for origin_pool in by_origin.values():
        section = choose(origin_pool, SECTION_SENTENCES, said, set(covered), terms)
        section = [c for c in section if c.base >= MIN_SECTION_SHARE * section[0].base]
        if section:
            units = _reading_order(section)
            sections.append(Section(f"In {units[0].origin}", _sentences(units)))
    open_points = _pick(ranked, questions=True, limit=OPEN_POINTS)
    sections.append(Section(OPEN_POINTS_HEADING, _sentences(open_points), bullets=True))
    return Report(question, report_title(question), tuple(sections))
