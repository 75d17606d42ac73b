"""The matching rule of `digestd eval`: messages must overlap AND texts must agree."""

from __future__ import annotations

import pytest

from runner.evaluation.matching import (
    TEXT_THRESHOLD,
    Rule,
    ScoredItem,
    Span,
    is_match,
    match_items,
    normalize_url,
    token_set_f1,
)


def item(text: str, *message_ids: str, span: Span | None = None) -> ScoredItem:
    return ScoredItem(text, frozenset(message_ids), span=span)


def test_token_set_f1_ignores_case_order_and_stopwords() -> None:
    assert token_set_f1("Retry the batch fetch", "fetch BATCH, retry!") == 1.0
    assert token_set_f1("the a of", "the a of") == 0.0  # nothing checkable: never a match
    # {retry, batch, fetch} vs {retry, batch, later}: 2 common, P = R = 2/3.
    assert token_set_f1("retry batch fetch", "retry batch later") == pytest.approx(2 / 3)


def test_match_when_messages_overlap_and_text_is_similar() -> None:
    gold = item("Cut the release branch on Wednesday at 14:00 UTC", "m031", "m032")
    extracted = item("Let's cut the release branch on Wednesday at 14:00 UTC for QA", "m031")
    score = is_match(Rule.TEXT, gold, extracted)
    assert score is not None and score >= TEXT_THRESHOLD


def test_no_match_when_text_differs_even_on_the_same_message() -> None:
    gold = item("Cut the release branch on Wednesday", "m031")
    extracted = item("Lunch at the ramen place at noon", "m031")
    assert is_match(Rule.TEXT, gold, extracted) is None
    # Messages-only (lenient) matching accepts it: that is what the R@msgs column counts.
    assert is_match(Rule.TEXT, gold, extracted, threshold=0.0) == 0.0


def test_no_match_when_messages_do_not_overlap_even_with_identical_text() -> None:
    gold = item("Cut the release branch on Wednesday", "m031")
    extracted = item("Cut the release branch on Wednesday", "m065")
    assert is_match(Rule.TEXT, gold, extracted) is None


def test_links_match_on_the_url_and_ignore_trailing_punctuation() -> None:
    assert normalize_url("https://example.org/a/).") == "https://example.org/a"
    gold = item("https://example.org/docs/", "m1")
    assert is_match(Rule.URL, gold, item("https://example.org/docs", "m1")) == 1.0
    assert is_match(Rule.URL, gold, item("https://example.org/other", "m1")) is None


def test_artifacts_match_on_span_overlap_in_the_same_message() -> None:
    gold = item("code", "m1", span=Span("m1", 10, 50))
    assert is_match(Rule.SPAN, gold, item("x", "m1", span=Span("m1", 49, 80))) == 1.0
    assert is_match(Rule.SPAN, gold, item("x", "m1", span=Span("m1", 50, 80))) is None  # touching
    assert is_match(Rule.SPAN, gold, item("x", "m2", span=Span("m2", 10, 50))) is None


def test_matching_is_one_to_one_and_prefers_the_most_similar_pair() -> None:
    gold = [item("retry batch fetch backoff", "m1"), item("retry batch fetch", "m1")]
    extracted = [item("retry batch fetch", "m1")]
    pairs = match_items(Rule.TEXT, gold, extracted)
    # The identical text wins; the other gold item stays unmatched instead of sharing it.
    assert [(p.gold, p.extracted, p.similarity) for p in pairs] == [(1, 0, 1.0)]
