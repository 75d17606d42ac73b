"""`digestd export digest|report ID --format md|html|json [-o FILE]`, and `digestd export catchup
PERSON [--since 2d|ISO] ...`: write a stored digest or report, or a person's catch-up (what
`digestd catchup` prints; reading it marks nothing read), as a file people read
(runner/exports): Markdown as `digestd show` prints it, a self-contained HTML page with its
footnotes and cited quotes, or versioned JSON. Without -o the file goes to stdout.

ID is a number or the global id the API shows. The file is written whole or not at all: it is
put beside FILE under a temporary name and renamed over it."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from runner.catchup.store import CatchUpRefused
from runner.exports.store import ExportedFile, export_catch_up, export_file
from schema.types.ids import DIGEST, REPORT, cli_row_id
from server.cli_catchup import parse_since
from server.cli_json import refuse
from server.cli_runtime import with_runtime
from server.cli_text import terminal_text
from server.runtime import Runtime
from server.settings import Settings

COMMAND = "digestd export"
TYPES = {"digest": DIGEST, "report": REPORT}


def _write(path: Path, exported: ExportedFile) -> None:
    """`exported` at `path`, atomically: a reader never sees half a file."""
    directory = path.parent if str(path.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as file:
            file.write(exported.content)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    row_id: int | None = None
    since: datetime | None = None
    now = datetime.now(UTC)
    if args.kind == "catchup":
        try:
            since = parse_since(args.since, now)
        except ValueError as error:
            return refuse(COMMAND, str(error), False)
    else:
        if args.since is not None:
            return refuse(COMMAND, "--since is for `export catchup` only", False)
        row_id = cli_row_id(args.id, TYPES[args.kind])
        if row_id is None:
            return refuse(COMMAND, f"{args.id!r} is not a {args.kind} id", False)
    output: Path | None = Path(args.output) if args.output else None
    if output is not None and not output.parent.is_dir():
        return refuse(COMMAND, f"{str(output.parent)!r} is not a directory", False)

    async def body(runtime: Runtime) -> int:
        async with runtime.pool.acquire() as connection:
            if row_id is None:
                try:
                    exported: ExportedFile | None = await export_catch_up(
                        connection, args.id, since, args.format, now=now
                    )
                except CatchUpRefused as refused:
                    return refuse(COMMAND, refused.message, False)
            else:
                exported = await export_file(connection, args.kind, row_id, args.format)
        if exported is None:
            return refuse(COMMAND, f"no {args.kind} {row_id}", False, status=1)
        if output is None:
            # Piped or redirected: the file as it is, the same bytes as -o. On a terminal, without
            # what a terminal would act on (a message's escape sequences, bidi overrides).
            tty = sys.stdout.isatty()
            sys.stdout.write(terminal_text(exported.content) if tty else exported.content)
            sys.stdout.flush()
            return 0
        try:
            _write(output, exported)
        except OSError as error:
            return refuse(COMMAND, f"cannot write {str(output)!r}: {error.strerror}", False)
        what = f"{args.kind} {row_id}" if row_id is not None else f"catch-up of {args.id!r}"
        print(f"{what} written to {output} ({args.format})", file=sys.stderr)
        return 0

    return asyncio.run(with_runtime(settings, body))
