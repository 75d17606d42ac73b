"""A window that spans several days told period by period: each day (or week, month, quarter,
year: the smallest that keeps the periods few enough to read) with its own cited overview, its
message and conversation counts, beside the window's overview, which is the roll-up.

A period tells its most important conversations (`offline.importance`, the ranking the overview
uses) as exchanges: what the opener asked or said, quoted, and the first answer, quoted. It is
extractive whatever the extractor, so every digest of a long backlog has it, and its sentences
are validated like the overview's (`validate_sentences`): one that fails is dropped, never
stored. A period with nothing worth telling keeps its counts and no sentence."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from enum import Enum
from typing import Any

from runner.core.contract import CitedSentence
from runner.core.window import Window
from runner.extract.offline.exchanges import Reading, exchange
from runner.extract.offline.importance import informative_opening
from runner.extract.offline.prose import ProseWriter
from runner.extract.offline.topics import ranked_for
from runner.grounding.citations import Anchor
from runner.grounding.validate import Rejection, validate_sentences

# A window is told in periods of the smallest unit that gives at most this many periods with
# messages: a month of days, a year of weeks, five years of months.
MAX_PERIODS = 62
# Conversations told per period, and sentences (an exchange is one or two).
PERIOD_CONVERSATIONS = 2
PERIOD_SENTENCES = 4


class Granularity(Enum):
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    QUARTER = "quarter"
    YEAR = "year"


def _week(day: date) -> date:
    return day - timedelta(days=day.weekday())  # ISO weeks start on Monday


def _month(day: date) -> date:
    return day.replace(day=1)


def _quarter(day: date) -> date:
    return date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)


def _year(day: date) -> date:
    return date(day.year, 1, 1)


_STARTS: dict[Granularity, Callable[[date], date]] = {
    Granularity.DAY: lambda day: day,
    Granularity.WEEK: _week,
    Granularity.MONTH: _month,
    Granularity.QUARTER: _quarter,
    Granularity.YEAR: _year,
}


def period_end(start: date, granularity: Granularity) -> date:
    """The last day of the period that starts on `start`."""
    if granularity is Granularity.DAY:
        return start
    if granularity is Granularity.WEEK:
        return start + timedelta(days=6)
    months = {Granularity.MONTH: 1, Granularity.QUARTER: 3, Granularity.YEAR: 12}[granularity]
    month = start.month - 1 + months
    return date(start.year + month // 12, month % 12 + 1, 1) - timedelta(days=1)


def label(start: date, granularity: Granularity) -> str:
    """How a reader names the period: 2010-08-17, week of 2010-08-16, 2010-08, 2010 Q3, 2010."""
    if granularity is Granularity.DAY:
        return start.isoformat()
    if granularity is Granularity.WEEK:
        return f"week of {start.isoformat()}"
    if granularity is Granularity.MONTH:
        return start.strftime("%Y-%m")
    if granularity is Granularity.QUARTER:
        return f"{start.year} Q{(start.month - 1) // 3 + 1}"
    return str(start.year)


def granularity_for(days: set[date]) -> Granularity:
    """The smallest unit that gives at most MAX_PERIODS periods with messages."""
    for granularity, start_of in _STARTS.items():
        if len({start_of(day) for day in days}) <= MAX_PERIODS:
            return granularity
    return Granularity.YEAR


@dataclass(frozen=True)
class Period:
    """One period of the window: its bounds (days, inclusive), counts and validated sentences
    with their anchors (one list per sentence)."""

    granularity: Granularity
    start: date
    end: date
    message_count: int
    conversation_count: int
    sentences: list[CitedSentence]
    anchors: list[list[Anchor]]

    @property
    def label(self) -> str:
        return label(self.start, self.granularity)


@dataclass(frozen=True)
class ToldPeriods:
    periods: list[Period]
    rejections: list[Rejection]


def tell_periods(window: Window, min_overlap: float) -> ToldPeriods:
    """The window's periods, oldest first; none for a window of one day (its overview is the
    day's)."""
    messages = window.messages
    days = {m.ts.date() for m in messages}
    if len(days) < 2:
        return ToldPeriods([], [])
    granularity = granularity_for(days)
    start_of = _STARTS[granularity]
    message_counts = Counter(start_of(m.ts.date()) for m in messages)
    # A conversation belongs to the period of its first message.
    first_day: dict[str, date] = {}
    for message in messages:
        if message.conversation is not None:
            key = str(message.conversation)
            day = message.ts.date()
            if key not in first_day or day < first_day[key]:
                first_day[key] = day
    conversation_counts = Counter(start_of(day) for day in first_day.values())
    reading = Reading.of(messages)
    writer = ProseWriter(reading.by_id, reading.participants)
    drafts: dict[date, list[CitedSentence]] = {start: [] for start in message_counts}
    told: Counter[date] = Counter()
    for conversation in ranked_for(window) or ():  # most important first
        if not conversation.importance.worth_telling:
            continue
        pair = exchange(reading, conversation)
        if pair is None or not informative_opening(pair[0].normalized_text):
            continue
        start = start_of(pair[0].ts.date())
        if told[start] == PERIOD_CONVERSATIONS:
            continue
        sentences = writer.exchange(*pair)
        room = PERIOD_SENTENCES - len(drafts[start])
        if sentences and room >= len(sentences):
            drafts[start].extend(sentences)
            told[start] += 1
    texts = {m.message_id: m.normalized_text for m in messages}
    periods: list[Period] = []
    rejections: list[Rejection] = []
    for start in sorted(drafts):
        kept, anchors, dropped = validate_sentences(
            drafts[start], texts, field_name="periods", min_overlap=min_overlap
        )
        rejections.extend(dropped)
        periods.append(
            Period(
                granularity=granularity,
                start=start,
                end=period_end(start, granularity),
                message_count=message_counts[start],
                conversation_count=conversation_counts[start],
                sentences=kept,
                anchors=anchors,
            )
        )
    return ToldPeriods(periods, rejections)


def stored_heading(stored: Mapping[str, Any]) -> str:
    """A stored period's heading in a Markdown digest: its label and counts."""
    start = date.fromisoformat(str(stored["start"]))
    name = label(start, Granularity(str(stored["granularity"])))
    messages = int(stored["message_count"])
    conversations = int(stored["conversation_count"])
    return (
        f"{name}: {messages} message{'s' * (messages != 1)}, "
        f"{conversations} conversation{'s' * (conversations != 1)}"
    )
