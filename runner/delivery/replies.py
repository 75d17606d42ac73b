"""How a chat receiver's HTTP reply reads as an outcome: the wait it asks for (Retry-After as
seconds or an HTTP date, Discord's X-RateLimit-Reset-After and JSON `retry_after`), the short
error code its body names, and the status codes every webhook receiver shares (408, 429 and 5xx
retry later; a redirect is refused, since a webhook URL that moved is a setting to fix)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from runner.delivery.contract import Rejected, RetryLater, SendOutcome

# A wait longer than this is read as a day: a bogus header must not park a delivery for ever.
LONGEST_WAIT_SECONDS = 86_400.0
# What a receiver's error code may look like to be quoted in a reason (Slack's `no_service`,
# Discord's numeric codes); anything else is not repeated.
_ERROR_CODE = re.compile(r"[a-z][a-z0-9_]{0,39}|\d{1,6}")


def seconds_of(value: object) -> float | None:
    """A non-negative finite number of seconds (capped at a day), or None."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return min(seconds, LONGEST_WAIT_SECONDS)


def retry_after_header(value: str | None, now: datetime | None = None) -> float | None:
    """RFC 9110 Retry-After: delay seconds, or an HTTP date (the seconds until then)."""
    if value is None or not value.strip():
        return None
    if (seconds := seconds_of(value.strip())) is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return seconds_of(max(0.0, (when - (now or datetime.now(UTC))).total_seconds()))


def json_object(body: str) -> Mapping[str, object]:
    """The body as a JSON object, or empty when it is none."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def error_code(value: object) -> str | None:
    """A receiver's short error code, when it looks like one (never free text)."""
    text = str(value).strip() if isinstance(value, str | int) else ""
    return text if _ERROR_CODE.fullmatch(text) else None


def common_outcome(service: str, status: int, wait: float | None) -> RetryLater | Rejected | None:
    """The outcome every webhook receiver shares for `status`, or None for 2xx and the 4xx
    each service explains itself."""
    if status == 429:
        return RetryLater(f"{service} rate limited", wait)
    if status == 408:
        return RetryLater(f"{service} request timed out", wait)
    if status >= 500:
        return RetryLater(f"{service} server error {status}", wait)
    if 300 <= status < 400:
        return Rejected(f"{service} webhook answered a redirect ({status})")
    return None


def for_later_part(outcome: RetryLater | Rejected, index: int, parts: int) -> SendOutcome:
    """A failure of part `index` (from 0) of `parts`: after a part was delivered, even a refusal
    is retried (the contract: the outbox sends the parts again with the same delivery id)."""
    if index == 0:
        return outcome
    where = f"part {index + 1} of {parts}: {outcome.reason}"
    if isinstance(outcome, RetryLater):
        return RetryLater(where, outcome.retry_after_seconds)
    return RetryLater(where)
