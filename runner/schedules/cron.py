"""A cron expression in a time zone: the one place both are checked and the next slot is
computed. Pure: cronsim (Debian cron's semantics, DST included) and zoneinfo, no database.

Five fields (minute hour day-of-month month day-of-week), or six with seconds first
(`*/10 * * * * *`). Slots are wall-clock times in the zone, so `0 9 * * 1-5` in Europe/Berlin
stays at 09:00 local across DST. Like Debian's cron, a daily slot that falls into the hour
skipped in spring runs at the first valid minute after it, and one in the hour repeated in
autumn runs once; expressions finer than an hour run by the clock (every real minute).

Bounds: only real IANA zone names (not `localtime` or `Factory`, which the zone data also
lists: a slot would then depend on the machine that fires it), and `check_min_interval`
refuses an expression whose slots come closer than a minimum (a `* * * * * *` schedule is
86,400 firings a day).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from cronsim import CronSim, CronSimError

from runner.errors import InputError

MAX_CRON_CHARS = 100
MAX_TIMEZONE_CHARS = 64
CRON_FIELDS = "minute hour day-of-month month day-of-week"
# Names the zone data lists that are no zone of their own: `localtime` is whatever zone the
# machine is set to, `Factory` a placeholder ("-00"); `posixrules` is a rules template.
NOT_IANA_ZONES = frozenset({"localtime", "Factory", "posixrules"})
# Slots checked by `check_min_interval`: enough for several days of a 5-minute schedule, so a
# gap that happens every matching day, or across midnight, is seen.
INTERVAL_CHECK_SLOTS = 1_000


class InvalidSchedule(InputError, ValueError):
    """A cron expression or time zone that cannot schedule anything; `field` is the argument
    at fault ("cron" or "timezone") and the message says why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@cache
def _zone_names() -> frozenset[str]:
    """The IANA names the system's zone data (or the tzdata package) knows. Names are looked up
    in this set rather than handed to ZoneInfo, which would also try a path like "../x"."""
    return frozenset(available_timezones()) - NOT_IANA_ZONES


@dataclass(frozen=True)
class CronSchedule:
    """A checked cron expression (whitespace collapsed) and its zone."""

    cron: str
    timezone: str

    def next_after(self, moment: datetime) -> datetime:
        """The first slot strictly after `moment` (an aware datetime), in UTC. InvalidSchedule
        when there is none in the next 50 years (cronsim's horizon)."""
        if self.timezone in NOT_IANA_ZONES:  # stored before such names were refused
            raise InvalidSchedule("timezone", _not_a_zone(self.timezone))
        try:
            slots = CronSim(self.cron, moment.astimezone(ZoneInfo(self.timezone)))
        except (ZoneInfoNotFoundError, ValueError):  # a stored zone the zone data lacks
            raise InvalidSchedule("timezone", f"{self.timezone!r} is unknown here") from None
        except CronSimError as error:
            raise InvalidSchedule("cron", _cron_reason(self.cron, str(error))) from None
        limit = moment.astimezone(UTC)
        try:
            # Compared in UTC: two times of one zone compare by wall clock, fold ignored, so in
            # the autumn hour 02:30+01:00 would not count as after 02:40+02:00.
            while (slot := next(slots).astimezone(UTC)) <= limit:
                continue
        except StopIteration:
            raise InvalidSchedule("cron", f"{self.cron!r} matches no time in 50 years") from None
        return slot


def parse_schedule(cron: str, timezone_name: str) -> CronSchedule:
    """The schedule of `cron` in the IANA zone `timezone_name`; InvalidSchedule naming the field
    and why otherwise (an expression that can never match, such as 30 February, included)."""
    expression = " ".join(cron.split())
    if not expression:
        raise InvalidSchedule("cron", f"empty; expected 5 fields ({CRON_FIELDS})")
    if len(expression) > MAX_CRON_CHARS:
        raise InvalidSchedule("cron", f"longer than {MAX_CRON_CHARS} characters")
    name = timezone_name.strip()
    if name in NOT_IANA_ZONES:
        raise InvalidSchedule("timezone", _not_a_zone(name))
    if not name or len(name) > MAX_TIMEZONE_CHARS or name not in _zone_names():
        raise InvalidSchedule(
            "timezone",
            f"{name[:MAX_TIMEZONE_CHARS]!r} is not an IANA time zone name such as "
            "'Europe/Berlin' or 'UTC'",
        )
    schedule = CronSchedule(expression, name)
    schedule.next_after(datetime.now(UTC))  # parses it; a never matching one is refused
    return schedule


def check_min_interval(schedule: CronSchedule, minimum: timedelta, start: datetime) -> None:
    """InvalidSchedule naming `cron` when two consecutive slots among the next
    INTERVAL_CHECK_SLOTS after `start` (or the next 50 years) are closer than `minimum`."""
    previous: datetime | None = None
    moment = start
    for _ in range(INTERVAL_CHECK_SLOTS):
        try:
            slot = schedule.next_after(moment)
        except InvalidSchedule:  # no slot left within cronsim's horizon
            return
        if previous is not None and slot - previous < minimum:
            raise InvalidSchedule(
                "cron",
                (
                    f"{schedule.cron!r} has slots {_duration(slot - previous)} apart (at "
                    f"{previous.isoformat()} and {slot.isoformat()}); a schedule may fire at most "
                    f"every {_duration(minimum)} (DIGESTD_SCHEDULE_MIN_INTERVAL_SECONDS)"
                ),
            )
        previous = moment = slot


def earliest_next_slot(
    schedule: CronSchedule, fired_slot: datetime, now: datetime, minimum: timedelta
) -> datetime:
    """The slot after `fired_slot` that the tick moves a schedule to: its first slot after
    `now` that is also at least `minimum` after `fired_slot`. A schedule stored before the
    minimum (or under a lower one) fires no more often than it allows."""
    return schedule.next_after(max(now, fired_slot + minimum - timedelta(microseconds=1)))


def _duration(span: timedelta) -> str:
    seconds = span.total_seconds()
    if seconds < 60 or seconds % 60:
        return f"{seconds:g} second{'' if seconds == 1 else 's'}"
    return f"{seconds / 60:g} minute{'' if seconds == 60 else 's'}"


def _not_a_zone(name: str) -> str:
    return (
        f"{name!r} is not a real IANA time zone ('localtime' is whatever zone the machine that "
        "fires it is set to; 'Factory' and 'posixrules' are placeholders): name one such as "
        "'Europe/Berlin' or 'UTC'"
    )


def _cron_reason(expression: str, problem: str) -> str:
    """cronsim's one-line diagnosis ("Bad minute", "Wrong number of fields") with what was
    expected."""
    fields = len(expression.split())
    if problem.startswith("Wrong number of fields"):
        return (
            f"{fields} fields in {expression!r}; expected 5 ({CRON_FIELDS}) or 6 with seconds "
            "first (no @daily-style shortcuts)"
        )
    return f"{problem.lower()} field in {expression!r} (a value out of range or not cron syntax)"
