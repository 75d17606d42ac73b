"""The `digestd` command: serve, worker, migrate, import, digest, add-doc, report, schedule,
destination, the reads (channels, digests, show, export, open, catchup, conversations), eval,
schema, demo.

This module only parses: it imports the standard library and nothing that reaches the database,
the API or the models, so `digestd --help` (and a mistyped command) answers at once. Each command
names its handler as "module:function", imported when that command runs."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from datetime import date
from importlib import metadata
from typing import TYPE_CHECKING, Any

from server.cli_eval import add_eval_parser

if TYPE_CHECKING:
    from pydantic import ValidationError

logger = logging.getLogger("digestd")

JSON_HELP = "print one JSON object on stdout (the API's field names) instead of text"
IMPORT_FORMATS = ("jsonl", "discord_json", "discord_csv", "discord_txt", "slack", "irc", "qmsum")


class _Version(argparse.Action):
    """--version, reading the installed package's metadata only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="show the version and exit",
        )

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        try:
            version = metadata.version("digestd")
        except metadata.PackageNotFoundError:  # run from a source tree that was never installed
            version = "unknown"
        print(f"digestd {version}")  # on stdout, as argparse's own version action does
        parser.exit()


def _command(
    commands: argparse._SubParsersAction,  # type: ignore[type-arg]
    name: str,
    handler: str,
    help: str,
) -> argparse.ArgumentParser:
    """A subcommand whose handler is `module:function` under server/, loaded when it runs."""
    parser: argparse.ArgumentParser = commands.add_parser(name, help=help)
    parser.set_defaults(handler=f"server.{handler}")
    return parser


def _iso_date(text: str) -> date:
    """An argument in YYYY-MM-DD, refused by argparse with the reason otherwise."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date in YYYY-MM-DD") from None


def _json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help=JSON_HELP)


def _wait_arguments(parser: argparse.ArgumentParser, wait_help: str) -> None:
    parser.add_argument("--wait", action="store_true", help=wait_help)
    parser.add_argument(
        "--no-worker", action="store_true", help="only wait; let running workers do the job"
    )


def _add_write_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    serve = _command(
        commands, "serve", "cli_serve:cmd_serve", "GraphQL API (and in-process workers)"
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--no-runner", action="store_true", help="run no in-process worker")
    serve.add_argument("--workers", type=int, default=1, help="in-process worker loops")

    worker = _command(commands, "worker", "cli_serve:cmd_worker", "process digest jobs")
    worker.add_argument("--concurrency", type=int, default=1, help="job loops in this process")
    worker.add_argument(
        "--metrics-port", type=int, help="serve this worker's Prometheus metrics on this port"
    )
    worker.add_argument("--metrics-host", default="127.0.0.1", help="address of --metrics-port")

    _command(commands, "migrate", "cli_commands:cmd_migrate", "apply database migrations")

    importer = _command(
        commands, "import", "cli_commands:cmd_import", "import a chat export (file or Slack folder)"
    )
    importer.add_argument("path")
    importer.add_argument("--channel", help="channel name (default: from the export or file name)")
    importer.add_argument("--server", help="server / guild / workspace name")
    importer.add_argument(
        "--format",
        choices=IMPORT_FORMATS,
        help="read the export as this format instead of detecting it from its content",
    )
    importer.add_argument(
        "--base-date",
        type=_iso_date,
        metavar="YYYY-MM-DD",
        help="the day of a log whose lines carry only a time and whose file name names no date "
        "(else 1970-01-01 is assumed, and said)",
    )
    _json(importer)

    digest = _command(commands, "digest", "cli_digest:cmd_digest", "trigger a digest of a channel")
    digest.add_argument("channel", help="channel name or id")
    digest.add_argument("--server", help="server name, when channel names repeat")
    _wait_arguments(digest, "wait, show progress, print it")
    digest.add_argument("--since", help="catch-up window start, ISO 8601 (inclusive)")
    digest.add_argument("--until", help="catch-up window end, ISO 8601 (exclusive)")
    _json(digest)

    add_doc = _command(
        commands,
        "add-doc",
        "cli_commands:cmd_add_doc",
        "ingest a document (file or URL); --query digests it",
    )
    add_doc.add_argument(
        "source",
        metavar="PATH_OR_URL",
        nargs="+",
        help="an HTML, PDF or text file, or a URL; with several and --query, the best for the "
        "query are digested (DIGESTD_DOC_MAX_SOURCES) and the others named with why",
    )
    add_doc.add_argument("--title", help="title to store (default: the document's own)")
    add_doc.add_argument("--password", help="password of an encrypted PDF")
    add_doc.add_argument("--query", help="also queue a digest for this query")
    _wait_arguments(add_doc, "with --query: wait and print it as Markdown")
    add_doc.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout (document, job, payload) instead of text",
    )

    report = _command(
        commands,
        "report",
        "cli_commands:cmd_report",
        "a cited report answering a question across channels and documents",
    )
    report.add_argument("question", help="what the report answers")
    report.add_argument(
        "--channel", action="append", default=[], help="channel name or id (repeat for several)"
    )
    report.add_argument("--server", help="server name, when channel names repeat")
    report.add_argument(
        "--doc", action="append", default=[], help="document id (repeat for several)"
    )
    report.add_argument("--since", help="messages from, ISO 8601 (inclusive)")
    report.add_argument("--until", help="messages before, ISO 8601 (exclusive)")
    _wait_arguments(report, "run it here and print the report")
    _json(report)

    _add_schedule_command(commands)
    _add_destination_command(commands)


def _add_schedule_command(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = _command(
        commands,
        "schedule",
        "cli_commands:cmd_schedule",
        "digest channels on a schedule: add, list, pause, resume, delete",
    )
    actions = parser.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="digest a channel at each slot of a cron expression")
    add.add_argument("channel", help="channel name or id")
    add.add_argument("cron", help='five fields, e.g. "0 9 * * 1-5" (or six with seconds first)')
    add.add_argument("--tz", default="UTC", help="IANA time zone of the slots (default UTC)")
    add.add_argument("--server", help="server name, when channel names repeat")
    add.add_argument(
        "--deliver",
        action="append",
        default=[],
        metavar="DESTINATION",
        help="deliver each digest to this destination (its name; repeat for several)",
    )
    _json(add)
    listing = actions.add_parser("list", help="the schedules, newest first")
    listing.add_argument("--channel", help="only this channel's (name or id)")
    listing.add_argument("--server", help="server name, when channel names repeat")
    _json(listing)
    for action in ("pause", "resume", "delete"):
        change = actions.add_parser(action, help=f"{action} a schedule")
        change.add_argument("id", help="schedule id (numeric or the API's global id)")
        _json(change)


def _add_destination_command(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = _command(
        commands,
        "destination",
        "cli_commands:cmd_destination",
        "where digests and job events are delivered: add, list, delete",
    )
    actions = parser.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="declare a destination (webhook, slack, discord, email)")
    add.add_argument("name", help="its name, used by `schedule add --deliver NAME`")
    add.add_argument(
        "--kind", required=True, choices=["webhook", "slack", "discord", "email"], help="its kind"
    )
    add.add_argument("--url", help="the webhook URL (a secret; '-' reads it from stdin)")
    add.add_argument(
        "--secret",
        help="a webhook's signing secret ('-' reads it from stdin; default: a random one, "
        "printed once)",
    )
    add.add_argument("--password", help="the SMTP password ('-' reads it from stdin)")
    add.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a non-secret setting, e.g. host=smtp.example.org (repeat for several)",
    )
    add.add_argument(
        "--event",
        action="append",
        default=[],
        choices=["digest.ready", "job.succeeded", "job.failed"],
        help="also deliver this event of every job (repeat for several)",
    )
    _json(add)
    listing = actions.add_parser("list", help="the destinations, newest first (no secrets)")
    _json(listing)
    delete = actions.add_parser("delete", help="delete a destination and its deliveries")
    delete.add_argument("name", help="the destination's name")
    _json(delete)


def _add_read_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    channels = _command(
        commands,
        "channels",
        "cli_reads:cmd_channels",
        "the channels: server, messages, last digest, what is open",
    )
    _json(channels)

    digests = _command(
        commands, "digests", "cli_reads:cmd_digests", "a channel's digests, newest first"
    )
    digests.add_argument("channel", help="channel name or id")
    digests.add_argument("--server", help="server name, when channel names repeat")
    digests.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    _json(digests)

    show = _command(
        commands,
        "show",
        "cli_show:cmd_show",
        "print a digest, report or document digest as Markdown",
    )
    show.add_argument("kind", choices=("digest", "report", "document"))
    show.add_argument(
        "id", help="its id: a number, or the global id the API shows (a document digest's id)"
    )
    _json(show)

    export = _command(
        commands,
        "export",
        "cli_export:cmd_export",
        "write a digest, report or person's catch-up as a Markdown, HTML or JSON file",
    )
    export.add_argument("kind", choices=("digest", "report", "catchup"))
    export.add_argument(
        "id",
        help="its id: a number, or the global id the API shows; for catchup, the person's name "
        "or one of their handles",
    )
    export.add_argument(
        "--since",
        help="catchup only: start at a duration back from now (30m, 12h, 2d, 1w) or an ISO 8601 "
        "time (default: each channel's read marker, else 24 hours ago)",
    )
    export.add_argument(
        "--format",
        choices=("md", "html", "json"),
        default="md",
        help="md (as `show` prints it), html (one self-contained page with its footnotes and "
        "cited quotes), json (versioned: digestd.digest/1, digestd.report/1, "
        "digestd.catchup/1); default md",
    )
    export.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")

    still_open = _command(
        commands,
        "open",
        "cli_reads:cmd_open",
        "what is still open in a channel: questions, action items by owner, decisions in force",
    )
    still_open.add_argument("channel", help="channel name or id")
    still_open.add_argument("--server", help="server name, when channel names repeat")
    _json(still_open)

    catchup = _command(
        commands,
        "catchup",
        "cli_catchup:cmd_catchup",
        "what waits on a person across channels, cited: questions to them, their action items, "
        "mentions, decisions",
    )
    catchup.add_argument("person", help="the person's name or one of their handles")
    catchup.add_argument(
        "--since",
        help="start: a duration back from now (30m, 12h, 2d, 1w) or an ISO 8601 time "
        "(default: each channel's read marker, else 24 hours ago)",
    )
    catchup.add_argument(
        "--channel", action="append", default=[], help="only this channel (name or id; repeatable)"
    )
    catchup.add_argument("--server", help="server name, when channel names repeat")
    catchup.add_argument(
        "--mark-read",
        action="store_true",
        help="then mark the channels shown (and those given) read up to now",
    )
    catchup.add_argument(
        "--deliver",
        metavar="DESTINATION",
        help="send it to this destination (by name; any kind) instead of printing it",
    )
    _json(catchup)

    conversations = _command(
        commands,
        "conversations",
        "cli_reads:cmd_conversations",
        "a channel's conversations, newest first: title, participants, messages, state",
    )
    conversations.add_argument("channel", help="channel name or id")
    conversations.add_argument("--server", help="server name, when channel names repeat")
    conversations.add_argument(
        "--limit", type=int, default=50, help="at most this many (default 50)"
    )
    _json(conversations)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="digestd", description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True)
    _add_write_commands(commands)
    _add_read_commands(commands)
    add_eval_parser(commands)
    _command(
        commands,
        "schema",
        "cli_commands:cmd_schema",
        "print the GraphQL schema (SDL), as in docs/schema.graphql",
    )
    _command(commands, "demo", "cli_digest:cmd_demo", "import the sample channel and digest it")
    return parser


def _handler(args: argparse.Namespace) -> Callable[..., Any]:
    """The command's handler: a function, or "module:function" imported now."""
    handler = args.handler
    if callable(handler):
        return handler  # type: ignore[no-any-return]
    module, _, function = str(handler).partition(":")
    return getattr(importlib.import_module(module), function)  # type: ignore[no-any-return]


def _settings_problem(error: ValidationError) -> str:
    """The first invalid setting as `NAME: what is wrong`, never its value (it may be a secret)."""
    first = error.errors()[0]
    name = ".".join(str(part) for part in first["loc"]).upper()
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{name}: {first['msg']}{more}"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # Past parsing: the command runs, and what it needs is imported now.
    from pydantic import ValidationError

    from server.logs import configure_logging
    from server.runtime import ConfigurationError, DatabaseUnavailable
    from server.settings import get_settings

    try:
        settings = get_settings()
    except ValidationError as error:
        configure_logging(args.verbose)
        print(f"digestd: configuration error: {_settings_problem(error)}", file=sys.stderr)
        return 2
    configure_logging(args.verbose, settings.digestd_log_format)
    # SIGTERM stops a command like Ctrl-C does. Commands with a runtime replace both with a
    # graceful stop (server/cli_runtime.py, cmd_serve); elsewhere (eval) they interrupt where it is.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return int(_handler(args)(args, settings))
    except ConfigurationError as error:
        print(f"digestd: configuration error: {error}", file=sys.stderr)
        return 2
    except DatabaseUnavailable as error:
        print(f"digestd: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("digestd: interrupted", file=sys.stderr)
        return 0
    except BrokenPipeError:
        # The reader went away (`digestd import ... | head`): what was asked is done; stop
        # writing without a traceback, and keep Python's exit-time flush from raising again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
