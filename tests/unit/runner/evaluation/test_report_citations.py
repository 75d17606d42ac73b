"""Report citations on QMSum meetings: the span rules, a hand-made QMSum-shaped meeting whose
figures are known, the support count on a hand-made report, and a run on the real meetings."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from runner.evaluation.report_citations import (
    bm25_top_turns,
    evaluate_reports,
    meeting_channel,
    score_meeting,
    score_meetings,
    span_precision,
    span_recall,
    supported_sentences,
)
from runner.grounding.bm25 import bm25_scores
from runner.grounding.claim_support import content_tokens
from runner.grounding.footnotes import FootnotedSentence, Section
from runner.reports.evidence import gather_evidence
from runner.reports.report import Report
from runner.reports.sources import MessageSource
from tests.support.paths import shared_data

QUESTION = "What did the team decide about the battery charger design?"
# Turns 1 and 5 name three of the question's words; 3 and 4 (the second gold span) none.
TURNS = [
    ("Project Manager", "Welcome everyone, we start with the agenda for this afternoon."),
    ("Industrial Designer", "The battery charger design needs a smaller plug and longer cable."),
    ("Marketing", "Customers told us they mostly care about the price and the colour."),
    ("User Interface", "Lunch will be served in the kitchen after we finish here today."),
    ("Marketing", "Sandwiches and soup are the options, vegetarian ones included."),
    ("Project Manager", "So the battery charger design keeps the plug we already have in stock."),
]
TURN_RECORDS: list[dict[str, object]] = [{"speaker": s, "content": c} for s, c in TURNS]


def _meeting(gold: list[list[str]]) -> dict[str, object]:
    """A QMSum-shaped meeting (the fields the evaluation reads; spans as strings, as QMSum)."""
    return {
        "meeting_transcripts": TURN_RECORDS,
        "general_query_list": [{"query": "Summarize the whole meeting.", "answer": "-"}],
        "specific_query_list": [
            {"query": QUESTION, "answer": "-", "relevant_text_span": gold},
            {"query": "A query without spans is skipped.", "answer": "-"},
        ],
    }


def test_span_rules() -> None:
    gold = [(1, 2), (3, 4)]
    assert span_recall({2, 9}, gold) == 0.5  # inclusive: turn 2 is inside [1, 2]
    assert span_recall({0, 5}, gold) == 0.0
    assert span_recall({1, 4}, gold) == 1.0
    assert span_precision([2, 5, 3, 0], gold) == 0.5
    assert span_precision([], gold) is None


def test_recall_is_half_when_one_of_two_gold_spans_is_cited() -> None:
    [score] = score_meeting("synthetic", _meeting([["1", "2"], ["3", "4"]]))
    # The report cites turns 1 and 5: span [1, 2] is hit, [3, 4] is not; 5 is outside gold.
    assert score.gold_spans == 2 and score.cited == 2
    assert score.recall == 0.5
    assert score.precision == 0.5
    assert score.proposed == score.supported == score.kept == 2  # extractive: quotes its source
    units = gather_evidence([meeting_channel("synthetic", TURN_RECORDS)], [])
    baseline = bm25_top_turns(QUESTION, units, 2)
    assert score.bm25_recall == span_recall(set(baseline), [(1, 2), (3, 4)])
    assert score.bm25_precision == span_precision(baseline, [(1, 2), (3, 4)])


def test_all_cited_turns_in_gold_gives_full_figures() -> None:
    [score] = score_meeting("synthetic", _meeting([["0", "5"]]))
    assert (score.recall, score.precision) == (1.0, 1.0)


def test_bm25_baseline_is_top_k_by_score_each_turn_once() -> None:
    units = gather_evidence([meeting_channel("m", TURN_RECORDS)], [])
    scores = bm25_scores([u.text for u in units], " ".join(content_tokens(QUESTION)))
    best = max(range(len(units)), key=lambda i: (scores[i], -i))
    source = units[best].source
    assert isinstance(source, MessageSource)
    assert bm25_top_turns(QUESTION, units, 1) == [int(source.message_id)]
    assert bm25_top_turns(QUESTION, units, 0) == []
    assert len(bm25_top_turns(QUESTION, units, len(units))) == len(units)  # one unit per turn


def test_support_counts_sentences_their_source_does_not_support() -> None:
    text = "The battery charger design needs a smaller plug and longer cable."
    source = MessageSource("m", "1", 1, "A", datetime(2020, 1, 1, tzinfo=UTC), text, 0, len(text))
    report = Report(
        "q",
        "Q",
        (
            Section(
                "Answer",
                (
                    FootnotedSentence(text, (source,)),
                    FootnotedSentence("Lunch is soup and sandwiches in the kitchen.", (source,)),
                ),
            ),
        ),
    )
    assert supported_sentences(report) == (2, 1)


def test_section_from_files(tmp_path: Path) -> None:
    directory = tmp_path / "meetings" / "qmsum"
    directory.mkdir(parents=True)
    (directory / "m1.json").write_text(json.dumps(_meeting([["1", "2"], ["3", "4"]])))
    section = evaluate_reports(tmp_path)
    records = [dict(zip(section.columns, row, strict=True)) for row in section.rows]
    assert [r["meeting"] for r in records] == ["m1", "overall"]
    assert records[-1]["recall"] == 0.5 and records[-1]["support"] == 1.0
    # The fake model copies the sources it is shown: its sentences are supported, none re-asked,
    # and it cites the charger turns (1 and 5) like the extractive report.
    assert records[-1]["fake support"] == 1.0 and records[-1]["fake re-asked"] == 0
    assert records[-1]["fake recall"] == 0.5 and records[-1]["fake precision"] == 0.5


def test_real_meetings() -> None:
    data_dir = shared_data("meetings/qmsum").parents[1]
    scores = score_meetings(data_dir)
    assert {s.meeting for s in scores} >= {"TS3004a", "education_13"}
    assert all(s.gold_spans > 0 and 0 <= s.recall <= 1 for s in scores)
    assert sum(s.cited for s in scores) > 0
    # Extractive sentences quote their source: every proposed sentence is supported.
    assert all(s.proposed == s.supported for s in scores)
    # The fake model's reports go through the LLM writer: cited, supported, nothing re-asked.
    assert sum(s.fake_cited for s in scores) > 0
    assert all(s.fake_proposed == s.fake_supported > 0 and s.fake_re_asked == 0 for s in scores)
    section = evaluate_reports(data_dir)
    assert section.rows[-1][0] == "overall" and section.rows[-1][1] == len(scores)
