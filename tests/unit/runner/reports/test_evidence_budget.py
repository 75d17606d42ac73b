"""Fitting a report's evidence to the writer model's budget, as plain data: priority by the
weighted sum of quality, confidence, recency and relevance, the degradation order cap → floor →
truncate → drop, the fidelity record of each step, the warning codes and the ids of what was
left out."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from runner.core.fidelity import FIDELITY_SCHEMA_VERSION, MIN_ITEMS_KEPT, TOP_ITEMS_CONDENSED
from runner.documents.policy import SourceQuality
from runner.reports.evidence import Evidence, RankedEvidence
from runner.reports.evidence_budget import (
    CONDENSED_UNIT_TOKENS,
    HEADLINE_UNIT_TOKENS,
    MIN_EVIDENCE_TOKENS,
    TRUNCATED_UNIT_TOKENS,
    TRUNCATION_MARK,
    UNIT_OVERHEAD_TOKENS,
    EvidenceFit,
    condensed_text,
    content_id,
    cut_to_tokens,
    fit_evidence,
    priority_order,
    protected_ids,
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


def test_a_week_older_message_loses_to_a_less_relevant_new_one() -> None:
    # Recency weighs 15%, halved per week of age: the same minute hardly counts, a month does.
    week = 7 * 24 * 60
    relevant_old = unit("old", "a b", 2.0, 0)
    newer = unit("new", "a b", 1.5, 4 * week)
    floor = unit("floor", "a", 1.0, 4 * week)
    assert priority_order([relevant_old, newer, floor])[0] is newer
    same_day = unit("today", "a b", 1.5, 60)
    assert priority_order([relevant_old, same_day, unit("f", "a", 1.0, 60)])[0] is relevant_old


def document_unit(name: str, score: float, quality: SourceQuality) -> RankedEvidence:
    text = f"{name} text"
    source = DocumentSource(name, name, "h", f"char:0-{len(text)}", text)
    return RankedEvidence(Evidence(text, source, name, 0, 0, quality=quality), score)


def test_a_low_quality_document_goes_before_an_equally_relevant_medium_one() -> None:
    # Extraction quality weighs 40%: of two equally relevant spans, the degraded document's
    # is the one dropped, whatever their rank's order.
    low = [document_unit(f"low{i}", 5.0, SourceQuality.LOW) for i in range(6)]
    good = [document_unit(f"good{i}", 5.0, SourceQuality.MEDIUM) for i in range(6)]
    ordered = priority_order([*low, *good])
    assert ids(ordered) == ids([*good, *low])
    budget = MIN_EVIDENCE_TOKENS
    long = [RankedEvidence(replace(u.evidence, text=sentence(60)), u.score) for u in [*low, *good]]
    fit = fit_evidence(long, budget, counter=words)
    kept = {content_id(u.evidence) for u in fit.units}
    assert fit.dropped_content_ids and all("low" in i for i in fit.dropped_content_ids)
    assert set(ids(long[6:])) <= kept


def test_a_channel_digest_claim_counts_by_its_firmness() -> None:
    # Confidence weighs 30%: a quoted sentence is its source's own words, a decision a firm
    # reading of it, an open question settles nothing.
    quoted = unit("said", "a b", 1.0)
    claims = [
        RankedEvidence(replace(unit(kind, "a b", 1.0).evidence, kind=kind), 1.0)
        for kind in ("open_question", "decision")
    ]
    assert [u.evidence.kind for u in priority_order([*claims, quoted])] == [
        "sentence",
        "decision",
        "open_question",
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
    ranked = [unit(f"m{i}", sentence(5), 10.0 - i, i) for i in range(6)]
    fit = fit_evidence(ranked, 10_000, max_units=4, counter=words)
    assert ids(ranked[:4]) == [content_id(u.evidence) for u in fit.units]
    assert fit.dropped_content_ids == ids(ranked[4:])
    assert (
        fit.warnings[0]["code"] == "CONTENT_DROPPED"
        and "beyond the first 4" in fit.warnings[0]["message"]
    )
    assert fit.fidelity[0]["reason"] == "unit_cap"


def test_a_cap_below_the_floor_of_three_units_still_gives_three() -> None:
    ranked = [unit(f"m{i}", sentence(5), 10.0 - i, i) for i in range(5)]
    fit = fit_evidence(ranked, 10_000, max_units=1, counter=words)
    assert [content_id(u.evidence) for u in fit.units] == ids(ranked[:MIN_ITEMS_KEPT])


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


def _levels(fit: EvidenceFit) -> dict[str, str]:
    return {i: r["phases"]["synthesis"]["level"] for i, r in fit.content_fidelity.items()}


def test_the_top_five_are_condensed_never_dropped_and_the_rest_dropped_first() -> None:
    # Budget for five condensed units only: everything below the top five goes first.
    ranked = [unit(f"m{i}", sentence(80, f"w{i}"), 30.0 - i, i) for i in range(12)]
    top = ids(ranked[:TOP_ITEMS_CONDENSED])
    budget = MIN_EVIDENCE_TOKENS  # 5 x (20 + 12) fits, 5 x (40 + 12) + more does not
    fit = fit_evidence(
        [*ranked, *[unit(f"x{i}", sentence(80), 1.0, 50 + i) for i in range(40)]],
        budget,
        counter=words,
    )
    given = [content_id(u.evidence) for u in fit.units]
    assert given[:TOP_ITEMS_CONDENSED] == top and fit.tokens <= budget
    assert set(top).isdisjoint(fit.dropped_content_ids)
    levels = _levels(fit)
    assert all(levels[i] in ("truncated", "condensed") for i in top)
    assert all(words(u.text) >= CONDENSED_UNIT_TOKENS - 1 for u in fit.units[:5])


def test_a_tight_budget_condenses_the_top_five_with_a_priority_warning_and_keeps_them() -> None:
    # Tags of 80 tokens: five truncated units (5 x 120) are over the 512 floor, condensed
    # (5 x 100) they fit; the three below the top five are dropped first.
    ranked = [unit(f"m{i}", sentence(80, f"w{i}"), 30.0 - i, i) for i in range(8)]
    fit = fit_evidence(ranked, 0, counter=words, overhead=lambda _: 80)
    assert fit.budget_tokens == MIN_EVIDENCE_TOKENS and not fit.over_budget
    assert [content_id(u.evidence) for u in fit.units] == ids(ranked[:5])
    assert fit.dropped_content_ids == ids(ranked[5:][::-1])
    assert [u.level.value for u in fit.units] == ["condensed"] * 5
    codes = [w["code"] for w in fit.warnings]
    assert codes == [
        "TOKEN_BUDGET_FLOORED",
        "CONTENT_TRUNCATED",
        "CONTENT_DROPPED",
        "PRIORITY_SUMMARIZED",
    ]
    assert [r["step"] for r in fit.fidelity] == ["floor", "truncate", "drop", "condense"]


def test_condensing_keeps_the_first_sentence_as_the_headline() -> None:
    text = "Rollbacks need approval. " + sentence(60)
    assert condensed_text(text, CONDENSED_UNIT_TOKENS, words) == "Rollbacks need approval."
    long = sentence(60)
    assert words(condensed_text(long, CONDENSED_UNIT_TOKENS, words)) <= CONDENSED_UNIT_TOKENS


def test_at_least_three_units_are_kept_even_when_only_three_exist_and_nothing_fits() -> None:
    ranked = [unit(f"m{i}", sentence(300), 5.0 - i, i) for i in range(3)]
    fit = fit_evidence(ranked, MIN_EVIDENCE_TOKENS, counter=words)
    assert len(fit.units) == MIN_ITEMS_KEPT and fit.dropped_content_ids == []
    assert not fit.over_budget


def test_protected_units_are_never_dropped_however_low_their_rank() -> None:
    ranked = [unit(f"m{i}", sentence(60, f"w{i}"), 50.0 - i, i) for i in range(40)]
    pinned = ids(ranked[30:32])
    fit = fit_evidence(ranked, MIN_EVIDENCE_TOKENS, counter=words, protected=pinned)
    given = [content_id(u.evidence) for u in fit.units]
    assert set(pinned) <= set(given) and set(pinned).isdisjoint(fit.dropped_content_ids)
    assert fit.dropped_content_ids  # others, of higher rank, were dropped instead
    records = {i: fit.content_fidelity[i]["phases"]["synthesis"] for i in pinned}
    assert all(r["protected"] and r["level"] != "dropped" for r in records.values())


def test_protected_units_beyond_the_cap_are_kept() -> None:
    ranked = [unit(f"m{i}", sentence(5), 50.0 - i, i) for i in range(10)]
    fit = fit_evidence(ranked, 10_000, max_units=4, counter=words, protected=ids(ranked[8:9]))
    assert [content_id(u.evidence) for u in fit.units] == ids([*ranked[:4], ranked[8]])
    assert fit.dropped_content_ids == ids([*ranked[4:8], ranked[9]])


def test_protected_content_over_the_budget_falls_back_to_headlines_with_a_warning() -> None:
    ranked = [unit(f"m{i}", sentence(60, f"w{i}"), 50.0 - i, i) for i in range(20)]
    # 20 protected units condensed need 20 x 32 = 640 > 512; as headlines 20 x 22 = 440.
    fit = fit_evidence(ranked, MIN_EVIDENCE_TOKENS, counter=words, protected=ids(ranked))
    assert not fit.over_budget and fit.dropped_content_ids == []
    codes = [w["code"] for w in fit.warnings]
    assert "PROTECTED_OVERFLOW" in codes
    overflow = next(w for w in fit.warnings if w["code"] == "PROTECTED_OVERFLOW")
    headlines = [u for u in fit.units if u.level.value == "headline"]
    assert headlines and all(words(u.text) <= HEADLINE_UNIT_TOKENS for u in headlines)
    assert overflow["item_ids"] == [content_id(u.evidence) for u in headlines][::-1]
    record = fit.content_fidelity[overflow["item_ids"][0]]["phases"]["synthesis"]
    assert record["reason"] == "protected_overflow" and "PROTECTED_OVERFLOW" in record["warnings"]


def test_protected_content_that_does_not_fit_even_as_headlines_is_over_budget() -> None:
    ranked = [unit(f"m{i}", sentence(60, f"w{i}"), 50.0 - i, i) for i in range(40)]
    fit = fit_evidence(ranked, MIN_EVIDENCE_TOKENS, counter=words, protected=ids(ranked))
    assert fit.over_budget and len(fit.units) == 40
    assert fit.fidelity[-1]["step"] == "over"


def test_without_dropping_units_are_condensed_and_never_left_out() -> None:
    ranked = [unit(f"m{i}", sentence(60, f"w{i}"), 50.0 - i, i) for i in range(14)]
    fit = fit_evidence(ranked, MIN_EVIDENCE_TOKENS, counter=words, allow_dropping=False)
    assert fit.dropped_content_ids == [] and len(fit.units) == 14 and not fit.over_budget
    assert "CONTENT_DROPPED" not in [w["code"] for w in fit.warnings]
    dropping = fit_evidence(ranked, MIN_EVIDENCE_TOKENS, counter=words)
    assert dropping.dropped_content_ids


def test_every_unit_within_the_cap_has_a_fidelity_record_with_tokens_and_level() -> None:
    ranked = [unit(f"m{i}", sentence(100), 30.0 - i, i) for i in range(20)]
    fit = fit_evidence(ranked, 600, counter=words)
    assert list(fit.content_fidelity) == ids(ranked)
    levels = _levels(fit)
    assert {levels[i] for i in fit.dropped_content_ids} == {"dropped"}
    given = {content_id(u.evidence): u for u in fit.units}
    for item_id, record in fit.content_fidelity.items():
        phase = record["phases"]["synthesis"]
        assert phase["original_tokens"] == 100
        assert phase["final_tokens"] == (given[item_id].tokens if item_id in given else 0)
        assert phase["rank"] == ids(ranked).index(item_id) + 1
    stored = fit.as_json()
    assert stored["content_fidelity_schema_version"] == FIDELITY_SCHEMA_VERSION
    assert stored["content_fidelity"] == fit.content_fidelity
    assert stored["content_archive_hashes"] == {}
    assert set(fit.degraded_texts()) == set(fit.content_fidelity)  # all cut or dropped


def test_the_question_pins_quoted_phrases_and_key_claims_on_its_subject() -> None:
    plain = unit("m1", "The cache warmup runs nightly.", 1.0)
    quoted = unit("m2", "Rollback   plan B is the fallback.", 1.0)
    decision = RankedEvidence(
        Evidence(
            "Database migrations need a rollback plan.",
            plain.evidence.source,
            "#ops",
            0,
            5,
            kind="decision",
        ),
        0.5,
    )
    other = RankedEvidence(
        Evidence("Lunch is at noon.", plain.evidence.source, "#ops", 0, 6, kind="decision"), 0.5
    )
    question = 'What about "rollback plan b" for database migrations?'
    assert protected_ids(question, [plain, quoted, decision, other]) == {
        content_id(quoted.evidence),
        content_id(decision.evidence),
    }
    # Whole words only, and a quoted phrase of stopwords pins nothing.
    assert protected_ids('Is "rollback plan" ready?', [quoted]) == {content_id(quoted.evidence)}
    assert protected_ids('Is "rollback pla" ready?', [quoted]) == set()
    assert protected_ids('What is "the" plan?', [plain, quoted]) == set()
