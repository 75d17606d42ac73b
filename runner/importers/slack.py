"""A Slack export folder: `channels.json` (+ `groups.json`, `mpims.json`, `dms.json` when
present) lists the conversations, `users.json` names the users, and `<folder>/<YYYY-MM-DD>.json`
holds each day's messages as a JSON array (streamed with ijson, one day file after another).

- `ts` ("1503435956.000247") is the message id and its time; `thread_ts`, when it differs, is
  `reply_to`. The folder is the channel's name (a DM's id for `dms.json`); the channel's id is
  `channel_external_id`. The export does not name the workspace, so `server` is None.
- Author: the user's display name, else real name, else handle (from `users.json` or the
  message's `user_profile`), else the user id; bot posts use `username`/`bot_id`.
- Text: Slack escapes `&`, `<` and `>` as HTML entities in exports; those three are decoded.
  Mentions (`<@U123>`) stay as written.
- `files` become `{"kind": "file", ...}` and link unfurls in `attachments` become
  `{"kind": "unfurl", ...}` (selected fields only; the export repeats a lot of thumbnails).
- Channel joins, leaves, topic/purpose/name changes, archiving and pins are skipped and
  counted, not rejected. Day folders not listed in the metadata files are skipped.
- Metadata files are streamed like day files: an entry that is too deep or holds a number too
  big to read is rejected (`channels.json entry 3`), the others are used.

Safety: nothing outside the export folder is ever read, and nothing but regular files. The whole
plan (conversations, their folders, their day files) is checked before the first message is
yielded. A bad entry is rejected with where and why, like a bad record, and the rest is
imported: a channel whose name is not a plain folder name (`../outside`, `/etc`) or whose folder
resolves outside the export (a symbolic link), a day file that resolves outside it or is a FIFO,
a device, a socket or a folder (never opened). Only a metadata file that points outside the
export refuses the import whole (`UnusableInput`). Each file is opened through
`inputs.open_regular`, so a file swapped for a FIFO after the check cannot hang the import: it
is rejected too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runner.errors import InputError
from runner.importers.dates import describe, parse_slack_ts
from runner.importers.inputs import UnusableInput, inside, open_regular
from runner.importers.inputs import describe as describe_file
from runner.importers.jsonstream import BadItem, JsonStreamError, iter_items
from runner.importers.records import (
    ParseOptions,
    ParseStats,
    Record,
    RecordError,
    message_from_fields,
)

SKIPPED_SUBTYPES = frozenset(
    {
        "channel_join",
        "channel_leave",
        "channel_topic",
        "channel_purpose",
        "channel_name",
        "channel_archive",
        "channel_unarchive",
        "group_join",
        "group_leave",
        "group_topic",
        "group_purpose",
        "group_name",
        "group_archive",
        "group_unarchive",
        "pinned_item",
        "unpinned_item",
        "bot_add",
        "bot_remove",
        "tombstone",
    }
)
CONVERSATION_FILES = ("channels.json", "groups.json", "mpims.json", "dms.json")
_DAY_FILE = re.compile(r"\d{4}-\d{2}-\d{2}\.json")
_FILE_FIELDS = ("id", "name", "title", "mimetype", "filetype", "size", "url_private", "permalink")
_UNFURL_FIELDS = ("title", "title_link", "text", "fallback", "service_name", "from_url")


class MetadataError(InputError, ValueError):
    """A metadata file (`channels.json`, `users.json`...) that cannot be read."""

    def __init__(self, file_name: str, reason: str) -> None:
        super().__init__(reason)
        self.file_name = file_name


Conversation = tuple[str, str, str | None]  # (folder name, channel name, channel id)


def _load_list(folder: Path, root: Path, file_name: str) -> tuple[list[Any], list[RecordError]]:
    """A metadata file's entries (None in the place of a rejected one, so positions stay true)
    and its rejected entries (streamed: it may be big, or hostile). A missing file is empty; a
    malformed one raises `MetadataError`."""
    path = folder / file_name
    if not os.path.lexists(path):
        return [], []
    if not inside(root, path):
        raise UnusableInput(f"{path} points outside the export folder: refusing to read it")
    entries: list[Any] = []
    errors: list[RecordError] = []
    with open_regular(path) as raw:
        start = raw.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
        if not start.startswith(b"["):
            found = "nothing" if not start else f"{start[:1].decode('utf-8', 'replace')!r}"
            raise MetadataError(file_name, f"expected a JSON list, found {found} first")
        raw.seek(0)
        for item in iter_items(raw, "item"):
            if isinstance(item, JsonStreamError):
                raise MetadataError(file_name, f"malformed JSON ({item.detail})")
            if isinstance(item, BadItem):
                errors.append(RecordError(f"{file_name} entry {len(entries) + 1}", item.reason))
                item = None
            entries.append(item)
    return entries, errors


def _user_names(folder: Path, root: Path) -> tuple[dict[str, str], list[RecordError]]:
    names: dict[str, str] = {}
    users, errors = _load_list(folder, root, "users.json")
    for user in users:
        if isinstance(user, dict) and isinstance(user.get("id"), str):
            name = _profile_name(user.get("profile"), user)
            if name:
                names[user["id"]] = name
    return names, errors


def _profile_name(profile: Any, user: dict[str, Any]) -> str | None:
    profile = profile if isinstance(profile, dict) else {}
    for value in (
        profile.get("display_name"),
        profile.get("real_name"),
        user.get("real_name"),
        user.get("name"),
        profile.get("name"),
    ):
        if isinstance(value, str) and value.strip():
            return value
    return None


def _plain_name(name: str) -> bool:
    """Whether a channel name is one folder inside the export (no separator, not . or ..)."""
    return name not in ("", ".", "..") and not any(c in name for c in "/\\\x00")


def conversations(
    folder: Path, root: Path | None = None
) -> tuple[list[Conversation], list[RecordError]]:
    """Each conversation the metadata lists, and the metadata entries rejected: among them each
    whose name is not a plain folder name (it would be read outside the export)."""
    root = root or folder.resolve()
    found: list[Conversation] = []
    rejected: list[RecordError] = []
    for file_name in CONVERSATION_FILES:
        entries, errors = _load_list(folder, root, file_name)
        rejected.extend(errors)
        for number, entry in enumerate(entries, 1):
            if not isinstance(entry, dict):
                continue
            channel_id = entry.get("id") if isinstance(entry.get("id"), str) else None
            name = entry.get("name") if isinstance(entry.get("name"), str) else channel_id
            if not name:
                continue
            if not _plain_name(name):
                rejected.append(
                    RecordError(
                        f"{file_name} entry {number}",
                        f"names the channel {name[:80]!r}, which is not a folder name inside the "
                        "export: skipped, nothing outside the folder is read",
                    )
                )
                continue
            found.append((name, name, channel_id))
    return found, rejected


def _day_files(folder: Path, root: Path, name: str) -> tuple[list[Path], list[RecordError]]:
    """The day files of one channel's folder, each checked (inside the export, a regular file),
    and the rejected ones: the folder itself when it resolves outside the export, each day file
    that does or that is not a regular file (a FIFO is never opened)."""
    channel_folder = folder / name
    if not os.path.lexists(channel_folder):
        return [], []
    if not inside(root, channel_folder):
        return [], [
            RecordError(
                name, "the channel's folder points outside the export folder: skipped, not read"
            )
        ]
    if not channel_folder.is_dir():
        return [], []
    found: list[Path] = []
    rejected: list[RecordError] = []
    for day_file in sorted(channel_folder.iterdir()):
        if not _DAY_FILE.fullmatch(day_file.name):
            continue
        location = f"{name}/{day_file.name}"
        if not inside(root, day_file):
            rejected.append(
                RecordError(location, "points outside the export folder: skipped, not read")
            )
            continue
        problem = describe_file(day_file)
        if problem is not None:
            rejected.append(RecordError(location, f"{problem}, not a day file: skipped, not read"))
            continue
        found.append(day_file)
    return found, rejected


def _author(message: dict[str, Any], users: dict[str, str]) -> str | None:
    user = message.get("user")
    if isinstance(user, str) and user:
        return users.get(user) or _profile_name(message.get("user_profile"), {}) or user
    for key in ("username", "bot_id"):
        value = message.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _attachments(message: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for kind, key, fields in (
        ("file", "files", _FILE_FIELDS),
        ("unfurl", "attachments", _UNFURL_FIELDS),
    ):
        items = message.get(key)
        if isinstance(items, list):
            for item in items:
                if isinstance(item, dict):
                    found.append(
                        {"kind": kind, **{f: item[f] for f in fields if item.get(f) is not None}}
                    )
    return found


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def slack_message(
    message: Any,
    location: str,
    channel: Conversation,
    users: dict[str, str],
    options: ParseOptions,
    stats: ParseStats,
) -> Record | None:
    """One item of a day file to a record (None when it is a skipped event)."""
    if not isinstance(message, dict):
        return RecordError(location, f"expected a message object, got {type(message).__name__}")
    if message.get("type", "message") != "message":
        stats.skip(f"Slack {message.get('type')} event")
        return None
    subtype = message.get("subtype")
    if subtype in SKIPPED_SUBTYPES:
        stats.skip(f"Slack {subtype}")
        return None
    ts = message.get("ts")
    if ts is None:
        return RecordError(location, "missing message id (ts)")
    try:
        when = parse_slack_ts(ts)
    except ValueError:
        return RecordError(location, f"unparseable timestamp (ts) {describe(ts)}")
    thread = message.get("thread_ts")
    text = message.get("text")
    return message_from_fields(
        location=location,
        external_id=ts,
        author=_author(message, users),
        ts=when,
        text=_unescape(text) if isinstance(text, str) else text,
        reply_to=thread if isinstance(thread, str) and thread != ts else None,
        attachments=_attachments(message),
        channel=channel[1],
        channel_external_id=channel[2],
        max_message_chars=options.max_message_chars,
    )


def parse_slack(folder: Path, options: ParseOptions, stats: ParseStats) -> Iterator[Record]:
    root = folder.resolve()
    users: dict[str, str] = {}
    try:
        users, rejected = _user_names(folder, root)
    except MetadataError as error:
        rejected = [RecordError(error.file_name, f"{error}; authors are shown by user id")]
    try:
        listed, listing_errors = conversations(folder, root)
    except MetadataError as error:
        yield from rejected
        yield RecordError(error.file_name, f"{error}; nothing was imported")
        return
    # Every path is checked before the first record: an unsafe entry is rejected, not read.
    plan: list[tuple[Conversation, list[Path]]] = []
    unsafe: list[RecordError] = []
    for channel in listed:
        day_files, skipped = _day_files(folder, root, channel[0])
        plan.append((channel, day_files))
        unsafe.extend(skipped)
    yield from rejected
    yield from listing_errors
    yield from unsafe
    known = {name for name, _, _ in listed}
    for child in sorted(folder.iterdir()):
        if child.is_dir() and child.name not in known:
            stats.skip("folder not listed in channels.json")
    for channel, day_files in plan:
        for day_file in day_files:
            yield from _day_records(
                day_file, f"{channel[0]}/{day_file.name}", channel, users, options, stats
            )


def _day_records(
    day_file: Path,
    prefix: str,
    channel: Conversation,
    users: dict[str, str],
    options: ParseOptions,
    stats: ParseStats,
) -> Iterator[Record]:
    """The records of one day file; the file rejected whole when it stopped being a regular
    file since it was checked (swapped for a FIFO: never waited on)."""
    try:
        raw = open_regular(day_file, shown_as=prefix)
    except UnusableInput as unusable:
        yield RecordError(prefix, f"{unusable}; skipped")
        return
    with raw:
        number = 0
        for item in iter_items(raw, "item"):
            if isinstance(item, JsonStreamError):
                yield RecordError(f"{prefix} record {number + 1}", item.reason())
                break
            number += 1
            if isinstance(item, BadItem):
                yield RecordError(f"{prefix} record {number}", item.reason)
                continue
            record = slack_message(
                item, f"{prefix} record {number}", channel, users, options, stats
            )
            if record is not None:
                yield record
