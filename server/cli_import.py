"""`digestd import PATH`: stream an export into PostgreSQL and report what happened in a few
lines, with the exit status a script can act on (0 something accepted; 1 nothing accepted, or
the database went away part-way; 2 an input that cannot be imported)."""

from __future__ import annotations

import logging
import sys
import time
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schema.types.ids import CHANNEL, global_id
from server.cli_json import emit, refuse
from server.runtime import Runtime

if TYPE_CHECKING:
    from runner.importers.ingest import ImportReport, ImportStopped

logger = logging.getLogger("digestd")


async def import_and_report(
    runtime: Runtime,
    path: Path,
    channel: str | None,
    server: str | None,
    export_format: str | None = None,
    *,
    as_json: bool = False,
    base_date: date | None = None,
) -> int:
    """Exit status: 0 when at least one message was accepted, 1 when none was (or the import
    stopped part-way, e.g. the database went away), 2 for an input that cannot be imported."""
    from tqdm import tqdm

    from runner.importers.ingest import ImportStopped, import_path
    from runner.importers.inputs import UnusableInput

    started = time.perf_counter()
    try:
        with tqdm(unit=" msg", disable=not sys.stderr.isatty(), desc=path.name) as bar:
            report = await import_path(
                runtime.pool,
                path,
                channel=channel,
                server=server,
                max_message_chars=runtime.settings.digestd_max_message_chars,
                on_record=bar.update,
                export_format=export_format,
                base_date=base_date,
            )
    except UnusableInput as error:
        return refuse("digestd: error", str(error), as_json)
    except ImportStopped as stopped:
        code = _report_stop(path, stopped)
        if as_json:
            emit(
                {
                    "error": f"the import stopped ({type(stopped.cause).__name__})",
                    "stored": stopped.report.stored,
                }
            )
        return code
    elapsed = time.perf_counter() - started
    rate = report.accepted / elapsed if elapsed > 0 else 0.0
    if as_json:
        emit(_report_json(path, report, elapsed))
        return 0 if report.accepted else 1
    print(
        f"imported {path} ({report.format}): {report.accepted} accepted, {report.rejected} "
        f"rejected, {report.repaired} repaired; {report.inserted} new, {report.updated} updated, "
        f"{report.unchanged} unchanged; {elapsed:.2f}s ({rate:,.0f} msg/s)"
    )
    repeated = report.accepted - (report.inserted + report.updated + report.unchanged)
    if repeated > 0:
        print(f"  {repeated} records repeated a message id seen earlier in the file: kept once")
    if report.skipped:
        skipped = ", ".join(f"{count} {reason}" for reason, count in sorted(report.skipped.items()))
        print(f"  skipped on purpose: {skipped}")
    for name, channel_id in sorted(report.channels.items()):
        print(f"  channel {name!r}: id {channel_id}")
    for rejected in report.errors:
        print(f"  rejected {rejected.location}: {rejected.reason}")
    for repair in report.repairs[:5]:
        print(f"  repaired {repair}")
    if report.accepted == 0:
        from runner.importers import PARSERS

        if report.format_detected:
            how, hint = "detected from its content", "if it is in another format, pass --format"
        else:
            how, hint = "as --format said", f"if it is not {report.format}, pass the right --format"
        print(
            f"digestd: error: nothing imported from {path}: read as {report.format} ({how}), "
            f"0 records accepted, {report.rejected:,} rejected; {hint} ({', '.join(PARSERS)})",
            file=sys.stderr,
        )
        return 1
    return 0


def _report_json(path: Path, report: ImportReport, seconds: float) -> dict[str, Any]:
    return {
        "path": str(path),
        "format": report.format,
        "accepted": report.accepted,
        "rejected": report.rejected,
        "repaired": report.repaired,
        "inserted": report.inserted,
        "updated": report.updated,
        "unchanged": report.unchanged,
        "skipped": dict(report.skipped),
        "channels": [
            {"name": name, "id": global_id(CHANNEL, channel_id)}
            for name, channel_id in sorted(report.channels.items())
        ],
        "errors": [{"location": e.location, "reason": e.reason} for e in report.errors],
        "seconds": round(seconds, 3),
    }


def _report_stop(path: Path, stopped: ImportStopped) -> int:
    """One line for an import that stopped part-way (`runner.importers.ingest.ImportStopped`)."""
    import asyncpg

    from runner.importers.inputs import UnusableInput

    cause, stored = stopped.cause, stopped.report.stored
    logger.debug("import of %s stopped", path, exc_info=cause)
    if isinstance(cause, UnusableInput):
        kept = f" ({stored:,} messages stored before it)" if stored else ""
        print(f"digestd: error: {cause}{kept}", file=sys.stderr)
        return 2
    name = type(cause).__name__
    if stopped.stage == "store":
        lost = (
            OSError,
            asyncpg.InterfaceError,
            asyncpg.PostgresConnectionError,
            asyncpg.exceptions.OperatorInterventionError,
        )
        if isinstance(cause, lost):
            what, then = "database connection lost", "run the same import again when it is back"
        else:
            what, then = "database error", "run with -v for the details"
        print(
            f"digestd: error: {what} after {stored:,} messages stored ({name}); {then} "
            "(a re-run leaves stored messages as they are)",
            file=sys.stderr,
        )
        return 1
    print(
        f"digestd: error: reading {path} failed after {stored:,} messages stored ({name}: "
        f"{str(cause).splitlines()[0][:200] if str(cause) else 'no detail'}); run with -v for "
        "the details",
        file=sys.stderr,
    )
    return 1
