"""Import an export file or folder: parse (runner.importers), normalize, bulk-upsert (db.ingest).

Bad records are counted and the first of them kept with their location and reason; the good
ones are stored whatever happens to their neighbours.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from db.ingest import ChannelKey, MessageIngestor
from runner.importers.detect import detect_format, iter_records
from runner.importers.records import ParsedMessage, ParseStats, RecordError
from runner.normalize import normalize_text

MAX_ERRORS_KEPT = 20


@dataclass
class ImportReport:
    path: str
    format: str
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


def default_channel_name(path: Path) -> str:
    """Formats that do not name their channel (IRC logs, CSV) get the file's stem."""
    return path.stem if path.is_file() else path.name


async def import_path(
    pool: asyncpg.Pool,
    path: Path,
    *,
    channel: str | None = None,
    server: str | None = None,
    max_message_chars: int = 200_000,
    on_record: Callable[[int], None] | None = None,
) -> ImportReport:
    """Stream `path` into the database. `channel`/`server` name the channel for records whose
    export does not say (and override a single-channel export's own name when given)."""
    export_format = detect_format(path)
    report = ImportReport(path=str(path), format=export_format)
    ingestor = MessageIngestor(pool, normalize_text)
    fallback = channel or default_channel_name(path)
    stats = ParseStats()
    records = iter_records(
        path, max_message_chars=max_message_chars, export_format=export_format, stats=stats
    )
    # Most exports hold one channel: build its key once, not once per message.
    last_fields: tuple[str | None, str, str | None] | None = None
    key = ChannelKey(server=None, channel=fallback)
    try:
        for record in records:
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
            fields = (
                server or record.server,
                channel or record.channel or fallback,
                None if channel else record.channel_external_id,
            )
            if fields != last_fields:
                last_fields = fields
                key = ChannelKey(
                    server=fields[0], channel=fields[1], channel_external_id=fields[2]
                )
            await ingestor.add(key, record)
            report.accepted += 1
            if on_record:
                on_record(1)
    except BaseException:
        # Let the batch already handed to the database finish, as it would have before writes
        # overlapped parsing; the error that stopped the import is the one to report.
        with contextlib.suppress(Exception):
            await ingestor.settle()
        raise
    await ingestor.flush()
    counts = ingestor.counts
    report.inserted, report.updated, report.unchanged = counts.inserted, counts.updated, counts.unchanged
    report.channels = dict(counts.channel_ids)
    report.skipped = dict(stats.skipped)
    return report
