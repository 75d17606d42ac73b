"""GraphQL types of a multi-day digest told period by period: each day (or week, month, quarter,
year) with its counts and its own cited overview, footnoted in the digest's one numbering after
the overview and highlights (runner/digests/periods.py makes them)."""

from __future__ import annotations

from datetime import date
from enum import Enum

import strawberry
from strawberry.types import Info

from db import models
from runner.digests.periods import Granularity, label
from runner.grounding.footnotes import footnote_numbers
from schema.context import Context
from schema.types.prose import CitedSentence, cited_sentences, load_prose, prose_sections


@strawberry.enum(description="The unit a multi-day digest is told in.")
class PeriodGranularity(Enum):
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    QUARTER = "quarter"
    YEAR = "year"


@strawberry.type(
    description="One period of a digest whose window spans several days: its bounds, counts "
    "and its own overview, each sentence cited like the digest's."
)
class DigestPeriod:
    granularity: PeriodGranularity
    label: str = strawberry.field(
        description="How a reader names it: 2010-08-17, week of 2010-08-16, 2010-08, 2010 Q3, 2010."
    )
    start: date = strawberry.field(description="Its first day (UTC).")
    end: date = strawberry.field(description="Its last day (UTC), inclusive.")
    message_count: int = strawberry.field(description="Messages of the window in the period.")
    conversation_count: int = strawberry.field(
        description="Conversations that started in the period."
    )
    overview: list[CitedSentence] = strawberry.field(
        description="Its most important conversations, quoted (empty when none was worth "
        "telling); footnotes continue the digest's numbering."
    )


async def periods_of(info: Info[Context, None], row: models.Digest) -> list[DigestPeriod]:
    if not row.periods:
        return []
    overview, highlights, told = await load_prose(info, row)
    granularities = [Granularity(str(period["granularity"])) for period in row.periods]
    starts = [date.fromisoformat(str(period["start"])) for period in row.periods]
    labels = [label(start, g) for start, g in zip(starts, granularities, strict=True)]
    numbers = footnote_numbers(
        prose_sections(overview, highlights, list(zip(labels, told, strict=True)))
    )
    return [
        DigestPeriod(
            granularity=PeriodGranularity(granularity.value),
            label=period_label,
            start=start,
            end=date.fromisoformat(str(period["end"])),
            message_count=int(period["message_count"]),
            conversation_count=int(period["conversation_count"]),
            overview=cited_sentences(list(period.get("sentences", [])), sentences, numbers),
        )
        for period, granularity, start, period_label, sentences in zip(
            row.periods, granularities, starts, labels, told, strict=True
        )
    ]
