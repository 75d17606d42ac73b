"""DiscordChatExporter plain text.

```
==============================================================
Guild: Komodo
Channel: cc-general
Topic: ...
==============================================================

[14-Aug-18 11:18 AM] SHossain#0007
message text, any number of lines
                                      (one blank line between messages)
{Attachments}
https://cdn.discordapp.com/...
```

- The header block gives `server` (Guild) and `channel` (Channel, taken as written). After it a
  `=====` line is message text, except the footer block ending the file ("Exported 100
  message(s)" between `=====` lines), which is dropped.
- A message starts at a `[date] Author` line whose date has DiscordChatExporter's shape (see
  `dates.DISCORD_DATE_SHAPE`); the date has no zone and is taken as UTC. A line with that shape
  but an impossible date is a rejected record (its text lines go with it).
- After the text, blocks opened by a line `{Attachments}`, `{Embed}` or `{Reactions}` (after a
  blank line) are not text: attachment URLs become `{"kind": "attachment", "url"}`, an embed
  becomes `{"kind": "embed", "lines": [...]}`, reactions are dropped. So the text equals the
  `Content` cell of the same export in CSV.
- No ids: `"txt-" + sha1(author | timestamp | text)[:16]` (see `records.StableIds`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.importers.dates import DISCORD_DATE_SHAPE, describe, parse_discord_date
from runner.importers.records import (
    ParseOptions,
    ParseStats,
    Record,
    RecordError,
    StableIds,
    message_from_fields,
)
from runner.importers.textio import OverlongLine, TextLines, iter_lines

MESSAGE_START = re.compile(rf"\[(?P<date>{DISCORD_DATE_SHAPE.pattern})\](?: (?P<author>.*))?")
_RULE = re.compile(r"={5,}\s*")
_FOOTER = re.compile(r"Exported [\d,]+ message\(s\)\s*")
_BLOCKS = {"{Attachments}": "attachment", "{Embed}": "embed", "{Reactions}": "reactions"}


@dataclass
class _Pending:
    """The message being read: its first line's number, header fields and text lines so far."""

    line: int
    date: str
    author: str
    body: TextLines


def _split_blocks(lines: list[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """The text lines, and the attachment/embed blocks that follow them."""
    while lines and not lines[-1].strip():
        lines.pop()
    # The last message of newer exports ends with the footer: =====, "Exported N message(s)", =====.
    if len(lines) >= 3 and _RULE.fullmatch(lines[-1]) and _FOOTER.fullmatch(lines[-2]):
        if _RULE.fullmatch(lines[-3]):
            del lines[-3:]
            while lines and not lines[-1].strip():
                lines.pop()
    text_end = len(lines)
    for index, line in enumerate(lines):
        if line in _BLOCKS and (index == 0 or not lines[index - 1].strip()):
            text_end = index - 1 if index > 0 else 0
            break
    attachments: list[dict[str, Any]] = []
    kind = ""
    embed: list[str] = []
    for line in lines[text_end:]:
        if line in _BLOCKS:
            if embed:
                attachments.append({"kind": "embed", "lines": embed})
                embed = []
            kind = _BLOCKS[line]
        elif not line.strip():
            if embed:
                attachments.append({"kind": "embed", "lines": embed})
                embed = []
        elif kind == "attachment":
            attachments.append({"kind": "attachment", "url": line.strip()})
        elif kind == "embed":
            embed.append(line)
    if embed:
        attachments.append({"kind": "embed", "lines": embed})
    return lines[:text_end], attachments


def _finish(
    pending: _Pending, ids: StableIds, head: dict[str, str], options: ParseOptions
) -> Record:
    location = f"line {pending.line}"
    if pending.body.dropped:
        return RecordError(
            location,
            f"message text is {pending.body.chars:,} characters, "
            f"over the limit of {options.max_message_chars:,}",
        )
    try:
        ts = parse_discord_date(pending.date)
    except ValueError:
        return RecordError(location, f"unparseable timestamp {describe(pending.date)}")
    lines, attachments = _split_blocks(pending.body.lines)
    return message_from_fields(
        location=location,
        external_id=None,
        author=pending.author.strip(),
        ts=ts,
        text="\n".join(lines),
        attachments=attachments,
        channel=head.get("Channel"),
        server=head.get("Guild"),
        max_message_chars=options.max_message_chars,
        synthesized_id=ids,
    )


def parse_discord_txt(path: Path, options: ParseOptions, stats: ParseStats) -> Iterator[Record]:
    ids = StableIds("txt-")
    head: dict[str, str] = {}
    in_header = False  # between the ===== lines that open the file
    keep_chars = options.max_message_chars + 65536  # room for the attachment/embed blocks
    pending: _Pending | None = None
    for number, line in iter_lines(path, options.max_line_chars):
        if isinstance(line, OverlongLine):
            yield RecordError(f"line {number}", line.reason)
            continue
        if pending is None and _RULE.fullmatch(line):
            in_header = not in_header
            continue
        if in_header:
            key, _, value = line.partition(": ")
            if key in ("Guild", "Channel") and value.strip():
                head[key] = value.strip()
            continue
        start = MESSAGE_START.fullmatch(line)
        if start is not None:
            if pending is not None:
                yield _finish(pending, ids, head, options)
            pending = _Pending(number, start["date"], start["author"] or "", TextLines(keep_chars))
        elif pending is not None:
            # After the header a ===== line is text (a markdown heading, say); only the footer
            # block at the very end of the file is cut off, by `_split_blocks`.
            pending.body.add(line)
        elif line.strip():
            stats.skip("text outside any message")
    if pending is not None:
        yield _finish(pending, ids, head, options)
