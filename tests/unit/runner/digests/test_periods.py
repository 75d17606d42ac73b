"""A window of several days is told period by period: the unit that keeps the periods few, the
counts of each, and the period's own sentences, each cited and validated."""

from __future__ import annotations

import gc
from datetime import UTC, date, datetime, timedelta

import pytest

from runner.core.contract import CitedSentence
from runner.core.window import Window, WindowMessage
from runner.digests.periods import (
    MAX_PERIODS,
    Granularity,
    granularity_for,
    label,
    period_end,
    stored_heading,
    tell_periods,
)
from runner.extract.offline.topics import ranked_conversations, ranked_for, remember_ranked
from runner.grounding.validate import validate_sentences
from tests.support.digests import DAY_EXCHANGES

START = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)


def _window(days: int = 3) -> Window:
    messages: list[WindowMessage] = []
    for day in range(days):
        asked, answered, closed = DAY_EXCHANGES[day % len(DAY_EXCHANGES)]
        at = START + timedelta(days=day)
        key = f"c{day}"
        lines = [("ann", asked), ("bob", answered), ("ann", closed), ("cem", f"noted {asked}")]
        for position, (author, text) in enumerate(lines):
            messages.append(
                WindowMessage(
                    message_id=f"m{day}-{position}",
                    author=author,
                    ts=at + timedelta(minutes=position),
                    normalized_text=text,
                    conversation=key,
                )
            )
    return Window(channel_name="ops", messages=tuple(messages))


def test_a_window_of_one_day_has_no_periods() -> None:
    assert tell_periods(_window(1), 0.5).periods == []


def test_each_day_is_told_with_its_counts_and_cited_sentences() -> None:
    window = _window(3)
    told = tell_periods(window, 0.5)
    assert [p.start for p in told.periods] == [date(2024, 5, 6), date(2024, 5, 7), date(2024, 5, 8)]
    assert {p.granularity for p in told.periods} == {Granularity.DAY}
    assert [p.label for p in told.periods] == ["2024-05-06", "2024-05-07", "2024-05-08"]
    assert [p.message_count for p in told.periods] == [4, 4, 4]
    assert [p.conversation_count for p in told.periods] == [1, 1, 1]
    by_id = window.by_id()
    for period, (asked, _, _) in zip(told.periods, DAY_EXCHANGES, strict=True):
        assert period.sentences, f"{period.label} told nothing"
        assert asked[:20] in period.sentences[0].sentence
        # Every sentence cites a message of its own period, anchored in that message's text.
        for sentence, anchors in zip(period.sentences, period.anchors, strict=True):
            assert anchors and sentence.message_ids
            for anchor in anchors:
                cited = by_id[anchor.message_id]
                assert cited.ts.date() == period.start
                assert 0 <= anchor.char_start < anchor.char_end <= len(cited.normalized_text)


def test_periods_tell_the_ranking_the_digest_already_made_of_the_window() -> None:
    window = _window(3)
    # A ranking remembered for this window object (as the digest's reduce leaves it) is the
    # one the periods tell; an equal window that is another object is ranked afresh.
    remember_ranked(window, [])
    assert all(p.sentences == [] for p in tell_periods(window, 0.5).periods)
    fresh = _window(3)
    assert all(p.sentences for p in tell_periods(fresh, 0.5).periods)
    assert ranked_for(fresh) is ranked_for(fresh)
    assert ranked_for(fresh) == ranked_conversations(fresh.messages)


def test_a_remembered_ranking_goes_with_its_window() -> None:
    from runner.extract.offline import topics

    window = _window(2)
    ranked_for(window)
    key = id(window)
    assert key in topics._RANKED
    del window
    gc.collect()
    assert key not in topics._RANKED


def test_a_period_sentence_is_validated_like_the_overview() -> None:
    texts = {"m1": "raise max_wal_size and check the replication slot"}
    drafts = [
        CitedSentence(sentence="bob answered: raise max_wal_size", message_ids=["m1"]),
        CitedSentence(sentence="The cluster was migrated to MySQL.", message_ids=["m1"]),
        CitedSentence(sentence="bob answered: raise max_wal_size", message_ids=["gone"]),
    ]
    kept, anchors, rejections = validate_sentences(drafts, texts, field_name="periods")
    assert [s.sentence for s in kept] == ["bob answered: raise max_wal_size"]
    assert [a.message_id for a in anchors[0]] == ["m1"]
    assert sorted(r.reason.split(":")[0] for r in rejections) == [
        "low_support",
        "unknown_message_id",
    ]
    assert {r.field for r in rejections} == {"periods"}


@pytest.mark.parametrize(
    ("span_days", "expected"),
    [
        (MAX_PERIODS, Granularity.DAY),
        (MAX_PERIODS + 1, Granularity.WEEK),
        (7 * (MAX_PERIODS + 5), Granularity.MONTH),
        (31 * (MAX_PERIODS + 5), Granularity.QUARTER),
        (92 * (MAX_PERIODS + 5), Granularity.YEAR),
    ],
)
def test_the_unit_is_the_smallest_that_keeps_the_periods_few(
    span_days: int, expected: Granularity
) -> None:
    first = date(2001, 1, 1)
    assert granularity_for({first + timedelta(days=d) for d in range(span_days)}) is expected


def test_labels_and_headings_name_the_period_as_a_reader_would() -> None:
    assert label(date(2010, 8, 16), Granularity.WEEK) == "week of 2010-08-16"
    assert label(date(2010, 7, 1), Granularity.QUARTER) == "2010 Q3"
    assert label(date(2010, 8, 1), Granularity.MONTH) == "2010-08"
    stored = {
        "granularity": "month",
        "start": "2010-12-01",
        "end": "2010-12-31",
        "message_count": 1,
        "conversation_count": 2,
    }
    assert stored_heading(stored) == "2010-12: 1 message, 2 conversations"


@pytest.mark.parametrize(
    ("start", "granularity", "end"),
    [
        (date(2024, 5, 6), Granularity.DAY, date(2024, 5, 6)),
        (date(2024, 5, 6), Granularity.WEEK, date(2024, 5, 12)),
        (date(2024, 2, 1), Granularity.MONTH, date(2024, 2, 29)),
        (date(2024, 12, 1), Granularity.MONTH, date(2024, 12, 31)),
        (date(2024, 10, 1), Granularity.QUARTER, date(2024, 12, 31)),
        (date(2024, 1, 1), Granularity.YEAR, date(2024, 12, 31)),
    ],
)
def test_a_period_ends_on_its_last_day(start: date, granularity: Granularity, end: date) -> None:
    assert period_end(start, granularity) == end
