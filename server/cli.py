"""The `digestd` command: serve, worker, migrate, import, digest, add-doc, report, schedule, eval,
demo."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import gc
import ipaddress
import logging
import os
import signal
import socket
import sys
import threading
from datetime import datetime
from importlib import metadata, resources
from pathlib import Path

from pydantic import ValidationError

from db import channels as channel_queries
from db import digests as digest_queries
from db import jobs as job_queries
from db.jobs import JobStatus
from db.models import DigestJob
from runner.core import offload
from runner.triggers import TriggerRefused, channel_digest_options, trigger_channel_digest
from schema.types.ids import CHANNEL, channel_row_id, global_id
from server.cli_documents import add_arguments as add_doc_arguments
from server.cli_documents import add_doc
from server.cli_eval import add_eval_parser
from server.cli_import import import_and_report
from server.cli_json import JSON_HELP, emit, job_json, refuse
from server.cli_reports import add_arguments as add_report_arguments
from server.cli_reports import report
from server.cli_schedules import add_arguments as add_schedule_arguments
from server.cli_schedules import checked_cron, schedule
from server.logs import configure_logging, enable_access_log
from server.render import render_digest
from server.runtime import ConfigurationError, DatabaseUnavailable, Runtime, check_database
from server.settings import Settings, get_settings

logger = logging.getLogger("digestd")

DEMO_CHANNEL = "team-platform"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# A subscribe message of MAX_MESSAGE_CHARS characters, each at most 4 bytes of UTF-8.
WS_MAX_BYTES = 4 * 128 * 1024


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from server.app import AppOptions, create_app
    from server.connection_limits import connection_limit

    if not settings.digestd_api_tokens and not _is_loopback(args.host):
        logger.warning(
            "listening on %s with no DIGESTD_API_TOKENS: anyone who can reach it can read and "
            "write. Set DIGESTD_API_TOKENS=reader:...,writer:...",
            args.host,
        )
    busy = port_problem(args.host, args.port)
    if busy is not None:  # before announcing a URL that would not answer
        print(f"digestd serve: cannot listen on {args.host}:{args.port}: {busy}", file=sys.stderr)
        return 2
    if settings.database_url:
        # Checked here: inside the app's lifespan, uvicorn would print a traceback for it.
        asyncio.run(check_database(settings.database_url))  # DatabaseUnavailable: one line
    enable_access_log()
    workers = 0 if args.no_runner else args.workers
    app = create_app(settings, AppOptions(run_workers=workers, listen_host=args.host))
    print(f"digestd: GraphiQL at http://{args.host}:{args.port}/graphql", file=sys.stderr)
    tune_gc_for_serving()
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            log_level="warning",
            timeout_graceful_shutdown=max(1, int(settings.digestd_shutdown_grace_seconds)),
            # WebSocket frames are subscribe messages (server/graphql_ws.py caps them at 128 Ki
            # characters): uvicorn's 16 MiB default would buffer far more before that check.
            ws_max_size=WS_MAX_BYTES,
            # Within the descriptors RLIMIT_NOFILE allows (server/connection_limits.py): past it
            # nothing, a writer's request included, would be accepted.
            limit_concurrency=connection_limit(settings),
        )
    )
    # uvicorn turns SIGTERM/SIGINT into a graceful stop (the lifespan releases running jobs and
    # stops the embedded server), then re-raises the signal to the handler it found: with the
    # default one the process would die with 143 / KeyboardInterrupt after a clean stop.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _stopped_cleanly)
    server.run()
    return 0 if server.started else 1


# Allocations (minus frees) between two young collections; CPython's default is 700. A GraphQL
# request allocates thousands of short-lived objects, so at 700 the collector ran many times per
# request and promoted live request objects into the older generations, whose full collections
# (60-66 ms each with the whole import graph to scan, 23 in 9 s under load) made the p99.
GC_YOUNG_THRESHOLD = 50_000


def tune_gc_for_serving() -> None:
    """Make garbage collection cheap for a long-running server: everything alive now (modules,
    the schema, the app) is moved out of the collector's sight with `gc.freeze()`, since it lives
    as long as the process; and young collections run less often (`GC_YOUNG_THRESHOLD`), so
    most request garbage is freed by reference counting before a collection ever sees it."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def port_problem(host: str, port: int) -> str | None:
    """Why `host:port` cannot be listened on (busy, no such address), or None. uvicorn binds
    with SO_REUSEADDR too, so a port free here is free for it."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        return f"unknown host ({error.strerror})"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            return "the port is in use" if error.errno == errno.EADDRINUSE else error.strerror
    return None


def _stopped_cleanly(signum: int, frame: object) -> None:
    """The handler uvicorn re-raises into after its graceful shutdown: nothing left to do."""


async def _with_runtime(settings: Settings, body) -> int:  # type: ignore[no-untyped-def]
    """Open the runtime, run `body(runtime)`, close it, with SIGTERM/SIGINT as a graceful stop:
    `runtime.stopping` is set, and a body that does not watch it (import, add-doc, migrate) is
    cancelled. Either way the runtime closes (stopping the embedded server) and the exit is 0."""
    loop = asyncio.get_running_loop()
    runtime = Runtime(settings)
    current = asyncio.current_task()
    assert current is not None
    body_task: asyncio.Task[int] | None = None

    def on_signal(signum: signal.Signals) -> None:
        if runtime.stopping.is_set():
            return
        print(f"digestd: {signum.name}: stopping", file=sys.stderr)
        runtime.stopping.set()
        if body_task is not None and not getattr(body, "watches_stopping", False):
            body_task.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not main thread
            loop.add_signal_handler(signum, on_signal, signum)
    try:
        await runtime.open()
        if runtime.stopping.is_set():
            return 0
        body_task = asyncio.create_task(body(runtime))
        try:
            return await body_task
        except asyncio.CancelledError:
            if not runtime.stopping.is_set() or current.cancelling():
                raise
            return 0
    finally:
        offload.shutdown()  # abandoned CPU work must not hold the exit
        await runtime.close()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signum)


def _watches_stopping(body):  # type: ignore[no-untyped-def]
    """Mark a body that stops by itself on `runtime.stopping` (it is not cancelled)."""
    body.watches_stopping = True
    return body


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    async def body(runtime: Runtime) -> int:
        print("database is migrated")
        return 0

    return asyncio.run(_with_runtime(settings, body))


def _serve_worker_metrics(host: str, port: int) -> None:
    """The worker's own figures (runner/metrics.py) in Prometheus' format on host:port, from a
    daemon thread; the queue's figures come from any `serve` process's /metrics."""
    from prometheus_client import start_http_server

    import runner.metrics  # noqa: F401 - registers the worker's metrics before the first scrape

    start_http_server(port, addr=host)
    print(f"digestd worker: metrics at http://{host}:{port}/metrics", file=sys.stderr)


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    if args.metrics_port is not None:
        busy = port_problem(args.metrics_host, args.metrics_port)
        if busy is not None:
            print(
                f"digestd worker: cannot serve metrics on {args.metrics_host}:"
                f"{args.metrics_port}: {busy}",
                file=sys.stderr,
            )
            return 2

    @_watches_stopping
    async def body(runtime: Runtime) -> int:
        # Loops are supervised: one that dies is restarted; a signal checkpoints running jobs
        # and releases them (runtime.stopping), then the process exits 0.
        if args.metrics_port is not None:
            _serve_worker_metrics(args.metrics_host, args.metrics_port)
        runner = runtime.runner(args.concurrency)
        print(
            f"digestd worker: {args.concurrency} loop(s), extractor {settings.extractor_name}",
            file=sys.stderr,
        )
        runner.start()
        await runtime.stopping.wait()
        await runner.stop(timeout=settings.digestd_shutdown_grace_seconds + 5)
        return 0

    return asyncio.run(_with_runtime(settings, body))


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    from runner.importers.inputs import describe

    path = Path(args.path)
    problem = describe(path) if not path.is_dir() else None
    if problem is not None:  # before starting the database: nothing to do
        return refuse("digestd: error", f"{path} {problem}", args.json)

    async def body(runtime: Runtime) -> int:
        return await import_and_report(
            runtime, path, args.channel, args.server, args.format, as_json=args.json
        )

    return asyncio.run(_with_runtime(settings, body))


async def _find_channel(runtime: Runtime, name: str, server: str | None) -> int | None:
    async with runtime.pool.acquire() as connection:
        # A name spelling an id (the API's global id, or a numeric one) is looked up as the id
        # first, read as the API reads ids (str.isdigit would take "²", which int() refuses).
        row_id = channel_row_id(name)
        if row_id is not None:
            row = await channel_queries.channel_by_id(connection, row_id)
            if row is not None:
                return int(row.id)
        rows = await channel_queries.channels_by_name(connection, name, server)
    if len(rows) > 1:
        raise ValueError(f"several channels are named {name!r}; pass --server or the channel id")
    return int(rows[0].id) if rows else None


async def _channel_named(runtime: Runtime, name: str, server: str | None) -> int:
    """The channel a command argument names; ValueError with the line to print otherwise."""
    channel_id = await _find_channel(runtime, name, server)
    if channel_id is None:
        raise ValueError(f"no channel {name!r}")
    return channel_id


async def _digest(
    runtime: Runtime,
    channel_id: int,
    *,
    wait: bool,
    run_worker: bool,
    since: datetime | None = None,
    until: datetime | None = None,
    as_json: bool = False,
) -> int:
    try:
        async with runtime.pool.acquire() as connection:
            job, created = await trigger_channel_digest(
                connection,
                channel_id,
                since=since,
                until=until,
                max_attempts=runtime.settings.digestd_max_attempts,
            )
    except TriggerRefused as refused:
        return refuse("digestd digest", str(refused.message), as_json)
    state = JobStatus.QUEUED if created else "already " + job.status
    print(f"job {job.id} {state}", file=sys.stderr)
    if not wait:
        if as_json:
            emit({"created": created, "job": job_json(job)})
        return 0
    worker = runtime.new_worker() if run_worker else None
    last_line = ""
    while True:
        if runtime.stopping.is_set():
            print(f"job {job.id} left to other workers", file=sys.stderr)
            if as_json:
                emit({"created": created, "job": job_json(job)})
            return 0
        if worker is not None:
            await worker.run_once(runtime.stopping)
        async with runtime.pool.acquire() as connection:
            current = await job_queries.job_by_id(connection, job.id)
        assert current is not None
        job = current
        # "job 7: running map 3/8 42%": the phase and the whole job's share while it runs;
        # the chunks once they are planned.
        running = job.status == JobStatus.RUNNING
        line = " ".join(
            part
            for part in (
                f"job {job.id}: {job.status}",
                job.phase if running else None,
                f"{job.chunks_done}/{job.chunks_total}" if job.chunks_total else None,
                f"{int(job.progress_fraction * 100)}%" if running else None,
            )
            if part
        )
        if line != last_line:
            print(line, file=sys.stderr)
            last_line = line
        if job.status in job_queries.TERMINAL:
            break
        await asyncio.sleep(0.5)
    if as_json:
        emit({"created": created, "job": job_json(job)})
        return 1 if job.status in (JobStatus.FAILED, JobStatus.CANCELLED) else 0
    return await _print_outcome(runtime, job)


async def _print_outcome(runtime: Runtime, job: DigestJob) -> int:
    stats = job.stats or {}
    if job.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        print(f"job {job.id} {job.status}: {job.error or job.result_message or ''}")
        return 1
    if job.digest_id is None:
        print(f"job {job.id} {job.status}: {job.result_message or 'no digest'}")
        async with runtime.pool.acquire() as connection:
            assert job.channel_id is not None  # `_digest` queues channel jobs only
            latest = await digest_queries.latest_digest_of_channel(connection, job.channel_id)
            if latest is not None:
                print(f"the channel's latest digest ({latest.id}):\n")
                print(await render_digest(connection, latest.id))
        return 0
    async with runtime.pool.acquire() as connection:
        print(await render_digest(connection, job.digest_id))
    print(
        f"\njob {job.id} {job.status}: {stats.get('messages')} messages, "
        f"{stats.get('chunks')} chunks ({stats.get('chunks_from_cache')} cached), "
        f"{stats.get('llm_calls')} LLM calls, {stats.get('items_rejected')} items rejected, "
        f"{stats.get('duration_seconds')}s"
    )
    for flag in job.warnings or []:
        print(f"warning {flag.get('code', '')}: {flag.get('message', '')}", file=sys.stderr)
    return 0


def _catch_up_window(
    since: str | None, until: str | None
) -> tuple[datetime | None, datetime | None]:
    """--since/--until as a catch-up window, checked as the API checks it; ValueError with a
    one-line message, before anything is opened."""
    bounds: dict[str, datetime | None] = {"since": None, "until": None}
    for name, text in (("since", since), ("until", until)):
        if text is None:
            continue
        try:
            bounds[name] = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"--{name} {text!r} is not an ISO 8601 date or time") from None
    try:
        channel_digest_options(since=bounds["since"], until=bounds["until"])
    except TriggerRefused as refused:
        raise ValueError(refused.message.replace("options.", "--")) from None
    return bounds["since"], bounds["until"]


def cmd_digest(args: argparse.Namespace, settings: Settings) -> int:
    @_watches_stopping
    async def body(runtime: Runtime) -> int:
        try:
            channel_id = await _channel_named(runtime, args.channel, args.server)
        except ValueError as error:
            return refuse("digestd digest", str(error), args.json)
        return await _digest(
            runtime,
            channel_id,
            wait=args.wait,
            run_worker=not args.no_worker,
            since=since,
            until=until,
            as_json=args.json,
        )

    try:
        since, until = _catch_up_window(args.since, args.until)
    except ValueError as error:
        return refuse("digestd digest", str(error), args.json)

    return asyncio.run(_with_runtime(settings, body))


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    sample = resources.files("runner").joinpath("samples/sample_channel.jsonl")

    async def body(runtime: Runtime) -> int:
        with resources.as_file(sample) as path:
            await import_and_report(runtime, path, None, "digestd-demo")
        channel_id = await _find_channel(runtime, DEMO_CHANNEL, "digestd-demo")
        assert channel_id is not None
        code = await _digest(runtime, channel_id, wait=True, run_worker=True)
        print(
            "\nNext: run `digestd serve` and open http://127.0.0.1:8000/ (the web console) or "
            "http://127.0.0.1:8000/graphql to explore it, e.g. "
            f'{{ digests(filter: {{channelId: "{global_id(CHANNEL, channel_id)}"}}) '
            "{ nodes { id title excerpt } } }"
        )
        return code

    return asyncio.run(_with_runtime(settings, body))


def cmd_report(args: argparse.Namespace, settings: Settings) -> int:
    @_watches_stopping
    async def body(runtime: Runtime) -> int:
        channel_ids = []
        for name in args.channel:
            try:
                channel_ids.append(await _channel_named(runtime, name, args.server))
            except ValueError as error:
                return refuse("digestd report", str(error), args.json)
        return await report(runtime, args, channel_ids, since, until)

    try:
        since, until = _catch_up_window(args.since, args.until)
    except ValueError as error:
        return refuse("digestd report", str(error), args.json)
    return asyncio.run(_with_runtime(settings, body))


def cmd_schedule(args: argparse.Namespace, settings: Settings) -> int:
    async def body(runtime: Runtime) -> int:
        channel_id = None
        if getattr(args, "channel", None):
            try:
                channel_id = await _channel_named(runtime, args.channel, args.server)
            except ValueError as error:
                return refuse("digestd schedule", str(error), args.json)
        return await schedule(runtime, args, channel_id)

    problem = checked_cron(args)
    if problem is not None:
        return refuse("digestd schedule", problem, args.json)
    return asyncio.run(_with_runtime(settings, body))


def cmd_add_doc(args: argparse.Namespace, settings: Settings) -> int:
    return asyncio.run(_with_runtime(settings, lambda runtime: add_doc(runtime, args)))


def _version() -> str:
    try:
        return metadata.version("digestd")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def cmd_schema(args: argparse.Namespace, settings: Settings) -> int:
    from schema import build_schema

    print(build_schema().as_str())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="digestd", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    parser.add_argument("--version", action="version", version=f"digestd {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="GraphQL API (and in-process workers)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--no-runner", action="store_true", help="run no in-process worker")
    serve.add_argument("--workers", type=int, default=1, help="in-process worker loops")
    serve.set_defaults(handler=cmd_serve)

    worker = commands.add_parser("worker", help="process digest jobs")
    worker.add_argument("--concurrency", type=int, default=1, help="job loops in this process")
    worker.add_argument(
        "--metrics-port", type=int, help="serve this worker's Prometheus metrics on this port"
    )
    worker.add_argument("--metrics-host", default="127.0.0.1", help="address of --metrics-port")
    worker.set_defaults(handler=cmd_worker)

    commands.add_parser("migrate", help="apply database migrations").set_defaults(
        handler=cmd_migrate
    )

    importer = commands.add_parser("import", help="import a chat export (file or Slack folder)")
    importer.add_argument("path")
    importer.add_argument("--channel", help="channel name (default: from the export or file name)")
    importer.add_argument("--server", help="server / guild / workspace name")
    importer.add_argument(
        "--format",
        choices=("jsonl", "discord_json", "discord_csv", "discord_txt", "slack", "irc", "qmsum"),
        help="read the export as this format instead of detecting it from its content",
    )
    importer.add_argument("--json", action="store_true", help=JSON_HELP)
    importer.set_defaults(handler=cmd_import)

    digest = commands.add_parser("digest", help="trigger a digest of a channel")
    digest.add_argument("channel", help="channel name or id")
    digest.add_argument("--server", help="server name, when channel names repeat")
    digest.add_argument("--wait", action="store_true", help="wait, show progress, print it")
    digest.add_argument(
        "--no-worker", action="store_true", help="only wait; let running workers do the job"
    )
    digest.add_argument("--since", help="catch-up window start, ISO 8601 (inclusive)")
    digest.add_argument("--until", help="catch-up window end, ISO 8601 (exclusive)")
    digest.add_argument("--json", action="store_true", help=JSON_HELP)
    digest.set_defaults(handler=cmd_digest)

    add_doc_parser = commands.add_parser(
        "add-doc", help="ingest a document (file or URL); --query digests it"
    )
    add_doc_arguments(add_doc_parser)
    add_doc_parser.set_defaults(handler=cmd_add_doc)

    report_parser = commands.add_parser(
        "report", help="a cited report answering a question across channels and documents"
    )
    add_report_arguments(report_parser)
    report_parser.set_defaults(handler=cmd_report)

    schedule_parser = commands.add_parser(
        "schedule", help="digest channels on a schedule: add, list, pause, resume, delete"
    )
    add_schedule_arguments(schedule_parser)
    schedule_parser.set_defaults(handler=cmd_schedule)

    add_eval_parser(commands)

    commands.add_parser(
        "schema", help="print the GraphQL schema (SDL), as in docs/schema.graphql"
    ).set_defaults(handler=cmd_schema)

    commands.add_parser("demo", help="import the sample channel and digest it").set_defaults(
        handler=cmd_demo
    )
    return parser


def _settings_problem(error: ValidationError) -> str:
    """The first invalid setting as `NAME: what is wrong`, never its value (it may be a secret)."""
    first = error.errors()[0]
    name = ".".join(str(part) for part in first["loc"]).upper()
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{name}: {first['msg']}{more}"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = get_settings()
    except ValidationError as error:
        configure_logging(args.verbose)
        print(f"digestd: configuration error: {_settings_problem(error)}", file=sys.stderr)
        return 2
    configure_logging(args.verbose, settings.digestd_log_format)
    # SIGTERM stops a command like Ctrl-C does. Commands with a runtime replace both with a
    # graceful stop (_with_runtime, cmd_serve); elsewhere (eval) they interrupt where it is.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return int(args.handler(args, settings))
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
