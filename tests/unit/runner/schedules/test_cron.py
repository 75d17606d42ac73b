"""Cron expressions in a time zone (runner/schedules/cron.py): what is refused and why, and the next slot
in wall-clock time across daylight saving changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from runner.schedules.cron import CronSchedule, InvalidSchedule, parse_schedule

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.mark.parametrize(
    ("cron", "timezone", "field", "says"),
    [
        ("61 * * * *", "UTC", "cron", "bad minute field"),
        ("0 24 * * *", "UTC", "cron", "bad hour field"),
        ("* * *", "UTC", "cron", "3 fields"),
        ("0 0 * * * * *", "UTC", "cron", "7 fields"),
        ("@daily", "UTC", "cron", "no @daily-style shortcuts"),
        ("0 0 30 2 *", "UTC", "cron", "bad day-of-month field"),  # 30 February never comes
        ("   ", "UTC", "cron", "empty"),
        ("0 " * 60, "UTC", "cron", "longer than 100"),
        ("0 9 * * 1-5", "Mars/Olympus_Mons", "timezone", "not an IANA time zone name"),
        ("0 9 * * 1-5", "../../etc/passwd", "timezone", "not an IANA time zone name"),
        ("0 9 * * 1-5", "", "timezone", "not an IANA time zone name"),
        ("0 9 * * 1-5", "CET\x00", "timezone", "not an IANA time zone name"),
    ],
)
def test_a_bad_cron_or_zone_is_refused_naming_the_field_and_why(
    cron: str, timezone: str, field: str, says: str
) -> None:
    with pytest.raises(InvalidSchedule) as refused:
        parse_schedule(cron, timezone)
    assert refused.value.field == field
    assert says in str(refused.value) and str(refused.value).startswith(f"{field}: ")


def test_whitespace_is_collapsed_and_seconds_and_names_are_accepted() -> None:
    assert parse_schedule("  0  9 * *   1-5 ", " Europe/Berlin ").cron == "0 9 * * 1-5"
    assert parse_schedule("0 9 * * mon-fri", "UTC").cron == "0 9 * * mon-fri"
    every_ten = parse_schedule("*/10 * * * * *", "UTC")  # six fields: seconds first
    start = datetime(2026, 1, 1, 12, 0, 3, tzinfo=UTC)
    assert every_ten.next_after(start) == datetime(2026, 1, 1, 12, 0, 10, tzinfo=UTC)


def test_next_slot_is_strictly_after_the_moment_and_in_utc() -> None:
    daily = parse_schedule("0 9 * * *", "Europe/Berlin")
    at_nine = datetime(2026, 1, 5, 9, 0, tzinfo=BERLIN)
    assert daily.next_after(at_nine) == datetime(2026, 1, 6, 8, 0, tzinfo=UTC)
    assert daily.next_after(at_nine - timedelta(microseconds=1)) == at_nine.astimezone(UTC)
    assert daily.next_after(at_nine).tzinfo == UTC


def test_weekday_mornings_stay_at_nine_local_across_both_dst_changes() -> None:
    weekdays = parse_schedule("0 9 * * 1-5", "Europe/Berlin")
    # Friday before the spring change (29 March 2026): Monday 09:00 is now UTC+2.
    friday = datetime(2026, 3, 27, 10, 0, tzinfo=BERLIN)
    assert weekdays.next_after(friday) == datetime(2026, 3, 30, 7, 0, tzinfo=UTC)
    # Friday before the autumn change (25 October 2026): Monday 09:00 is UTC+1 again.
    friday = datetime(2026, 10, 23, 10, 0, tzinfo=BERLIN)
    assert weekdays.next_after(friday) == datetime(2026, 10, 26, 8, 0, tzinfo=UTC)


def test_a_daily_slot_in_the_skipped_hour_runs_once_right_after_it() -> None:
    at_half_past_two = parse_schedule("30 2 * * *", "Europe/Berlin")
    # 02:30 does not exist on 29 March 2026 in Berlin (02:00 -> 03:00): Debian's cron runs it
    # at 03:00, and the next day at 02:30 again.
    first = at_half_past_two.next_after(datetime(2026, 3, 28, 12, 0, tzinfo=BERLIN))
    assert first == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)  # 03:00+02:00
    assert at_half_past_two.next_after(first) == datetime(2026, 3, 30, 0, 30, tzinfo=UTC)


def test_a_daily_slot_in_the_repeated_hour_runs_once() -> None:
    at_half_past_two = parse_schedule("30 2 * * *", "Europe/Berlin")
    # 02:30 happens twice on 25 October 2026 (first at UTC+2, then at UTC+1): it fires once.
    first = at_half_past_two.next_after(datetime(2026, 10, 24, 12, 0, tzinfo=BERLIN))
    assert first == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert at_half_past_two.next_after(first) == datetime(2026, 10, 26, 1, 30, tzinfo=UTC)


def test_half_hourly_slots_run_by_the_clock_through_the_repeated_hour() -> None:
    half_hourly = parse_schedule("*/30 * * * *", "Europe/Berlin")
    moment, slots = datetime(2026, 10, 25, 0, 10, tzinfo=UTC), []
    for _ in range(5):
        moment = half_hourly.next_after(moment)
        slots.append(moment)
    # 02:30+02, 02:00+01, 02:30+01, 03:00+01, 03:30+01: every real half hour, none twice.
    start = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert slots == [start + timedelta(minutes=30 * i) for i in range(5)]


@pytest.mark.parametrize("zone", ["Gone/Zone", "../etc/passwd"])
def test_a_stored_zone_the_zone_data_lacks_is_an_invalid_schedule(zone: str) -> None:
    """What the tick meets when a stored schedule's zone left the zone data (or the row was
    edited by hand): a refusal naming the field, not a crash of the tick."""
    with pytest.raises(InvalidSchedule) as refused:
        CronSchedule("0 9 * * *", zone).next_after(datetime(2026, 1, 1, tzinfo=UTC))
    assert refused.value.field == "timezone"
