"""Import an export file or folder: parse (runner.importers), normalize, bulk-upsert (db.ingest).

Bad records are counted and the first of them kept with their location and reason; the good
ones are stored whatever happens to their neighbours.

When the import cannot go on (an unusable input found mid-way, an unexpected parser failure, the
database going away), every good row already parsed is still written when the database allows
it (`MessageIngestor.flush`), and `ImportStopped` says what was stored and why it stopped, so the
caller can print one line instead of a traceback. A re-run of the same import is always safe: it
only adds or updates what is missing.

Channel and server names are shown on one line everywhere (runner.core.display_names): the ones an
export or a file's name gives are normalized to one line; the ones the caller typed (`channel`,
`server`) are refused with the reason when they are not one line already.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import asyncpg

from db.ingest import ChannelKey, MessageIngestor
from runner.core.display_names import clean_name, name_problem
from runner.errors import DigestdError
from runner.grounding.normalize import normalize_text
from runner.importers.detect import check_input, detect_format, iter_records
from runner.importers.inputs import UnusableInput
from runner.importers.records import ParsedMessage, ParseStats, Record, RecordError

MAX_ERRORS_KEPT = 20
# Records parsed per trip to a worker thread when parsing is offloaded.
OFFLOAD_BATCH = 500


@dataclass
class ImportReport:
    path: str
    format: str
    format_detected: bool = True  # False: the caller named the format (--format)
    accepted: int = 0
    rejected: int = 0
    repaired: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    channels: dict[str, int] = field(default_factory=dict)
    # Lines skipped on purpose (system lines, joins, separators), by reason: not messages.
    skipped: dict[str, int] = field(default_factory=dict)
    errors: list[RecordError] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)

    @property
    def stored(self) -> int:
        """Messages the database holds from this import (new, updated or already there)."""
        return self.inserted + self.updated + self.unchanged


class ImportStopped(DigestdError):
    """The import stopped before the end of its input. `report` counts what was stored;
    `stage` is "parse" (reading the input) or "store" (the database); `cause` is the error."""

    def __init__(self, report: ImportReport, stage: str, cause: BaseException) -> None:
        super().__init__(f"import stopped while {'reading' if stage == 'parse' else 'storing'}")
        self.report = report
        self.stage = stage
        self.cause = cause


# Suffixes of a log's file name that say what the file is, not which channel it holds
# (`2010-08-17_18.raw.txt`, `ubuntu.log`, `irc.log.1` once `.1` is gone as the extension).
_LOG_SUFFIXES = (".raw", ".txt", ".log")


def default_channel_name(path: Path) -> str:
    """Formats that do not name their channel (IRC logs without a join or topic line, CSV) get
    the file's name without its extension and any `.raw`/`.txt`/`.log` before it
    (`2010-08-17_18.raw.txt` is `2010-08-17_18`), on one line (a file name may hold a line
    break); a folder its name; `import` when nothing printable is left."""
    if not path.is_file():
        return clean_name(path.name) or "import"
    name = path.stem
    while (suffix := name[name.rfind(".") :].lower()) in _LOG_SUFFIXES and len(name) > len(suffix):
        name = name[: -len(suffix)]
    return clean_name(name) or "import"


def _checked_names(channel: str | None, server: str | None) -> None:
    """Refuse a typed channel or server name that is not one printable line (UnusableInput)."""
    for option, value in (("channel", channel), ("server", server)):
        problem = None if value is None else name_problem(value)
        if problem:
            raise UnusableInput(f"the {option} name {problem}")


async def import_path(
    pool: asyncpg.Pool,
    path: Path,
    *,
    channel: str | None = None,
    server: str | None = None,
    max_message_chars: int = 200_000,
    on_record: Callable[[int], None] | None = None,
    export_format: str | None = None,
    offload_parsing: bool = False,
    base_date: date | None = None,
) -> ImportReport:
    """Stream `path` into the database. `channel`/`server` name the channel for records whose
    export does not say (and override a single-channel export's own name when given);
    `export_format` skips detection. An input unusable from the start raises
    `UnusableInput`; a stop after that raises `ImportStopped`. `offload_parsing` parses in a
    worker thread, a batch at a time, so a server's event loop keeps answering meanwhile.
    `base_date`: the day of a log whose lines carry only a time of day and whose file name
    names none (an IRC log, a meeting transcript)."""
    _checked_names(channel, server)
    channel = channel.strip() if channel else channel
    server = server.strip() if server else server
    if export_format is None:
        chosen = detect_format(path)
    else:
        check_input(path, export_format)
        chosen = export_format
    report = ImportReport(path=str(path), format=chosen, format_detected=export_format is None)
    ingestor = MessageIngestor(pool, normalize_text)
    fallback = channel or default_channel_name(path)
    stats = ParseStats()
    records = iter_records(
        path,
        max_message_chars=max_message_chars,
        base_date=base_date,
        export_format=chosen,
        stats=stats,
    )
    # Most exports hold one channel: build its key once, not once per message.
    last_fields: tuple[str | None, str | None, str | None] | None = None
    key = ChannelKey(server=None, channel=fallback)
    storing = False  # which side failed: the parser (False) or the database (True)
    try:
        async for record in _stream(records, offload_parsing):
            if isinstance(record, RecordError):
                report.rejected += 1
                if len(report.errors) < MAX_ERRORS_KEPT:
                    report.errors.append(record)
                continue
            assert isinstance(record, ParsedMessage)
            if record.repairs:
                report.repaired += 1
                if len(report.repairs) < MAX_ERRORS_KEPT:
                    report.repairs.append(f"{record.location}: {'; '.join(record.repairs)}")
            fields = (record.server, record.channel, record.channel_external_id)
            if fields != last_fields:
                last_fields = fields
                key = ChannelKey(
                    server=server or clean_name(record.server or "") or None,
                    channel=channel or clean_name(record.channel or "") or fallback,
                    channel_external_id=None if channel else record.channel_external_id,
                )
            storing = True
            await ingestor.add(key, record)
            storing = False
            report.accepted += 1
            if on_record:
                on_record(1)
        storing = True
        await ingestor.flush()
    except BaseException as error:
        await _save_what_was_parsed(ingestor, database_failed=storing)
        _fill_counts(report, ingestor, stats)
        if isinstance(error, Exception):
            raise ImportStopped(report, "store" if storing else "parse", error) from error
        raise  # KeyboardInterrupt, cancellation: the good rows are saved; stop as asked
    _fill_counts(report, ingestor, stats)
    return report


async def _stream(records: Iterator[Record], offload: bool) -> AsyncIterator[Record]:
    """The records, parsed here or (offload) in a worker thread, OFFLOAD_BATCH at a time; one
    thread at a time runs the parser, so its generator is never entered twice at once."""
    if not offload:
        for record in records:
            yield record
        return
    while True:
        batch, failure = await asyncio.to_thread(_take, records, OFFLOAD_BATCH)
        for record in batch:
            yield record
        if failure is not None:
            raise failure  # after the records parsed before it: they are good
        if len(batch) < OFFLOAD_BATCH:
            return


def _take(records: Iterator[Record], count: int) -> tuple[list[Record], Exception | None]:
    """Up to `count` records, and the parser's failure if it failed after them."""
    batch: list[Record] = []
    try:
        for record in records:
            batch.append(record)
            if len(batch) == count:
                break
    except Exception as failure:  # noqa: BLE001 - handed back and raised after the batch
        return batch, failure
    return batch, None


async def _save_what_was_parsed(ingestor: MessageIngestor, *, database_failed: bool) -> None:
    """After a stop: when the parser failed, write the rows parsed before it (they are good);
    when the database failed, only wait for the write in flight (the next one would fail too,
    and writing a later batch after a failed one could reorder repeated ids)."""
    with contextlib.suppress(Exception):
        if database_failed:
            await ingestor.settle()
        else:
            await ingestor.flush()


def _fill_counts(report: ImportReport, ingestor: MessageIngestor, stats: ParseStats) -> None:
    counts = ingestor.counts
    report.inserted, report.updated, report.unchanged = (
        counts.inserted,
        counts.updated,
        counts.unchanged,
    )
    report.channels = dict(counts.channel_ids)
    report.skipped = dict(stats.skipped)
