"""The `digestd` commands that hand over to a module of their own once the runtime is open:
migrate, import, report, schedule, destination, add-doc, and schema (which needs no database)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from server.cli_destinations import destination
from server.cli_documents import add_doc
from server.cli_import import import_and_report
from server.cli_json import refuse
from server.cli_reports import report
from server.cli_runtime import catch_up_window, channel_named, watches_stopping, with_runtime
from server.cli_schedules import checked_cron, schedule
from server.runtime import Runtime
from server.settings import Settings


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    async def body(runtime: Runtime) -> int:
        print("database is migrated")
        return 0

    return asyncio.run(with_runtime(settings, body))


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    from runner.importers.inputs import describe

    path = Path(args.path)
    problem = describe(path) if not path.is_dir() else None
    if problem is not None:  # before starting the database: nothing to do
        return refuse("digestd: error", f"{path} {problem}", args.json)

    async def body(runtime: Runtime) -> int:
        return await import_and_report(
            runtime,
            path,
            args.channel,
            args.server,
            args.format,
            as_json=args.json,
            base_date=args.base_date,
        )

    return asyncio.run(with_runtime(settings, body))


def cmd_report(args: argparse.Namespace, settings: Settings) -> int:
    @watches_stopping
    async def body(runtime: Runtime) -> int:
        channel_ids = []
        for name in args.channel:
            try:
                channel_ids.append(await channel_named(runtime, name, args.server))
            except ValueError as error:
                return refuse("digestd report", str(error), args.json)
        return await report(runtime, args, channel_ids, since, until)

    try:
        since, until = catch_up_window(args.since, args.until)
    except ValueError as error:
        return refuse("digestd report", str(error), args.json)
    return asyncio.run(with_runtime(settings, body))


def cmd_schedule(args: argparse.Namespace, settings: Settings) -> int:
    async def body(runtime: Runtime) -> int:
        channel_id = None
        if getattr(args, "channel", None):
            try:
                channel_id = await channel_named(runtime, args.channel, args.server)
            except ValueError as error:
                return refuse("digestd schedule", str(error), args.json)
        return await schedule(runtime, args, channel_id)

    problem = checked_cron(args)
    if problem is not None:
        return refuse("digestd schedule", problem, args.json)
    return asyncio.run(with_runtime(settings, body))


def cmd_destination(args: argparse.Namespace, settings: Settings) -> int:
    return asyncio.run(with_runtime(settings, lambda runtime: destination(runtime, args)))


def cmd_add_doc(args: argparse.Namespace, settings: Settings) -> int:
    return asyncio.run(with_runtime(settings, lambda runtime: add_doc(runtime, args)))


def cmd_schema(args: argparse.Namespace, settings: Settings) -> int:
    from schema import build_schema

    print(build_schema().as_str())
    return 0
