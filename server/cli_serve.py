"""`digestd serve` and `digestd worker`: the long-running processes (the API with in-process
workers, and workers alone), with the checks that make them fail fast and the garbage-collector
tuning of a long-lived server."""

from __future__ import annotations

import argparse
import asyncio
import errno
import gc
import ipaddress
import logging
import signal
import socket
import sys

from server.cli_runtime import watches_stopping, with_runtime
from server.logs import enable_access_log
from server.runtime import Runtime, check_database
from server.settings import Settings

logger = logging.getLogger("digestd")


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

    @watches_stopping
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

    return asyncio.run(with_runtime(settings, body))
