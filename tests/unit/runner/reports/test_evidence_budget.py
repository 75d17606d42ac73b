"""Fitting a report's evidence to the writer model's budget, as plain data: priority by relevance
then recency, the degradation order cap → floor → truncate → drop, the fidelity record of each step,
the warning codes and the ids of what was left out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from runner.reports.evidence import Evidence, RankedEvidence
from runner.reports.evidence_budget import (
    MIN_EVIDENCE_TOKENS,
    TRUNCATED_UNIT_TOKENS,
    TRUNCATION_MARK,
    UNIT_OVERHEAD_TOKENS,
    content_id,
    cut_to_tokens,
    fit_evidence,
    priority_order,
)
from runner.reports.sources import DocumentSource, MessageSource

T0 = datetime(2024, 5, 1, tzinfo=UTC)


def words(text: str) -> int:
    """A token counter the tests can reason about: one token per word."""
    return len(text.split())


def unit(name: str, text: str, score: float, minute: int = 0) -> RankedEvidence:
    source = MessageSource(
        "ops", name, 1, "ann", T0 + timedelta(minutes=minute), text, 0, len(text)
    )
    return RankedEvidence(Evidence(text, source, "#ops", 0, minute), score)


def sentence(length: int, word: str = "word") -> str:
    return " ".join([word] * length)


def ids(fit_units: list[RankedEvidence]) -> list[str]:
    return [content_id(u.evidence) for u in fit_units]


def test_priority_is_relevance_then_recency_and_documents_keep_their_order() -> None:
    old, new, best = unit("old", "a b", 1.0, 0), unit("new", "a b", 1.0, 5), unit("best", "a", 2.0)
    document = RankedEvidence(
        Evidence("a b", DocumentSource("7", "Doc", "h", "char:0-3", "a b"), "Doc", 1, 0), 1.0
    )
    ordered = priority_order([old, document, new, best])
    assert [u.evidence.source for u in ordered] == [
        best.evidence.source,
        new.evidence.source,
        old.evidence.source,
        document.evidence.source,
    ]


def test_evidence_within_budget_is_given_whole_with_one_record_and_no_warning() -> None:
    ranked = [unit(f"m{i}", sentence(10), 1.0, i) for i in range(3)]
    fit = fit_evidence(ranked, 1000, counter=words)
    assert [u.text for u in fit.units] == [sentence(10)] * 3
    assert fit.warnings == [] and fit.dropped_content_ids == []
    assert fit.fidelity == [
        {
            "phase": "synthesis",
            "step": "none",
            "original_tokens": fit.tokens,
            "final_tokens": fit.tokens,
            "reason": "within_budget",
        }
    ]


def test_long_units_are_truncated_lowest_priority_first_before_anything_is_dropped() -> None:
    ranked = [unit(f"m{i}", sentence(100, f"w{i}"), 10.0 - i, i) for i in range(6)]
    whole = 6 * (100 + UNIT_OVERHEAD_TOKENS)
    budget = whole - 2 * (100 - TRUNCATED_UNIT_TOKENS) + 5  # room after cutting the last two
    fit = fit_evidence(ranked, budget, counter=words)
    assert [u.truncated for u in fit.units] == [False] * 4 + [True] * 2
    assert fit.tokens <= budget and fit.dropped_content_ids == []
    cut = fit.units[-1].text
    assert cut.endswith(TRUNCATION_MARK) and words(cut) <= TRUNCATED_UNIT_TOKENS
    assert sentence(100, "w5").startswith(cut.removesuffix(TRUNCATION_MARK))
    (warning,) = fit.warnings
    assert warning["code"] == "CONTENT_TRUNCATED"
    assert warning["item_ids"] == [content_id(ranked[5].evidence), content_id(ranked[4].evidence)]
    (record,) = fit.fidelity
    assert record["step"] == "truncate" and record["reason"] == "budget_limit"
    assert record["original_tokens"] == whole and record["final_tokens"] == fit.tokens


def test_what_still_does_not_fit_is_dropped_lowest_priority_first_with_its_ids() -> None:
    ranked = [unit(f"m{i}", sentence(100), 30.0 - i, i) for i in range(20)]
    budget = 600  # every unit cut to 40 tokens still needs 20 x 52
    kept = budget // (TRUNCATED_UNIT_TOKENS + UNIT_OVERHEAD_TOKENS)
    fit = fit_evidence(ranked, budget, counter=words)
    assert fit.tokens <= budget and all(u.truncated for u in fit.units)
    assert [content_id(u.evidence) for u in fit.units] == ids(ranked[:kept])
    assert fit.dropped_content_ids == ids(ranked[kept:][::-1])  # dropped from the bottom up
    assert [w["code"] for w in fit.warnings] == ["CONTENT_TRUNCATED", "CONTENT_DROPPED"]
    assert fit.warnings[1]["item_ids"] == fit.dropped_content_ids
    assert [r["step"] for r in fit.fidelity] == ["truncate", "drop"]
    assert fit.fidelity[1]["original_tokens"] == fit.fidelity[0]["final_tokens"]
    assert fit.fidelity[1]["final_tokens"] == fit.tokens


def test_short_units_are_not_truncated_only_dropped() -> None:
    ranked = [unit(f"m{i}", sentence(10), 1.0, i) for i in range(100)]
    fit = fit_evidence(ranked, MIN_EVIDENCE_TOKENS, max_units=100, counter=words)
    assert [w["code"] for w in fit.warnings] == ["CONTENT_DROPPED"]
    assert len(fit.units) == MIN_EVIDENCE_TOKENS // (10 + UNIT_OVERHEAD_TOKENS)
    # Recency among equal scores: the newest messages are kept.
    assert ids([ranked[99]]) == [content_id(fit.units[0].evidence)]


def test_a_budget_below_the_floor_is_raised_and_said() -> None:
    ranked = [unit("m0", sentence(10), 1.0)]
    fit = fit_evidence(ranked, 40, counter=words)
    assert fit.budget_tokens == MIN_EVIDENCE_TOKENS and len(fit.units) == 1
    assert [w["code"] for w in fit.warnings] == ["TOKEN_BUDGET_FLOORED"]
    assert fit.fidelity == [
        {
            "phase": "synthesis",
            "step": "floor",
            "original_tokens": 40,
            "final_tokens": MIN_EVIDENCE_TOKENS,
            "reason": "budget_floor",
        }
    ]


def test_more_units_than_the_cap_are_dropped_whatever_the_budget() -> None:
    ranked = [unit(f"m{i}", sentence(5), 10.0 - i, i) for i in range(5)]
    fit = fit_evidence(ranked, 10_000, max_units=2, counter=words)
    assert ids(ranked[:2]) == [content_id(u.evidence) for u in fit.units]
    assert fit.dropped_content_ids == ids(ranked[2:])
    assert (
        fit.warnings[0]["code"] == "CONTENT_DROPPED"
        and "beyond the first 2" in fit.warnings[0]["message"]
    )
    assert fit.fidelity[0]["reason"] == "unit_cap"


def test_cut_to_tokens_keeps_a_word_prefix_within_the_limit() -> None:
    text = "one two three four five six seven"
    assert cut_to_tokens(text, 100, words) == text
    cut = cut_to_tokens(text, 4, words)
    assert cut == "one two three four" + TRUNCATION_MARK or words(cut) <= 4
    assert text.startswith(cut.removesuffix(TRUNCATION_MARK)) and words(cut) <= 4


def test_message_units_of_one_message_have_distinct_ids_and_documents_their_locator() -> None:
    text = "First sentence here. Second sentence there."
    first = MessageSource("ops", "m1", 2, "ann", T0, text, 0, 20)
    second = MessageSource("ops", "m1", 2, "ann", T0, text, 21, len(text))
    assert content_id(Evidence(text[:20], first, "#ops", 0, 0)) == "message:ops:m1@2:char:0-20"
    assert content_id(Evidence(text[21:], second, "#ops", 0, 1)) == (
        f"message:ops:m1@2:char:21-{len(text)}"
    )
    document = DocumentSource("7", "Doc", "abc", "page:2:char:5-9", "word")
    assert content_id(Evidence("word", document, "Doc", 1, 0)) == "document:7:abc:page:2:char:5-9"
