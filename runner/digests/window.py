"""Which messages a channel digest reads, and which of them it leaves out.

A coverage digest reads the channel's messages that no successful digest covers at their current
revision, in (ts, id) order, at most `max_messages` (a larger backlog is cut into coverage slices
first, runner/digests/split.py, and a slice reads only its own bounds); a catch-up digest reads
exactly the messages with since <= ts < until and changes no coverage. What a digest read but does not
cover (failed chunks, messages edited while it ran) and what the cap left for the next digest
are reported as ranges with a reason (`Digest.messageCoverage.leftOut`). The rules are here, as
plain data; reading the window from the database is runner/digests/store.py's `load_window`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from runner.core.window import MessageKey

REASON_CHUNK_FAILED = "chunk_failed"
REASON_WINDOW_CAP = "window_cap"
REASON_EDITED = "edited_during_digest"


# Catch-up bounds outside these years are refused: nobody asks what they missed in year 9999, and
# such values overflow time-zone arithmetic (year 9999 at -14:00) and Postgres' range alike.
EARLIEST_WINDOW = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_WINDOW = datetime(2200, 1, 1, tzinfo=UTC)


def window_options(since: datetime | None, until: datetime | None) -> dict[str, str]:
    """The job options of a catch-up window: canonical UTC ISO strings, so that the same window
    asked twice (in any time zone) is the same active job (see migration 0003's index).
    A naive datetime is taken as UTC. Raises ValueError with a message for the client."""
    bounds: dict[str, datetime] = {}
    for name, value in (("since", since), ("until", until)):
        if value is None:
            continue
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        try:
            value = value.astimezone(UTC)
        except (OverflowError, ValueError):
            raise ValueError(f"options.{name} is out of range") from None
        if not EARLIEST_WINDOW <= value <= LATEST_WINDOW:
            raise ValueError(f"options.{name} must be between 1970 and 2200")
        bounds[name] = value
    if "since" in bounds and "until" in bounds and bounds["since"] >= bounds["until"]:
        raise ValueError("options.since must be before options.until")
    return {name: value.isoformat() for name, value in bounds.items()}


def window_key(extractor_fingerprint: str, chunk_tokens: int, keys: Iterable[MessageKey]) -> str:
    """Identifies a digest's input: extraction settings and each message at its revision."""
    digest = hashlib.sha256(f"{extractor_fingerprint}\n{chunk_tokens}\n".encode())
    for key in keys:
        digest.update(f"{key.message_id}:{key.revision},".encode())
    return digest.hexdigest()


def left_out_ranges(keys: tuple[MessageKey, ...], reasons: dict[int, str]) -> list[dict[str, Any]]:
    """Runs of consecutive window messages (window order) left out for the same reason;
    `reasons` maps internal message id → reason."""
    ranges: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    previous_reason: str | None = None
    for key in keys:
        reason = reasons.get(key.message_id)
        if reason is None or reason != previous_reason:
            current = None
        if reason is not None:
            if current is None:
                current = {
                    "first_message_id": key.external_id,
                    "first_at": key.ts.isoformat(),
                    "message_count": 0,
                    "reason": reason,
                }
                ranges.append(current)
            current["last_message_id"] = key.external_id
            current["last_at"] = key.ts.isoformat()
            current["message_count"] += 1
        previous_reason = reason
    return ranges
