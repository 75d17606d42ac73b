"""The Starlette application: the web console at /, GraphQL (with GraphiQL) at /graphql and its
subscriptions over WebSocket at the same path, digests and reports as files under /export,
/healthz, /readyz, /metrics, and the pages' files under /static (CORS for dashboards when
DIGESTD_CORS_ORIGINS is set).

The lifespan opens the database pool, applies migrations, and unless told otherwise runs
in-process workers, so `digestd serve` alone is a working service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from db.migrate import database_version
from runner.core import offload
from runner.supervision import RunnerSupervisor
from schema import build_schema
from schema.errors import BAD_REQUEST, REQUEST_TOO_LARGE
from schema.gate.request_gate import GateLimits
from server.access_log import AccessLogMiddleware, route_paths
from server.auth import TokenAuthMiddleware, parse_tokens
from server.connection_limits import WebSocketCaps, websocket_limit
from server.console import console_page
from server.exports import export_routes
from server.graphiql import static_files
from server.graphql_http import GraphQLEndpoint
from server.graphql_ws import SubscriptionEndpoint
from server.hosts import HostGuardMiddleware, HostPolicy, parse_allowed_hosts
from server.job_events import JobEventHub
from server.metrics import metrics_endpoint
from server.request_id import RequestIdMiddleware
from server.runtime import Runtime
from server.settings import Settings

logger = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 32 * 1024 * 1024


async def method_not_allowed(request: Request, exc: Exception) -> Response:
    """A method a route does not serve (a PUT, or a preflight with CORS unset): 405 with the
    API's error body and the route's `Allow` header, so a client reads why as from any refusal."""
    assert isinstance(exc, HTTPException)
    allowed = (exc.headers or {}).get("Allow", "")
    return JSONResponse(
        {
            "errors": [
                {
                    "message": f"{request.method} is not served at {request.url.path}: use {allowed}",
                    "extensions": {"code": BAD_REQUEST},
                }
            ]
        },
        status_code=405,
        headers=exc.headers,
    )


class BodySizeLimitMiddleware:
    """Refuses request bodies over a size, declared or streamed, with a 413."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_REQUEST_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large(send)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                raise _BodyTooLarge()
            return message

        try:
            await self.app(scope, limited_receive, send)
        except _BodyTooLarge:
            await self._too_large(send)

    async def _too_large(self, send: Send) -> None:
        response = JSONResponse(
            {
                "errors": [
                    {
                        "message": f"request body over {self.max_bytes} bytes",
                        "extensions": {"code": REQUEST_TOO_LARGE},
                    }
                ]
            },
            status_code=413,
        )
        await response({"type": "http"}, _no_receive, send)


class _BodyTooLarge(Exception):
    pass


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


def cors(origins: list[str]) -> list[Middleware]:
    """Before the body limit and authentication, so a preflight (which carries no token) is
    answered, and a 401 or 413 still carries the headers a dashboard needs to read it; after the
    request id and access log, so a preflight has an id and a log line like any request. Exact
    origins are echoed; tokens travel in a header, so no credentials mode (cookies) is allowed."""
    if not origins:
        return []
    return [
        Middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "POST"],
            allow_headers=["authorization", "content-type"],
            expose_headers=["x-request-id"],
            max_age=600,
        )
    ]


# How long /readyz waits for the database: a probe is asked often and must answer, 503 included.
READY_PROBE_SECONDS = 2.0
# Probes given up on, finishing in the background (a task must be referenced until it ends).
_abandoned_probes: set[asyncio.Task[int | None]] = set()


async def _schema_version(pool: asyncpg.Pool) -> int | None:
    async with pool.acquire(timeout=READY_PROBE_SECONDS) as connection:
        return await database_version(connection)


def _forget_probe(probe: asyncio.Task[int | None]) -> None:
    _abandoned_probes.discard(probe)
    if not probe.cancelled():
        probe.exception()  # retrieved: its failure is the 503 already given


async def probe_database(pool: asyncpg.Pool) -> tuple[bool, int | None]:
    """(answered, schema version) within READY_PROBE_SECONDS. The probe runs as its own task
    and is abandoned, not awaited, when late: cancelling a statement to a silent server, and
    handing its connection back, can take longer than the probe may."""
    probe = asyncio.ensure_future(_schema_version(pool))
    done, _ = await asyncio.wait({probe}, timeout=READY_PROBE_SECONDS)
    if not done:
        probe.cancel()
        _abandoned_probes.add(probe)
        probe.add_done_callback(_forget_probe)
        return False, None
    if probe.cancelled() or probe.exception() is not None:
        return False, None
    return True, probe.result()


@dataclass
class AppOptions:
    run_workers: int = 1
    # The address `serve --host` listens on: one of the names the server answers to.
    listen_host: str = "127.0.0.1"


def host_guard(settings: Settings, tokens_set: bool, listen_host: str) -> list[Middleware]:
    """The Host allow-list (server/hosts.py): always without tokens, where a rebinding page
    could otherwise write; with tokens only when DIGESTD_ALLOWED_HOSTS is given (a page has no
    token, and a proxy's many names need not be listed)."""
    listed = parse_allowed_hosts(settings.digestd_allowed_hosts)
    if tokens_set and not listed:
        return []
    return [Middleware(HostGuardMiddleware, policy=HostPolicy.for_server(listen_host, listed))]


def create_app(settings: Settings, options: AppOptions | None = None) -> Starlette:
    """The ASGI app. Workers run in-process when `options.run_workers > 0`."""
    options = options or AppOptions()
    runtime = Runtime(settings)
    tokens = parse_tokens(
        settings.digestd_api_tokens.get_secret_value() if settings.digestd_api_tokens else None
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await runtime.open()
        app.state.pool = runtime.pool
        assert runtime.database_url is not None
        job_events = JobEventHub(runtime.database_url, runtime.pool)
        app.state.job_events = job_events
        # The in-process runner: loops restarted if they die; /readyz reports when one is down.
        runner = runtime.runner(options.run_workers)
        app.state.runner = runner
        runner.start()
        try:
            yield
        finally:
            # Running jobs checkpoint within the grace and are released to other workers.
            await runner.stop(timeout=settings.digestd_shutdown_grace_seconds + 5)
            await job_events.close()
            offload.shutdown()
            await runtime.close()

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        pool: asyncpg.Pool | None = getattr(request.app.state, "pool", None)
        if pool is None:
            return JSONResponse({"status": "not_ready", "reason": "starting"}, status_code=503)
        answered, version = await probe_database(pool)
        if not answered:
            return JSONResponse({"status": "not_ready", "reason": "database"}, status_code=503)
        runner: RunnerSupervisor | None = getattr(request.app.state, "runner", None)
        if runner is not None and not runner.running:
            return JSONResponse({"status": "not_ready", "reason": "runner"}, status_code=503)
        return JSONResponse({"status": "ready", "schema_version": version})

    api_config = runtime.api_config()
    schema = build_schema()
    limits = GateLimits(
        max_ingest_body_bytes=MAX_REQUEST_BYTES,
        max_ingest_messages=api_config.max_ingest_batch,
        max_message_chars=api_config.max_message_chars,
    )
    graphql = GraphQLEndpoint(schema, api_config, limits)
    subscriptions = SubscriptionEndpoint(
        schema, api_config, limits, tokens=tokens, allowed_origins=settings.cors_origins
    )
    routes: list[BaseRoute] = [
        # The console page holds no data (its API calls carry the token), like /healthz.
        Route("/", console_page, methods=["GET"]),
        Route("/graphql", graphql, methods=["GET", "POST"]),
        WebSocketRoute("/graphql", subscriptions),
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        # Open like /healthz (scrapers rarely carry tokens): counts only, no content.
        Route("/metrics", metrics_endpoint),
        # Behind the tokens like /graphql: a digest or report as a file.
        export_routes(),
        static_files(),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(RequestIdMiddleware),
            # Inside the request id, so its line carries it; labels are the app's own paths.
            Middleware(AccessLogMiddleware, paths=route_paths(routes)),
            # Before CORS and authentication: a request to a name not the server's is answered
            # nothing else, preflight or not.
            *host_guard(settings, bool(tokens), options.listen_host),
            # Before anything a WebSocket costs: one over a cap is closed at once.
            Middleware(
                WebSocketCaps,
                per_process=websocket_limit(settings),
                per_client=settings.digestd_max_websockets_per_client,
            ),
            *cors(settings.cors_origins),
            Middleware(BodySizeLimitMiddleware),
            Middleware(TokenAuthMiddleware, tokens=tokens),
        ],
        exception_handlers={405: method_not_allowed},
        lifespan=lifespan,
    )
