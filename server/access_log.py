"""One log line and one histogram observation per HTTP request: method, route, status,
duration and request id. Routes are the app's own paths (anything else is `other`), so a
scanner probing random URLs cannot blow up the metric's label set."""

from __future__ import annotations

import logging
import time

from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.logs import ACCESS_LOGGER
from server.metrics import HTTP_REQUEST_SECONDS

logger = logging.getLogger(ACCESS_LOGGER)


def route_paths(routes: list[BaseRoute]) -> tuple[frozenset[str], tuple[str, ...]]:
    """The app's exact paths and mount prefixes, read off its routes (so a new route is
    labelled without a second list to keep)."""
    exact = {route.path for route in routes if isinstance(route, Route | WebSocketRoute)}
    prefixes = tuple(route.path + "/" for route in routes if isinstance(route, Mount))
    return frozenset(exact), prefixes


class AccessLogMiddleware:
    def __init__(self, app: ASGIApp, paths: tuple[frozenset[str], tuple[str, ...]]) -> None:
        self.app = app
        self.exact, self.prefixes = paths

    def route_label(self, path: str) -> str:
        if path in self.exact:
            return path
        return next((prefix for prefix in self.prefixes if path.startswith(prefix)), "other")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets if the app raises before answering

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            seconds = time.perf_counter() - started
            method, path = str(scope.get("method", "")), str(scope.get("path", ""))
            HTTP_REQUEST_SECONDS.labels(method, self.route_label(path), str(status)).observe(
                seconds
            )
            if logger.isEnabledFor(logging.INFO):
                # The path is the client's: cut it, and never log the query string (it may hold
                # a GraphQL query with message text in it). The record is made without
                # logger.info's walk up the stack for the caller's file and line, which no
                # format of ours prints and which costs more than the rest of the line.
                record = logger.makeRecord(
                    logger.name,
                    logging.INFO,
                    __file__,
                    0,
                    "%s %s %d %.1fms",
                    (method, path[:200], status, seconds * 1000),
                    None,
                )
                logger.handle(record)
