"""What every importer yields: a `ParsedMessage` or a `RecordError`, built by one function.

`message_from_fields` is the single gate a record passes on its way out of any parser (and out
of the GraphQL `ingestMessages` mutation): it checks the id, author, timestamp and size, and
repairs what Postgres could not store or what would poison later stages:

- NUL characters are removed (Postgres `text` cannot hold them).
- Invalid surrogates (lone UTF-16 halves, e.g. from a JSON `"\\ud800"`), bytes that were not
  valid UTF-8 (read with `surrogateescape`, so they arrive as U+DC80..U+DCFF) and the
  `INVALID_MARK` the streaming JSON reader puts in their place become U+FFFD. (A genuine
  U+FDD0 in the input, a noncharacter that no text should hold, is replaced the same way.)

Every repair is noted on the record (`repairs`), so the import can report it. Text is otherwise
kept raw: normalization (`runner.grounding.normalize`) is the caller's step.

Formats without message ids get stable synthetic ids from `StableIds` (see its docstring).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

# U+FDD0 is a Unicode noncharacter, reserved for exactly this kind of internal use: the JSON
# stream filter (`jsonstream`) writes it where the file held an invalid byte or a lone surrogate
# escape, because the fast C JSON parser would otherwise turn those into a silent "?".
INVALID_MARK = "\ufdd0"

_INVALID = re.compile("[\ud800-\udfff\ufdd0]")

DEFAULT_MAX_MESSAGE_CHARS = 200_000
MAX_ATTACHMENT_DEPTH = 64  # as jsonguard.MAX_JSON_DEPTH (not imported: this module is the base)


@dataclass(frozen=True)
class ParsedMessage:
    """One accepted message. `text` is raw (repaired, not normalized); `ts` is aware, in UTC."""

    location: str  # "line 12", "record 5", "general/2020-01-02.json record 3"
    channel: str | None  # channel named by the export itself; None: the caller's --channel
    server: str | None  # guild/workspace name when the export says it
    channel_external_id: str | None
    external_id: str  # always a string
    author: str
    ts: datetime
    text: str
    reply_to: str | None
    attachments: list[dict[str, Any]]  # attachments, embeds and files as JSON-able dicts
    repairs: tuple[str, ...] = ()  # e.g. ("removed 3 NUL characters from text",)


@dataclass(frozen=True)
class RecordError:
    """A rejected record: where it is in the input and why it was rejected."""

    location: str
    reason: str


Record = ParsedMessage | RecordError


@dataclass
class ParseStats:
    """Optional tally a caller can pass to `iter_records`: what was skipped on purpose (system
    lines, join events, separators), by reason. Skips are neither messages nor errors."""

    skipped: Counter[str] = field(default_factory=Counter)

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1


@dataclass(frozen=True)
class ParseOptions:
    """The knobs every format parser takes."""

    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS
    base_date: date | None = None  # date for logs whose lines carry only a time of day

    @property
    def max_line_chars(self) -> int:
        """Longest physical line a line-based parser reads whole. A record may legitimately be
        several times its text (JSON escapes, attachments), and a 5 MB message must still be read
        to be rejected with its real size; the cap only stops a pathological endless line."""
        return max(16 * 1024 * 1024, 8 * self.max_message_chars)


class StableIds:
    """Synthetic message ids for exports that have none (Discord CSV/TXT, IRC and Gitter logs).

    The id is `PREFIX + sha1(author_key | ts ISO | text)[:16]`, so it depends only on the message
    itself, never on its position: re-importing a later, longer export of the same log gives the
    earlier messages the same ids, and the upsert leaves them alone. Identical messages (same
    author, timestamp and text; typical for minute-resolution logs) get `-2`, `-3`... suffixes in
    file order. Duplicates are counted within a run of equal timestamps only, so memory stays
    constant however long the file; chat exports are chronological, and in the rare unsorted
    file two identical messages far apart share an id and collapse into one row, losing nothing
    but the repeat.
    """

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._run_ts: datetime | None = None
        self._seen: Counter[str] = Counter()

    def assign(self, author_key: str, ts: datetime, text: str) -> str:
        stamp = ts.isoformat()
        # Callers pass repaired text, but never let a stray surrogate crash the hash.
        key = f"{author_key}|{stamp}|{text}".encode("utf-8", "surrogatepass")
        digest = hashlib.sha1(key).hexdigest()[:16]
        if ts != self._run_ts:
            self._run_ts = ts
            self._seen.clear()
        self._seen[digest] += 1
        repeat = self._seen[digest]
        return f"{self._prefix}{digest}" if repeat == 1 else f"{self._prefix}{digest}-{repeat}"


def clean_text(value: str, what: str, repairs: list[str]) -> str:
    """`value` without NULs and invalid characters; each repair is appended to `repairs`."""
    if "\x00" in value:
        count = value.count("\x00")
        value = value.replace("\x00", "")
        repairs.append(f"removed {count} NUL character{'s' * (count != 1)} from {what}")
    if _INVALID.search(value):
        value, count = _INVALID.subn("\ufffd", value)
        repairs.append(
            f"replaced {count} invalid surrogate{'s' * (count != 1)} or undecodable "
            f"byte{'s' * (count != 1)} in {what} with U+FFFD"
        )
    return value


def clean_json(value: Any, what: str, repairs: list[str]) -> Any:
    """A strict-JSON value: every string cleaned like `clean_text` (keys too), NaN/Infinity
    replaced by null."""
    if isinstance(value, str):
        return clean_text(value, what, repairs)
    if isinstance(value, dict):
        return {
            clean_text(str(k), what, repairs): clean_json(v, what, repairs)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [clean_json(item, what, repairs) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        # Python's json reads NaN/Infinity, but jsonb (and strict JSON) has no such numbers.
        repairs.append(f"replaced a non-finite number ({value}) in {what} with null")
        return None
    return value


def _optional_id(value: object) -> str | None:
    """An optional id field as a string: ints become strings, empty becomes None."""
    if value is None or isinstance(value, bool):
        return None
    text = str(value) if isinstance(value, int | str) else None
    return text or None


def _deeper_than(value: object, limit: int) -> bool:
    """Whether a JSON-like value nests deeper than `limit` (iterative: never recurses)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _as_attachments(value: object) -> list[dict[str, Any]] | str:
    """The attachments list, or the reason it is not one."""
    if value is None:
        return []
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, list | tuple) and all(isinstance(item, dict) for item in value):
        # `clean_json` and `json.dumps` recurse: bound the depth before either sees it (the
        # importers' JSON guard already does; `ingestMessages` values come straight here).
        if value and _deeper_than(value, MAX_ATTACHMENT_DEPTH):
            return f"attachments nested deeper than {MAX_ATTACHMENT_DEPTH} levels"
        return list(value)
    return "attachments must be a list of JSON objects"


def message_from_fields(
    *,
    location: str,
    external_id: object,
    author: object,
    ts: object,
    text: object,
    reply_to: object = None,
    attachments: object = None,
    channel: str | None = None,
    server: str | None = None,
    channel_external_id: object = None,
    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS,
    repairs: tuple[str, ...] | list[str] = (),
    synthesized_id: StableIds | None = None,
    id_author_key: str | None = None,
) -> ParsedMessage | RecordError:
    """Check and repair one record's fields. With `synthesized_id`, `external_id` is ignored and
    the id is derived from (`id_author_key` or author, ts, text) after repairs."""
    if not isinstance(text, str):
        if text is not None:
            return RecordError(location, f"text must be a string, not {type(text).__name__}")
        text = ""
    if len(text) > max_message_chars:
        return RecordError(
            location,
            f"message text is {len(text):,} characters, over the limit of {max_message_chars:,}",
        )
    if synthesized_id is None:
        if isinstance(external_id, bool) or not isinstance(external_id, str | int):
            if external_id is None:
                return RecordError(location, "missing message id")
            return RecordError(
                location, f"message id must be a string, not {type(external_id).__name__}"
            )
        external_id = str(external_id)
        if not external_id.strip():
            return RecordError(location, "missing message id")
    if not isinstance(author, str) or not author.strip():
        return RecordError(location, "missing author")
    if not isinstance(ts, datetime):
        return RecordError(location, "missing timestamp")
    # Naive timestamps come from exports that carry no zone (documented per format): UTC.
    ts = ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
    found = _as_attachments(attachments)
    if isinstance(found, str):
        return RecordError(location, found)

    notes = list(repairs)
    text = clean_text(text, "text", notes)
    author = clean_text(author, "author", notes)
    if not author.strip():
        return RecordError(location, "missing author")
    if synthesized_id is not None:
        key = clean_text(id_author_key, "author id", notes) if id_author_key else author
        message_id = synthesized_id.assign(key, ts, text)
    else:
        message_id = clean_text(str(external_id), "message id", notes)
        if not message_id.strip():
            return RecordError(location, "missing message id")
    reply = _optional_id(reply_to)
    channel_id = _optional_id(channel_external_id)
    return ParsedMessage(
        location=location,
        channel=clean_text(channel, "channel", notes) if channel else None,
        server=clean_text(server, "server", notes) if server else None,
        channel_external_id=clean_text(channel_id, "channel id", notes) if channel_id else None,
        external_id=message_id,
        author=author,
        ts=ts,
        text=text,
        reply_to=clean_text(reply, "reply_to", notes) if reply else None,
        attachments=clean_json(found, "attachments", notes) if found else [],
        repairs=tuple(notes),
    )
