"""`importChatExport` (writers): a chat export file uploaded whole, imported by the same
importers and the same checks as `digestd import` (runner/importers/). A Slack export comes as
the zip file Slack hands out, unpacked under bounds by runner/importers/archive.py.

The file's bytes come base64-encoded, so the server reads exactly what the file holds (an odd
byte is repaired or rejected record by record, as on the command line, not refused with the
whole request). They are written to a private temporary folder, imported, and removed. What the
import says names the upload (its file name), never the temporary path.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import logging
import re
import shutil
import tempfile
from datetime import date
from pathlib import Path
from typing import Annotated

import strawberry
from strawberry.types import Info

from runner.importers import PARSERS
from runner.importers.archive import is_zip, unpack_slack_zip
from runner.importers.ingest import MAX_ERRORS_KEPT, ImportReport, ImportStopped, import_path
from runner.importers.inputs import UnusableInput
from runner.importers.records import RecordError as RecordErrorRow
from schema.context import Context
from schema.gate.permissions import IsWriter
from schema.types.channel import Channel
from schema.types.shared import InvalidInputError, RecordError

logger = logging.getLogger(__name__)

MB = 1024 * 1024
# The largest export one call takes (bytes, before base64): under the writers' 32 MB request
# body once encoded. Larger exports: `digestd import`, which streams a file of any size.
MAX_CHAT_EXPORT_BYTES = 20 * MB
UPLOAD_FORMATS = tuple(PARSERS)
_SAFE_STEM = re.compile(r"[^A-Za-z0-9._ -]+")
_SAFE_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,10}")


@strawberry.input(
    description="A chat export file (JSONL, DiscordChatExporter JSON/CSV/TXT, IRC log)."
)
class ChatExportInput:
    content_base64: str = strawberry.field(description="The file's bytes, base64.")
    file_name: str | None = strawberry.field(
        default=None,
        description="The file's name: shown in errors, breaks format ties by its extension, and "
        "names the channel when neither channelName nor the export does.",
    )
    channel_name: str | None = strawberry.field(
        default=None,
        description="The channel to import into; overrides a single-channel export's own name.",
    )
    server: str | None = None
    format: str | None = strawberry.field(
        default=None,
        description="jsonl, discord_json, discord_csv, discord_txt, slack (a zip), irc or "
        "qmsum; detected from the content when not given.",
    )
    base_date: date | None = strawberry.field(
        default=None,
        description="The day of a log whose lines carry only a time of day (an IRC log, a "
        "meeting) when its file name names none; without it 1970-01-01 is assumed, and each such "
        "record says so in repairs.",
    )


@strawberry.type
class SkippedLines:
    reason: str
    count: int


@strawberry.type(
    description="What importChatExport stored, and what it rejected with where and why."
)
class ChatImport:
    format: str
    format_detected: bool
    accepted: int
    rejected: int
    repaired: int
    inserted: int
    updated: int
    unchanged: int
    channels: list[Channel] = strawberry.field(description="The channels the messages went to.")
    skipped: list[SkippedLines] = strawberry.field(
        description="Lines skipped on purpose (joins, system lines): not messages."
    )
    errors: list[RecordError] = strawberry.field(
        description="The first 20 rejected records, after the members of a zip not unpacked."
    )
    repairs: list[str] = strawberry.field(description="The first 20 repaired records.")
    stopped: str | None = strawberry.field(
        description="Why the import stopped before the end of the file (what was read before "
        "it is stored); null when it read the whole file."
    )
    message: str = strawberry.field(description="One line saying what happened.")


ImportChatExportResult = Annotated[
    ChatImport | InvalidInputError, strawberry.union("ImportChatExportResult")
]


def _decoded(source: ChatExportInput) -> bytes:
    """The file's bytes; ValueError with the reason when they are not acceptable."""
    encoded = source.content_base64
    if len(encoded) > MAX_CHAT_EXPORT_BYTES * 4 // 3 + 4:
        raise ValueError(
            f"the export is over {MAX_CHAT_EXPORT_BYTES // MB} MB: import it with "
            "`digestd import FILE` instead"
        )
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("contentBase64 is not valid base64") from None
    if not data:
        raise ValueError("the export is empty")
    return data


def _file_name(source: ChatExportInput) -> tuple[str, str]:
    """(the name shown, the private file's name): only the name's own characters, no folder."""
    given = Path((source.file_name or "").replace("\\", "/")).name.strip()
    shown = given[:200] or "the upload"
    suffix = Path(given).suffix
    suffix = suffix.lower() if _SAFE_SUFFIX.fullmatch(suffix) else ""
    stem = _SAFE_STEM.sub("_", Path(given).stem).strip(" ._")[:100] or "import"
    return shown, stem + suffix


def _summary(report: ImportReport, shown: str) -> str:
    line = (
        f"imported {shown} ({report.format}): {report.accepted} accepted, {report.rejected} "
        f"rejected, {report.repaired} repaired; {report.inserted} new, {report.updated} "
        f"updated, {report.unchanged} unchanged"
    )
    if report.accepted == 0:
        how = "detected from its content" if report.format_detected else "as format said"
        line += (
            f". Nothing imported: read as {report.format} ({how}); if it is in another format, "
            f"give format ({', '.join(UPLOAD_FORMATS)})"
        )
    return line


async def _result(
    info: Info[Context, None], report: ImportReport, shown: str, stopped: str | None
) -> ChatImport:
    rows = await info.context.loaders.channel.load_many(sorted(report.channels.values()))
    return ChatImport(
        format=report.format,
        format_detected=report.format_detected,
        accepted=report.accepted,
        rejected=report.rejected,
        repaired=report.repaired,
        inserted=report.inserted,
        updated=report.updated,
        unchanged=report.unchanged,
        channels=[Channel.from_row(row) for row in rows if row is not None],
        skipped=[SkippedLines(reason=r, count=c) for r, c in sorted(report.skipped.items())],
        errors=[RecordError(location=e.location, reason=e.reason) for e in report.errors],
        repairs=list(report.repairs),
        stopped=stopped,
        message=stopped or _summary(report, shown),
    )


@strawberry.type
class ImportMutations:
    @strawberry.mutation(
        permission_classes=[IsWriter],
        description="Import a chat export file (at most 20 MB; a Slack export as its zip file) "
        "as `digestd import` does: the format detected (or given), each record checked, bad ones "
        "rejected with where and why and the good ones stored. An input that cannot be read at "
        "all is an InvalidInputError saying why.",
    )
    async def import_chat_export(
        self, info: Info[Context, None], input: ChatExportInput
    ) -> ImportChatExportResult:
        export_format = (input.format or "").strip().lower() or None
        if export_format is not None and export_format not in UPLOAD_FORMATS:
            return InvalidInputError(
                message=f"format {export_format!r} is unknown (known: {', '.join(UPLOAD_FORMATS)})"
            )
        try:
            data = _decoded(input)
        except ValueError as error:
            return InvalidInputError(message=str(error))
        shown, private_name = _file_name(input)
        zipped = is_zip(data)
        if export_format == "slack" and not zipped:
            return InvalidInputError(
                message=f"{shown} is not a zip: upload a Slack export's zip file"
            )
        if zipped and export_format not in (None, "slack"):
            return InvalidInputError(
                message=f"{shown} is a zip: only a Slack export is uploaded as a zip file"
            )
        folder = Path(tempfile.mkdtemp(prefix="digestd-upload-"))
        path = folder / private_name
        skipped_members: list[str] = []
        try:
            try:
                if zipped:
                    unpacked = await asyncio.to_thread(
                        unpack_slack_zip, io.BytesIO(data), _made(folder / "export"), shown
                    )
                    path, export_format = unpacked.root, "slack"
                    skipped_members = unpacked.skipped
                else:
                    path.write_bytes(data)
                del data
                report = await import_path(
                    info.context.pool,
                    path,
                    channel=input.channel_name,
                    server=input.server,
                    max_message_chars=info.context.config.max_message_chars,
                    export_format=export_format,
                    offload_parsing=True,
                    base_date=input.base_date,
                )
            except UnusableInput as error:
                return InvalidInputError(message=_named(str(error), folder, shown))
            except ImportStopped as stop:
                _note_members(stop.report, skipped_members)
                return await _stopped(info, stop, folder, shown)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        _note_members(report, skipped_members)
        logger.info(
            "chat_export.imported format=%s accepted=%d rejected=%d",
            report.format,
            report.accepted,
            report.rejected,
        )
        return await _result(info, report, shown, None)


def _made(folder: Path) -> Path:
    folder.mkdir()
    return folder


def _note_members(report: ImportReport, skipped: list[str]) -> None:
    """Zip members not unpacked go first in the report's errors, each with its reason."""
    notes = [
        RecordErrorRow(
            location=f"zip member {item.partition(': ')[0]}", reason=item.partition(": ")[2]
        )
        for item in skipped
    ]
    report.errors[:0] = notes[:MAX_ERRORS_KEPT]
    del report.errors[MAX_ERRORS_KEPT:]


def _named(text: str, folder: Path, shown: str) -> str:
    """A message of the importers with the private paths replaced by the upload's name (a path
    inside an unpacked zip keeps its part inside the export: `slack.zip/general/...`)."""
    export = str(folder / "export")
    text = text.replace(export + "/", shown + "/").replace(export, shown)
    for entry in folder.iterdir() if folder.exists() else ():
        text = text.replace(str(entry), shown)
    return text.replace(str(folder), shown)


async def _stopped(
    info: Info[Context, None], stop: ImportStopped, folder: Path, shown: str
) -> ChatImport:
    """A stop part-way: what was stored before it, and why (a lost database is re-raised: the
    client sees UNAVAILABLE and retries, as for ingestMessages)."""
    cause = stop.cause
    if stop.stage == "store":
        raise cause
    stored = stop.report.stored
    if isinstance(cause, UnusableInput):
        why = _named(str(cause), folder, shown)
    else:
        logger.warning("chat_export.parser_failed", exc_info=cause)
        why = f"reading {shown} failed ({type(cause).__name__})"
    return await _result(
        info, stop.report, shown, f"stopped: {why}; {stored:,} messages stored before it"
    )
