"""Which export format a path holds, and `iter_records`, the one entry point over all of them.

Detection looks at content first (the first 64 KiB), the extension only to break ties:

- `slack`: a folder with `channels.json` (or `groups.json`, `mpims.json`, `dms.json`).
- `discord_json`: a JSON object opening with `"guild": {`, `"channel": {`, `"dateRange": {`
  or `"messages": [`, or a first line that is a whole object with a `messages` list.
- `qmsum`: a JSON object opening with one of a QMSum meeting file's keys (`"topic_list": [`,
  `"meeting_transcripts": [`...), or a first line that is a whole object with a
  `meeting_transcripts` list.
- `jsonl`: otherwise, a first non-blank line starting with `{` (or a `.jsonl`/`.ndjson` name).
- `discord_csv`: a first line with the `AuthorID`, `Author`, `Date` and `Content` columns.
- `discord_txt`: a `=====` header block with `Guild:`/`Channel:` lines.
- `irc`: any of the first 50 non-blank lines is `[time] <nick> text` or `[time] * nick ...`.
- `discord_txt` again: any of them is `[14-Aug-18 11:18 AM] Author` (a TXT export without
  its header; checked after IRC because `[2016-11-21 09:51:26] <nick> hi` has both shapes).

Anything else raises `UnusableInput` (a `ValueError`) saying what was seen (an HTML export, a
JSON array, an empty file, a folder that is not a Slack export, a FIFO or a device, a UTF-16
file...). Files are only ever opened through `inputs.open_regular`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path

from runner.importers.discord_csv import REQUIRED_COLUMNS, parse_discord_csv
from runner.importers.discord_json import parse_discord_json
from runner.importers.discord_txt import MESSAGE_START, parse_discord_txt
from runner.importers.inputs import UnusableInput, describe, encoding_problem, open_regular
from runner.importers.irc import STAMPED, parse_irc
from runner.importers.jsonguard import line_too_deep
from runner.importers.jsonl import parse_jsonl
from runner.importers.qmsum import QMSUM_KEYS, TRANSCRIPT_KEY, parse_qmsum
from runner.importers.records import DEFAULT_MAX_MESSAGE_CHARS, ParseOptions, ParseStats, Record
from runner.importers.slack import CONVERSATION_FILES, parse_slack

Parser = Callable[[Path, ParseOptions, ParseStats], Iterator[Record]]

PARSERS: dict[str, Parser] = {
    "jsonl": parse_jsonl,
    "discord_json": parse_discord_json,
    "discord_csv": parse_discord_csv,
    "discord_txt": parse_discord_txt,
    "slack": parse_slack,
    "irc": parse_irc,
    "qmsum": parse_qmsum,
}

_SNIFF_BYTES = 65536
# The head of a DiscordChatExporter JSON export: its first key holds an object or the list.
_DISCORD_JSON_START = re.compile(
    r'\{\s*"(?:guild|channel|dateRange)"\s*:\s*\{|\{\s*"messages"\s*:\s*\['
)
_QMSUM_START = re.compile(r'\{\s*"(?:' + "|".join(QMSUM_KEYS) + r')"\s*:\s*\[')
_IRC_MESSAGE = re.compile(r"\s*(?:<[^>]*>|\*\s+\S+)")


def _head_lines(path: Path) -> list[str]:
    with open_regular(path) as handle:
        head = handle.read(_SNIFF_BYTES)
    problem = encoding_problem(path, head)
    if problem is not None:
        raise UnusableInput(f"{path} {problem}")
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = text.splitlines()
    if len(head) == _SNIFF_BYTES and len(lines) > 1:
        lines.pop()  # possibly cut in the middle (a lone long first line is kept, cut)
    return lines


def _is_irc_line(line: str) -> bool:
    stamped = STAMPED.fullmatch(line)
    return stamped is not None and _IRC_MESSAGE.match(stamped["rest"]) is not None


def detect_format(path: Path) -> str:
    """One of `PARSERS`' keys; `ValueError` with the reason when the format is not recognized."""
    if path.is_dir():
        for name in CONVERSATION_FILES:
            problem = describe(path / name)
            if problem is None:
                return "slack"
            if problem != "does not exist":
                raise UnusableInput(f"{path / name} {problem}: refusing to read it")
        raise UnusableInput(f"{path} is a folder without channels.json: not a Slack export folder")
    special = describe(path)
    if special is not None:
        raise UnusableInput(f"{path} {special}")
    lines = _head_lines(path)
    body = [line for line in lines if line.strip()]
    if not body:
        raise UnusableInput(f"{path} is empty (or its first 64 KiB are blank)")
    first = body[0].lstrip()
    joined_head = "\n".join(lines[:200]).lstrip()
    suffix = path.suffix.lower()
    if first.startswith("{") or suffix in (".jsonl", ".ndjson"):
        try:
            whole_first = None if line_too_deep(first) else json.loads(first)
        except (ValueError, RecursionError):  # malformed, or a number over 4,300 digits
            whole_first = None
        if isinstance(whole_first, dict):  # a complete object on line 1: JSONL or a minified file
            if isinstance(whole_first.get(TRANSCRIPT_KEY), list):
                return "qmsum"
            return "discord_json" if isinstance(whole_first.get("messages"), list) else "jsonl"
        if _QMSUM_START.match(joined_head):
            return "qmsum"
        return "discord_json" if _DISCORD_JSON_START.match(joined_head) else "jsonl"
    if first.startswith("["):
        if first.startswith("[{") or (
            first == "[" and len(body) > 1 and body[1].lstrip().startswith("{")
        ):
            raise UnusableInput(
                f"{path} is a JSON array: a Slack day file? Import the whole Slack export folder"
            )
    if first.lower().startswith(("<!doctype html", "<html")):
        raise UnusableInput(f"{path} is HTML: export the channel as JSON, CSV or TXT instead")
    header = {cell.strip().strip('"') for cell in re.split(r"[;,]", first)}
    if all(column in header for column in REQUIRED_COLUMNS) and "AuthorID" in header:
        return "discord_csv"
    if suffix == ".csv":
        raise UnusableInput(
            f"{path} is a CSV without DiscordChatExporter's AuthorID;Author;Date;Content header"
        )
    sample = body[:50]
    if re.fullmatch(r"={5,}\s*", first) and any(
        line.startswith(("Guild: ", "Channel: ")) for line in sample
    ):
        return "discord_txt"
    # IRC before the bare `[date] Author` test: `[2016-11-21 09:51:26] <nick> hi` is both.
    if any(_is_irc_line(line) for line in sample):
        return "irc"
    if any(MESSAGE_START.fullmatch(line) for line in sample):
        return "discord_txt"
    raise UnusableInput(
        f"{path}: unrecognized format (not JSONL, DiscordChatExporter JSON/CSV/TXT, a Slack "
        "folder, or an IRC-style log with [time] <nick> lines)"
    )


def check_input(path: Path, export_format: str) -> None:
    """What `detect_format` refuses whatever the format (a special file, a missing path, a
    UTF-16 file, a file where a folder is needed), for a format given rather than detected."""
    if export_format == "slack":
        if not path.is_dir():
            what = describe(path) or "is a file"
            raise UnusableInput(f"{path} {what}: a Slack export is a folder")
        return
    problem = describe(path)
    if problem is not None:
        raise UnusableInput(f"{path} {problem}")
    _head_lines(path)


def iter_records(
    path: Path,
    *,
    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS,
    base_date: date | None = None,
    export_format: str | None = None,
    stats: ParseStats | None = None,
) -> Iterator[Record]:
    """Stream `path`'s messages and rejected records in file order, in constant memory.
    `export_format` skips detection; `stats`, when given, counts what was skipped on purpose."""
    chosen = export_format or detect_format(path)
    if chosen not in PARSERS:
        raise UnusableInput(f"unknown export format {chosen!r}; known: {', '.join(PARSERS)}")
    if export_format is not None:
        check_input(path, chosen)
    options = ParseOptions(max_message_chars=max_message_chars, base_date=base_date)
    return PARSERS[chosen](path, options, stats if stats is not None else ParseStats())
