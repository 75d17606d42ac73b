"""Plain IRC-style logs, including the Gitter dumps of the LiveChat corpus.

A message line is `[stamp] <nick> text`, where the stamp is `HH:MM`, `HH:MM:SS`,
`YYYY-MM-DD HH:MM:SS` or `YYYY-MM-DDTHH:MM:SS`; tolerated around it: a leading line number
(`12 [..]`, even `15[..]`), a doubled `[[`, and a mode sign on the nick (`<@op>` is `op`).
`[stamp] * nick does something` (an action) is a message by nick, kept as written.

Skipped, not errors (counted in `ParseStats`): separator lines (`-----`), system lines
(`=== x is now known as y`, `-!- x has joined`, `*** x has quit`, `* x has joined`, with or
without a stamp) and text before any message. Any other line continues the previous message
(multi-line pastes); trailing blank lines of a message are dropped.

Dates: a stamp without a date takes the date of the file name (`YYYY-MM-DD` anywhere in it, as
in `2010-08-17_18.raw.txt`), else `base_date`, else 1970-01-01 with a repair note on every
message; when the time of day goes backwards the day advances. A stamp with a date resets it.
Times have no zone: UTC.

No ids: `"irc-" + sha1(nick | timestamp | text)[:16]` (see `records.StableIds`), so appending
lines to a log keeps the ids of the messages before them.

The channel: a log whose system lines name its channel (`-!- x has joined #ubuntu`,
`=== x has left #ubuntu`, `Topic for #ubuntu`, `Now talking in #ubuntu`, `mode/#ubuntu`) in its
first 5,000 lines names its records' channel, without the leading `#` (`ubuntu`; reports show
`#ubuntu`); the most frequent spelling wins (IRC names ignore case). A log whose system lines
name several channels, or none, names none: the import names the channel after the file.
Messages are not read for it (a user pasting someone else's join line names nothing).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

from runner.importers.dates import describe
from runner.importers.records import (
    ParseOptions,
    ParseStats,
    Record,
    RecordError,
    StableIds,
    message_from_fields,
)
from runner.importers.textio import OverlongLine, TextLines, iter_lines

STAMPED = re.compile(
    r"(?:\d+ *)?\[{1,2}(?P<stamp>(?:(?P<date>\d{4}-\d{2}-\d{2})[T ])?"
    r"(?P<time>\d{1,2}:\d{2}(?::\d{2})?))\] ?(?P<rest>.*)"
)
_SAY = re.compile(r"<(?P<nick>[^>]*)> ?(?P<text>.*)")
_SYSTEM = re.compile(
    r"(?:={3}|-!-|\*{3}|-->|<--)(?:\s|$)"
    r"|\*\s+\S+\s+(?:has (?:joined|left|quit)|is now known as|sets mode|has changed the topic)\b"
)
_ACTION = re.compile(r"\*\s+(?P<nick>\S+)(?:\s.*)?")
_SEPARATOR = re.compile(r"-{5,}\s*")
_FILE_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_MODE_SIGNS = "@+%~&"
# The channel a system line names: joins and parts, topics, the "now talking" notice, modes.
_STATED_CHANNEL = re.compile(
    r"(?:has (?:joined|left)|[Tt]opic (?:for|of|on)|[Nn]ow talking (?:in|on)|mode/)\s*"
    r"(?P<channel>[#&][^\s,:;\x07]+)"
)
# Lines read from the start of a log for the channel its system lines name.
_CHANNEL_SCAN_LINES = 5_000


def file_date(path: Path) -> date | None:
    """The first valid YYYY-MM-DD in the file name."""
    for match in _FILE_DATE.finditer(path.name):
        try:
            return date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError:
            continue
    return None


@dataclass
class _Pending:
    line: int
    nick: str
    ts: datetime
    body: TextLines
    repairs: tuple[str, ...] = ()


@dataclass
class _Clock:
    """Turns stamps into datetimes: the current day advances when the time goes backwards.
    `note` is the repair every message dated by the 1970 fallback carries."""

    day: date
    fallback_note: tuple[str, ...]
    last: time | None = None

    def stamp(self, stamp_date: str | None, stamp_time: str) -> tuple[datetime, tuple[str, ...]]:
        parts = [int(part) for part in stamp_time.split(":")]
        of_day = time(parts[0], parts[1], parts[2] if len(parts) > 2 else 0)  # ValueError if bad
        if stamp_date is not None:
            self.day = date.fromisoformat(stamp_date)
            self.fallback_note = ()
        elif self.last is not None and of_day < self.last:
            self.day += timedelta(days=1)
        self.last = of_day
        return datetime.combine(self.day, of_day, tzinfo=UTC), self.fallback_note


def stated_channel(path: Path, options: ParseOptions) -> str | None:
    """The channel the log's own system lines name (see the module docstring), or None."""
    spellings: dict[str, Counter[str]] = {}
    for number, line in iter_lines(path, options.max_line_chars):
        if number > _CHANNEL_SCAN_LINES:
            break
        if isinstance(line, OverlongLine):
            continue
        stamped = STAMPED.fullmatch(line)
        rest = stamped["rest"].lstrip() if stamped else line
        found = _STATED_CHANNEL.search(rest) if _SYSTEM.match(rest) else None
        if found is not None:
            name = found["channel"]
            spellings.setdefault(name.casefold(), Counter())[name] += 1
    if len(spellings) != 1:
        return None
    ((name, _count),) = next(iter(spellings.values())).most_common(1)
    return name.removeprefix("#") or None


def _finish(
    pending: _Pending, ids: StableIds, options: ParseOptions, channel: str | None
) -> Record:
    location = f"line {pending.line}"
    if pending.body.dropped:
        return RecordError(
            location,
            f"message text is {pending.body.chars:,} characters, "
            f"over the limit of {options.max_message_chars:,}",
        )
    return message_from_fields(
        location=location,
        external_id=None,
        author=pending.nick,
        ts=pending.ts,
        text=pending.body.text(),
        max_message_chars=options.max_message_chars,
        repairs=pending.repairs,
        synthesized_id=ids,
        channel=channel,
    )


def _nick(raw: str) -> str:
    nick = raw.strip()
    return nick[1:] if len(nick) > 1 and nick[0] in _MODE_SIGNS else nick


def parse_irc(path: Path, options: ParseOptions, stats: ParseStats) -> Iterator[Record]:
    ids = StableIds("irc-")
    channel = stated_channel(path, options)
    start_day = file_date(path) or options.base_date
    note = () if start_day else ("no date in the file name and no base date: assumed 1970-01-01",)
    clock = _Clock(start_day or date(1970, 1, 1), note)
    pending: _Pending | None = None
    # A line that fails to parse as a message swallows its continuation lines with it.
    swallowing = False
    for number, line in iter_lines(path, options.max_line_chars):
        if isinstance(line, OverlongLine):
            yield RecordError(f"line {number}", line.reason)
            continue
        stamped = STAMPED.fullmatch(line)
        rest = stamped["rest"].lstrip() if stamped else line
        if _SEPARATOR.fullmatch(line) or _SYSTEM.match(rest):
            if pending is not None:
                yield _finish(pending, ids, options, channel)
                pending = None
            swallowing = False
            stats.skip("separator line" if _SEPARATOR.fullmatch(line) else "system line")
            continue
        if stamped is None:
            if pending is not None:
                pending.body.add(line)
            elif not swallowing and line.strip():
                stats.skip("text outside any message")
            continue
        if pending is not None:
            yield _finish(pending, ids, options, channel)
            pending = None
        swallowing = True
        try:
            ts, notes = clock.stamp(stamped["date"], stamped["time"])
        except ValueError:
            yield RecordError(
                f"line {number}", f"unparseable timestamp {describe(stamped['stamp'])}"
            )
            continue
        said = _SAY.fullmatch(rest)
        action = _ACTION.fullmatch(rest) if said is None else None
        if said is not None:
            nick, text = _nick(said["nick"]), said["text"] or ""
        elif action is not None:
            nick, text = _nick(action["nick"]), rest
        else:
            yield RecordError(f"line {number}", "missing author: no <nick> after the timestamp")
            continue
        pending = _Pending(number, nick, ts, TextLines(options.max_message_chars), notes)
        pending.body.add(text)
    if pending is not None:
        yield _finish(pending, ids, options, channel)
