"""DiscordChatExporter CSV: `AuthorID;Author;Date;Content;Attachments;Reactions` (older exports,
`;`-separated with a trailing `;`) or the same columns `,`-separated (newer exports).

- Dates look like "14-Aug-18 11:18 AM" (or ISO in newer exports). The old format has no time
  zone at all: it is taken as UTC (DiscordChatExporter wrote the exporting machine's local time,
  which the file does not record).
- The export has no message ids, so each message gets a stable synthetic id:
  `"csv-" + sha1(AuthorID | timestamp | text)[:16]`, with `-2`, `-3`... for identical repeats in
  the same minute (see `records.StableIds`). A later export covering more messages gives the
  earlier ones the same ids, so re-importing it only adds the new ones.
- `Attachments` is a comma-separated list of URLs; each becomes `{"kind": "attachment", "url"}`.
  Reactions are not kept.
- Quoted fields keep their newlines (code blocks survive byte for byte). A CSV that cannot be
  resynchronized (a field over the size cap) stops with an error after the records before it.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from runner.importers.dates import describe, parse_discord_date
from runner.importers.records import (
    ParseOptions,
    ParseStats,
    Record,
    RecordError,
    StableIds,
    message_from_fields,
)
from runner.importers.textio import open_text

REQUIRED_COLUMNS = ("Author", "Date", "Content")


def _delimiter(header_line: str) -> str:
    return ";" if header_line.count(";") > header_line.count(",") else ","


def _attachments(value: str) -> list[dict[str, str]]:
    return [{"kind": "attachment", "url": url.strip()} for url in value.split(",") if url.strip()]


def parse_discord_csv(path: Path, options: ParseOptions, stats: ParseStats) -> Iterator[Record]:
    # The csv module's field cap is process-wide; raise it (never lower it) so that an oversized
    # message is read and rejected with its size: after a cap error the reader cannot resync.
    csv.field_size_limit(max(csv.field_size_limit(), options.max_line_chars))
    ids = StableIds("csv-")
    with open_text(path, newline="") as handle:
        header_line = handle.readline()
        delimiter = _delimiter(header_line)
        header = next(csv.reader([header_line], delimiter=delimiter), [])
        columns = {name.strip(): index for index, name in enumerate(header) if name.strip()}
        missing = [name for name in REQUIRED_COLUMNS if name not in columns]
        if missing:
            yield RecordError(
                "line 1", f"not a DiscordChatExporter CSV header: no {', '.join(missing)} column"
            )
            return
        reader = csv.reader(handle, delimiter=delimiter)
        number = 0
        previous_line = 1
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                yield RecordError(
                    f"record {number + 1} (line {previous_line + 1})",
                    f"unreadable CSV ({error}); the {number:,} records before it were kept, "
                    "the rest of the file was not read",
                )
                return
            number += 1
            location = f"record {number} (line {previous_line + 1})"
            previous_line = reader.line_num + 1  # + the header line read before the reader
            if not any(cell.strip() for cell in row):
                stats.skip("blank CSV row")
                continue
            yield _row_record(row, columns, location, ids, options)


def _row_record(
    row: list[str], columns: dict[str, int], location: str, ids: StableIds, options: ParseOptions
) -> Record:
    def cell(name: str) -> str | None:
        index = columns.get(name)
        return row[index] if index is not None and index < len(row) else None

    if len(row) < len(columns):
        return RecordError(location, f"expected {len(columns)} columns, found {len(row)}")
    date = cell("Date") or ""
    if not date.strip():
        return RecordError(location, "missing timestamp")
    try:
        ts = parse_discord_date(date)
    except ValueError:
        return RecordError(location, f"unparseable timestamp {describe(date)}")
    author = cell("Author")
    return message_from_fields(
        location=location,
        external_id=None,
        author=author,
        ts=ts,
        text=cell("Content") or "",
        attachments=_attachments(cell("Attachments") or ""),
        max_message_chars=options.max_message_chars,
        synthesized_id=ids,
        id_author_key=cell("AuthorID") or author,
    )
