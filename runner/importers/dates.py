"""Timestamp parsing shared by the importers. Every function raises `ValueError` on bad input
and returns an aware UTC datetime; a zone-less timestamp is taken as UTC (exports like
DiscordChatExporter's CSV/TXT and IRC logs carry no zone at all)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

# DiscordChatExporter's CSV/TXT date, as it wrote them over the years: "14-Aug-18 11:18 AM"
# (the default "dd-MMM-yy hh:mm tt"), locale-style "8/14/2018 11:18 AM", and ISO.
DISCORD_DATE_SHAPE = re.compile(
    r"\d{1,2}-[A-Za-z]{3}-\d{2,4} \d{1,2}:\d{2}(?::\d{2})?(?: ?[AaPp][Mm])?"
    r"|\d{1,2}/\d{1,2}/\d{2,4},? \d{1,2}:\d{2}(?::\d{2})?(?: ?[AaPp][Mm])?"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
)

_DISCORD_FORMATS = (
    "%d-%b-%y %I:%M %p",
    "%d-%b-%Y %I:%M %p",
    "%d-%b-%y %H:%M",
    "%d-%b-%y %I:%M:%S %p",
    "%m/%d/%Y %I:%M %p",
    "%m/%d/%Y %I:%M:%S %p",
    "%m/%d/%y %I:%M %p",
    "%m/%d/%Y %H:%M",
)


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def parse_iso_timestamp(value: object) -> datetime:
    """ISO-8601 (`2020-01-02T03:04:05Z`, `...+02:00`, `2020-01-02 03:04:05.123`) or a number of
    Unix seconds. Zone-less ISO is taken as UTC."""
    if isinstance(value, bool):
        raise ValueError("a boolean is not a timestamp")
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, tz=UTC)
    if not isinstance(value, str) or not value.strip():
        raise ValueError("empty timestamp")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return _utc(datetime.fromisoformat(text))


def parse_discord_date(value: str) -> datetime:
    """A DiscordChatExporter CSV/TXT date (see `DISCORD_DATE_SHAPE`); no zone, so UTC."""
    text = " ".join(value.replace(",", " ").split())
    if re.match(r"\d{4}-\d{2}-\d{2}", text):
        return parse_iso_timestamp(text)
    # "%p" only matches "AM"/"PM" in the C locale's spelling; normalize "am"/"11:18AM".
    text = re.sub(r"(\d)([AaPp][Mm])$", r"\1 \2", text).upper()
    for pattern in _DISCORD_FORMATS:
        try:
            return datetime.strptime(text, pattern).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unrecognized date {value!r}")


def parse_slack_ts(value: object) -> datetime:
    """Slack's `"1503435956.000247"` (seconds.micros since the epoch, also the message id)."""
    if not isinstance(value, str) or not re.fullmatch(r"\d{1,12}(?:\.\d{1,9})?", value):
        raise ValueError(f"not a Slack ts: {value!r}")
    try:
        seconds = Decimal(value)
    except InvalidOperation as error:  # pragma: no cover - the regex already guarantees digits
        raise ValueError(str(error)) from error
    whole = int(seconds)
    micros = int((seconds - whole) * 1_000_000)
    return datetime.fromtimestamp(whole, tz=UTC).replace(microsecond=micros)


def describe(value: object, limit: int = 40) -> str:
    """A short printable form of a bad value for an error reason (never a whole message)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
