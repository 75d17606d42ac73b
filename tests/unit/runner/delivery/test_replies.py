"""Reading a receiver's reply: Retry-After as seconds or an HTTP date, bogus waits ignored or
capped, only short error codes quoted, and a failure after a delivered part always retried."""

from __future__ import annotations

from datetime import UTC, datetime

from runner.delivery.contract import Rejected, RetryLater
from runner.delivery.replies import (
    LONGEST_WAIT_SECONDS,
    common_outcome,
    error_code,
    for_later_part,
    retry_after_header,
    seconds_of,
)


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_header("30") == 30.0
    assert retry_after_header("Thu, 01 Jan 2026 12:00:45 GMT", now) == 45.0
    assert retry_after_header("Thu, 01 Jan 2026 11:00:00 GMT", now) == 0.0
    assert retry_after_header("soon") is None and retry_after_header(None) is None
    assert retry_after_header("-5") is None
    assert retry_after_header("99999999") == LONGEST_WAIT_SECONDS
    assert seconds_of(1.25) == 1.25 and seconds_of(True) is None and seconds_of("nan") is None


def test_only_short_codes_are_quoted() -> None:
    assert error_code("channel_is_archived") == "channel_is_archived"
    assert error_code(10015) == "10015"
    assert error_code("<html>https://hooks.slack.com/services/T/B/secret</html>") is None


def test_statuses_every_receiver_shares() -> None:
    assert common_outcome("x", 429, 2.5) == RetryLater("x rate limited", 2.5)
    assert common_outcome("x", 408, None) == RetryLater("x request timed out")
    assert common_outcome("x", 502, None) == RetryLater("x server error 502")
    assert isinstance(common_outcome("x", 301, None), Rejected)
    assert common_outcome("x", 404, None) is None and common_outcome("x", 200, None) is None


def test_a_failure_after_a_delivered_part_is_retried() -> None:
    assert for_later_part(Rejected("gone"), 0, 3) == Rejected("gone")
    assert for_later_part(Rejected("gone"), 1, 3) == RetryLater("part 2 of 3: gone")
    assert for_later_part(RetryLater("busy", 4.0), 2, 3) == RetryLater("part 3 of 3: busy", 4.0)
