"""Reports on QMSum meetings: do the report's citations (offline writer, and LLM writer against a
fake model) land in the gold turns, next to a BM25 top-k baseline, and does every report
sentence rest on what it cites?

A meeting is given to the report core as one channel: each turn a message (message id = its turn
index, author = its speaker, text = its content). A channel rather than a document because
QMSum's gold (`relevant_text_span`) is a range of turns, and a message is exactly one turn: a
cited source names its turn, so "inside a gold span" is exact. A document would be chunked
across turns, and a cited span could straddle two of them.

Per specific query (general queries have no spans), the pure core runs in-process, as the report
job runs it but without the database: `run_extractive_report` (gather → split the question into
sub-questions → rank for each and merge → first answer → one refinement round → write → audit,
with production rules and minimum overlap).
- recall = share of the query's gold spans `[first, last]` (inclusive turns) holding the turn of
  at least one cited source; precision = share of cited sources (the registry, one per message)
  whose turn lies inside some gold span.
- bm25 baseline: the same units scored by the same BM25 (`runner.grounding.bm25` over the question's
  content words, as `rank_evidence` does), the top k by score (ties: unit order), k = the
  number of sources the report cites; scored the same way (a turn counts once).
- support = share of the draft's sentences (every sentence the writer proposed, before the audit
  drops any) whose words are supported by their cited text (`runner.reports.audit.
  sentence_problem`, the claim_support rule); kept = sentences the audit let through.
- fake model: the same query answered by the LLM writer (`runner.reports.llm_writer`, over the
  same sub-questions, merged and refined evidence: evidence fitted to the budget, structured
  citations, audit, one re-ask) against the deterministic fake
  model of `runner.evaluation.fake_report_model` (it copies the sources it is shown, each
  sentence citing the one it copies) behind the real `openai` client; its recall, precision and
  support (share of the sentences of its audited answer supported by their cited text, the same
  rule) and the sentences re-asked.
Query, meeting and overall figures are means over queries; a query whose report cites nothing
has no precision (it counts in recall as 0).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import fmean
from typing import Any

from runner.evaluation.evidence import meeting_paths
from runner.evaluation.fake_report_model import fake_report_writer
from runner.evaluation.tables import NOT_DEFINED, Cell, EvalSection
from runner.grounding.bm25 import bm25_scores
from runner.grounding.claim_support import content_tokens
from runner.reports.audit import sentence_problem
from runner.reports.decompose import rules_decomposition
from runner.reports.evidence import ChannelMessage, Evidence, gather_evidence
from runner.reports.llm_writer import LLMReportRun
from runner.reports.report import Report
from runner.reports.research import research_evidence, run_extractive_report
from runner.reports.sources import MessageSource

# Turn timestamps are not in QMSum; a fixed clock keeps reports reproducible.
MEETING_START = datetime(2020, 1, 1, tzinfo=UTC)

TurnRange = tuple[int, int]  # QMSum's [first, last], inclusive


@dataclass(frozen=True)
class MeetingQuery:
    text: str
    gold: list[TurnRange]


@dataclass(frozen=True)
class QueryScore:
    meeting: str
    query: str
    gold_spans: int
    cited: int  # sources the report cites
    recall: float
    precision: float | None
    bm25_recall: float
    bm25_precision: float | None
    proposed: int  # sentences the writer proposed
    supported: int  # of them, supported by their cited text
    kept: int  # sentences in the audited report
    fake_cited: int = 0  # the same, for the LLM writer against the fake model
    fake_recall: float = 0.0
    fake_precision: float | None = None
    fake_proposed: int = 0
    fake_supported: int = 0
    fake_re_asked: int = 0


def meeting_channel(name: str, turns: list[dict[str, object]]) -> list[ChannelMessage]:
    """The meeting as a channel: one message per turn, message id = turn index."""
    return [
        ChannelMessage(
            channel=name,
            message_id=str(index),
            revision=1,
            author=str(turn.get("speaker", "")).strip() or "Unknown",
            ts=MEETING_START + timedelta(seconds=index),
            text=str(turn.get("content", "")),
        )
        for index, turn in enumerate(turns)
    ]


def meeting_queries(data: dict[str, Any]) -> list[MeetingQuery]:
    """The specific queries that carry gold spans."""
    queries = []
    for item in data.get("specific_query_list", []):
        gold = [(int(first), int(last)) for first, last in item.get("relevant_text_span", [])]
        if gold:
            queries.append(MeetingQuery(str(item["query"]), gold))
    return queries


def turn_of(source: MessageSource) -> int:
    return int(source.message_id)


def span_recall(turns: set[int], gold: list[TurnRange]) -> float:
    """Share of gold spans holding at least one of `turns`."""
    return sum(1 for first, last in gold if any(first <= t <= last for t in turns)) / len(gold)


def span_precision(turns: list[int], gold: list[TurnRange]) -> float | None:
    """Share of `turns` (one per cited source) inside some gold span; None when nothing cited."""
    if not turns:
        return None
    inside = sum(1 for t in turns if any(first <= t <= last for first, last in gold))
    return inside / len(turns)


def bm25_top_turns(question: str, units: list[Evidence], k: int) -> list[int]:
    """The turns of the top `k` units by the report ranking's BM25, each turn once."""
    if not units or k <= 0:
        return []
    scores = bm25_scores([unit.text for unit in units], " ".join(content_tokens(question)))
    order = sorted(range(len(units)), key=lambda i: (-scores[i], i))[:k]
    turns: dict[int, None] = {}
    for index in order:
        source = units[index].source
        assert isinstance(source, MessageSource)  # a meeting is a channel
        turns.setdefault(turn_of(source), None)
    return list(turns)


def supported_sentences(report: Report) -> tuple[int, int]:
    """(sentences, of them supported by their cited text) under the audit's per-sentence rule."""
    sentences = list(report.sentences())
    return len(sentences), sum(
        1 for sentence in sentences if sentence_problem(sentence.sentence, sentence.sources) is None
    )


def cited_turns(report: Report) -> list[int]:
    """The turn of each cited source, one per source."""
    return [turn_of(s) for _, s in report.registry() if isinstance(s, MessageSource)]


def score_query(
    meeting: str,
    channel: list[ChannelMessage],
    query: MeetingQuery,
    fake: LLMReportRun | None = None,
) -> QueryScore:
    """One report over the meeting for `query`, scored against its gold spans; `fake` is the
    fake model's run for the same query, if any."""
    run = run_extractive_report(query.text, [channel], [])
    report, audit = run.report, run.audit
    cited = cited_turns(report)
    baseline = bm25_top_turns(query.text, run.units, len(cited))
    proposed, supported = supported_sentences(run.draft)
    score = QueryScore(
        meeting=meeting,
        query=query.text,
        gold_spans=len(query.gold),
        cited=len(cited),
        recall=span_recall(set(cited), query.gold),
        precision=span_precision(cited, query.gold),
        bm25_recall=span_recall(set(baseline), query.gold),
        bm25_precision=span_precision(baseline, query.gold),
        proposed=proposed,
        supported=supported,
        kept=audit.kept,
    )
    if fake is None:
        return score
    fake_cited = cited_turns(fake.report)
    return replace(
        score,
        fake_cited=len(fake_cited),
        fake_recall=span_recall(set(fake_cited), query.gold),
        fake_precision=span_precision(fake_cited, query.gold),
        fake_proposed=fake.audit.proposed,
        fake_supported=fake.audit.kept,
        fake_re_asked=fake.audit.re_asked,
    )


async def fake_model_runs(
    channel: list[ChannelMessage], queries: list[MeetingQuery]
) -> list[LLMReportRun]:
    """The LLM writer's report for each query against the fake model (one client per loop)."""
    writer, _ = fake_report_writer()
    units = gather_evidence([channel], [])
    runs = []
    for query in queries:
        research = research_evidence(rules_decomposition(query.text), units)
        runs.append(await writer.write(query.text, research.ranked))
    return runs


def score_meeting(name: str, data: dict[str, Any]) -> list[QueryScore]:
    channel = meeting_channel(name, list(data["meeting_transcripts"]))
    queries = meeting_queries(data)
    fakes = asyncio.run(fake_model_runs(channel, queries))
    return [score_query(name, channel, q, fake) for q, fake in zip(queries, fakes, strict=True)]


def score_meetings(data_dir: Path) -> list[QueryScore]:
    scores: list[QueryScore] = []
    for path in meeting_paths(data_dir):
        scores += score_meeting(path.stem, json.loads(path.read_text(encoding="utf-8")))
    return scores


def _mean(values: list[float | None]) -> Cell:
    defined = [v for v in values if v is not None]
    return round(fmean(defined), 4) if defined else NOT_DEFINED


def _row(label: str, scores: list[QueryScore]) -> list[Cell]:
    proposed = sum(s.proposed for s in scores)
    fake_proposed = sum(s.fake_proposed for s in scores)
    return [
        label,
        len(scores),
        sum(s.gold_spans for s in scores),
        sum(s.cited for s in scores),
        _mean([s.recall for s in scores]),
        _mean([s.precision for s in scores]),
        _mean([s.bm25_recall for s in scores]),
        _mean([s.bm25_precision for s in scores]),
        round(sum(s.supported for s in scores) / proposed, 4) if proposed else NOT_DEFINED,
        sum(s.kept for s in scores),
        _mean([s.fake_recall for s in scores]),
        _mean([s.fake_precision for s in scores]),
        round(sum(s.fake_supported for s in scores) / fake_proposed, 4)
        if fake_proposed
        else NOT_DEFINED,
        sum(s.fake_re_asked for s in scores),
    ]


def report_section(scores: list[QueryScore]) -> EvalSection:
    """Per meeting and overall figures of `scores` as one table."""
    meetings = list(dict.fromkeys(s.meeting for s in scores))
    rows = [_row(name, [s for s in scores if s.meeting == name]) for name in meetings]
    rows.append(_row("overall", scores))
    return EvalSection(
        title="Report citations on QMSum meetings",
        columns=[
            "meeting",
            "queries",
            "gold spans",
            "cited",
            "recall",
            "precision",
            "bm25 recall",
            "bm25 precision",
            "support",
            "kept",
            "fake recall",
            "fake precision",
            "fake support",
            "fake re-asked",
        ],
        rows=rows,
        notes=[
            "each meeting is one channel, one message per turn; the offline extractive report "
            "(gather, rank, write, audit) runs in-process for every specific query",
            "recall = share of gold turn spans holding a cited source's turn; precision = share "
            "of cited sources whose turn is inside a gold span; mean over queries (precision "
            "only over queries whose report cites something)",
            "bm25 = top k units by the same BM25 over the question's content words, k = the "
            "report's cited sources; precision over their distinct turns (a report source is "
            "one message, i.e. one turn, too)",
            "support = share of all proposed sentences supported by their cited text "
            "(claim_support rule, audit's minimum overlap); kept = sentences after the audit",
            "fake = the LLM writer (budget fitting, structured citations, audit, one re-ask) "
            "against a deterministic fake model that copies the sources it is shown, each "
            "sentence citing the source it copies: it measures the writer's plumbing, not a "
            "model; fake support = share of the sentences of its audited answer supported by "
            "their cited text; fake re-asked = sentences sent back once",
        ],
    )


def evaluate_reports(data_dir: Path) -> EvalSection:
    """The report-citation section of `digestd eval` over every QMSum meeting in `data_dir`."""
    return report_section(score_meetings(data_dir))
