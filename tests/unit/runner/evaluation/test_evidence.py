"""Evidence recall@5 on QMSum meetings: the meeting text and its turn spans, the hit rule, recall,
the three rankings on tiny hand-made cases, and a run on the real meetings (no fixed figures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.documents.canonical import canonicalize
from runner.documents.evidence_chunks import EvidenceChunk, chunk_document
from runner.evaluation.evidence import (
    RANDOM,
    RANKINGS,
    bm25_ranking,
    digestd_ranking,
    evaluate_evidence,
    evaluate_queries,
    load_meeting,
    meeting_text,
    overlaps,
    position_ranking,
    random_recall,
    recall_at_k,
    turns_to_chars,
)
from tests.support.paths import shared_data

FILLER = "We went through the agenda item by item and agreed to keep the minutes short."


def _chunk(index: int, start: int, text: str) -> EvidenceChunk:
    return EvidenceChunk(index=index, start=start, end=start + len(text), page=None, text=text)


def _meeting_file(
    tmp_path: Path, turns: list[tuple[str, str]], queries: list[dict[str, Any]]
) -> Path:
    """A QMSum-shaped meeting file (the fields the evaluation reads)."""
    directory = tmp_path / "meetings" / "qmsum"
    directory.mkdir(parents=True)
    data = {
        "topic_list": [],
        "general_query_list": [{"query": "Summarize the whole meeting.", "answer": "..."}],
        "specific_query_list": queries,
        "meeting_transcripts": [{"speaker": s, "content": c} for s, c in turns],
    }
    path = directory / "tiny.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _long_meeting() -> list[tuple[str, str]]:
    """Forty filler turns with one turn about the budget in the middle (turn 25)."""
    turns = [("Alice" if i % 2 else "Bob", f"{FILLER} Point {i}.") for i in range(40)]
    turns[25] = ("Carol", "The hardware budget is twelve euros per remote, so the budget is tight.")
    return turns


def test_hit_rule_is_half_open_overlap() -> None:
    assert overlaps((0, 11), (10, 20))  # one shared character is a hit
    assert not overlaps((0, 10), (10, 20))  # touching ranges share nothing
    assert overlaps((12, 15), (10, 20)) and overlaps((5, 25), (10, 20))  # inside, around
    assert not overlaps((20, 30), (10, 20))


def test_meeting_text_is_canonical_and_spans_slice_to_turns() -> None:
    turns = [("PM", "Hello .  Hello ."), ("UI", "{vocalsound}\n\nGood   morning ."), ("ME", "")]
    text, spans = meeting_text(turns)
    assert canonicalize(text) == text
    assert [text[start:end] for start, end in spans] == [
        "PM: Hello . Hello .",
        "UI: {vocalsound}\n\nGood morning .",
        "ME:",  # an empty turn keeps its label, so every turn index has a span
    ]
    # QMSum spans are inclusive: [0, 1] runs from turn 0's start to turn 1's end.
    assert turns_to_chars(spans, 0, 1) == (0, spans[1][1])
    with pytest.raises(ValueError):
        turns_to_chars(spans, 1, 3)


def test_recall_counts_gold_spans_hit_by_the_first_k_snippets() -> None:
    gold = [(100, 200), (500, 600)]
    assert recall_at_k([(150, 160)], gold) == 0.5
    assert recall_at_k([(0, 101), (599, 700)], gold) == 1.0
    assert recall_at_k([(200, 500)], gold) == 0.0  # touches both, overlaps neither
    sixth = [(0, 10)] * 5 + [(150, 160)]
    assert recall_at_k(sixth, gold, k=5) == 0.0  # only the top 5 count
    assert recall_at_k(sixth, gold, k=6) == 0.5
    with pytest.raises(ValueError):
        recall_at_k([(0, 10)], [])


def test_rankings_on_a_tiny_meeting(tmp_path: Path) -> None:
    turns = _long_meeting()
    query = {"query": "What did Carol say about the budget?", "relevant_text_span": [["25", "25"]]}
    meeting = load_meeting(_meeting_file(tmp_path, turns, [query]))
    assert len(meeting.queries) == 1  # the general query has no spans and is skipped
    gold = meeting.queries[0].spans
    assert gold == [meeting.turn_spans[25]]
    chunks = chunk_document(meeting.canonical_text)
    assert len(chunks) >= 8

    position = position_ranking(chunks, "ignored", 5)
    assert position == [(c.start, c.end) for c in chunks[:5]]
    assert recall_at_k(position, gold) == 0.0  # turn 25 is far past the first five chunks

    ours = digestd_ranking(chunks, meeting.queries[0].text, 5)
    assert overlaps(ours[0], gold[0])  # the only chunk with "Carol" and "budget" comes first
    assert recall_at_k(ours, gold) == 1.0


def test_bm25_ranks_the_exact_term_chunk_first() -> None:
    pytest.importorskip("bm25s")
    texts = [
        "The meeting opened with a round of introductions and coffee.",
        "Someone mentioned that the remote should be yellow and round.",
        "The kubernetes cluster upgrade is planned for Friday night.",
        "We closed with thanks to everyone for coming along today.",
    ]
    chunks, start = [], 0
    for index, text in enumerate(texts):
        chunks.append(_chunk(index, start, text))
        start += len(text) + 2
    ranked = bm25_ranking(chunks, "kubernetes upgrade", 3)
    assert ranked[0] == (chunks[2].start, chunks[2].end)
    # Chunks that score zero follow in document order, so runs are reproducible.
    assert ranked[1:] == [(chunks[0].start, chunks[0].end), (chunks[1].start, chunks[1].end)]


def test_random_recall_is_the_exact_expectation() -> None:
    chunks = [_chunk(i, i * 10, "x" * 8) for i in range(10)]
    assert random_recall(chunks, [(0, 5)], k=5) == pytest.approx(0.5)  # 1 of 10 chunks
    assert random_recall(chunks, [(0, 100)], k=5) == 1.0
    assert random_recall(chunks[:3], [(0, 5)], k=5) == 1.0  # fewer chunks than draws


def test_evaluate_evidence_on_a_tiny_data_dir(tmp_path: Path) -> None:
    queries = [
        {"query": "What did Carol say about the budget?", "relevant_text_span": [["25", "25"]]},
        {"query": "How did the meeting open?", "relevant_text_span": [["0", "1"], ["30", "31"]]},
    ]
    _meeting_file(tmp_path, _long_meeting(), queries)
    section = evaluate_evidence(tmp_path)
    assert [row[0] for row in section.rows] == ["tiny", "overall"]
    assert section.columns[-4:] == [*RANKINGS, RANDOM]
    position = section.columns.index("position")
    # Query 1: position misses; query 2: position hits span [0, 1] but not [30, 31] → 0.5.
    assert section.rows[0][position] == pytest.approx((0.0 + 0.5) / 2)
    assert section.rows[0][1:3] == [2, 3]  # queries, gold spans


def test_real_meetings_give_a_row_per_meeting_with_ratios() -> None:
    data_dir = shared_data("meetings/qmsum").parents[1]
    meetings = sorted(p.stem for p in (data_dir / "meetings" / "qmsum").glob("*.json"))
    section = evaluate_evidence(data_dir)
    assert [row[0] for row in section.rows] == [*meetings, "overall"]
    for row in section.rows:
        assert isinstance(row[1], int) and row[1] > 0  # every meeting has queries with gold spans
        for name in (*RANKINGS, RANDOM):
            value = row[section.columns.index(name)]
            if value != "n/a":  # bm25 is n/a when the optional bm25s is not installed
                assert isinstance(value, float) and 0.0 <= value <= 1.0
    results, _ = evaluate_queries(data_dir)
    assert section.rows[-1][1] == len(results)


def test_bm25_column_says_na_without_bm25s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import runner.evaluation.evidence as evidence

    monkeypatch.setattr(evidence, "bm25_version", lambda: None)
    query = {"query": "What did Carol say about the budget?", "relevant_text_span": [["25", "25"]]}
    _meeting_file(tmp_path, _long_meeting(), [query])
    section = evaluate_evidence(tmp_path)
    bm25 = section.columns.index("bm25")
    assert [row[bm25] for row in section.rows] == ["n/a", "n/a"]
    assert any("not installed" in note for note in section.notes)
