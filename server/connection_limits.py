"""Bounds on the connections `digestd serve` holds, so that a flood of them cannot take the file
descriptors the process needs for its own work (database connections, files, pipes).

Every open connection is a descriptor. Past the process's limit (`ulimit -n`, RLIMIT_NOFILE)
`accept()` fails with EMFILE, and then nothing is accepted, a writer's query included, until
some connection goes away. So:

- uvicorn's `limit_concurrency` (`connection_limit`): the HTTP connections and requests in
  flight, sized from RLIMIT_NOFILE at start less the pool and a reserve; a request over it is
  answered 503 at once. uvicorn does not count a WebSocket upgrade against it, hence:
- WebSocket connections per process and per client address (`WebSocketCaps`): one over either
  cap is accepted and closed at once with 1013 (Try Again Later) and a reason, which a browser's
  script can read (a refused handshake would only say 1006);
- idle ones are let go by the graphql-transport-ws handler when no `connection_init` comes in
  time (server/graphql_ws.py).
"""

from __future__ import annotations

import logging
import resource
from collections import Counter

from starlette.types import ASGIApp, Receive, Scope, Send

from server.settings import Settings

logger = logging.getLogger(__name__)

# Descriptors kept for everything that is not a client connection: the job events' LISTEN
# connection, extract processes' pipes, the LLM client's connections, static and log files.
RESERVED_DESCRIPTORS = 64
MIN_CONNECTIONS = 16
# RFC 6455: "the server is terminating the connection due to a temporary condition".
TRY_AGAIN_LATER = 1013


def descriptor_limit() -> int:
    """This process's soft RLIMIT_NOFILE (a large number when unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 1 << 20 if soft == resource.RLIM_INFINITY else int(soft)


def connection_limit(settings: Settings) -> int:
    """Client connections (HTTP and WebSocket) a `serve` process holds at once:
    DIGESTD_MAX_CONNECTIONS, else what RLIMIT_NOFILE leaves after the pool and the reserve."""
    if settings.digestd_max_connections is not None:
        return settings.digestd_max_connections
    spare = descriptor_limit() - settings.digestd_db_pool_size - RESERVED_DESCRIPTORS
    return max(MIN_CONNECTIONS, spare)


def websocket_limit(settings: Settings) -> int:
    """WebSocket connections per process: DIGESTD_MAX_WEBSOCKETS, else half the connection
    limit, so idle subscribers can never leave no room for HTTP requests."""
    if settings.digestd_max_websockets is not None:
        return settings.digestd_max_websockets
    return max(1, connection_limit(settings) // 2)


class WebSocketCaps:
    """ASGI middleware counting open WebSocket connections, per process and per client
    address; one over a cap is closed with 1013 and a reason before the app sees it."""

    def __init__(self, app: ASGIApp, per_process: int, per_client: int) -> None:
        self.app = app
        self.per_process = per_process
        self.per_client = per_client
        self.open = 0
        self.by_client: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        client = scope["client"][0] if scope.get("client") else "-"
        refusal = self._refusal(client)
        if refusal is not None:
            # For the operator (a cap reached), not a fault; a flood of these is folded to one
            # line per interval by server/logs.py.
            logger.warning("websocket.refused client=%s reason=%s", client[:64], refusal)
            await _accept_and_close(scope, receive, send, refusal)
            return
        self.open += 1
        self.by_client[client] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.open -= 1
            self.by_client[client] -= 1
            if not self.by_client[client]:
                del self.by_client[client]

    def _refusal(self, client: str) -> str | None:
        if self.by_client[client] >= self.per_client:
            return f"too many connections from this address (at most {self.per_client})"
        if self.open >= self.per_process:
            return f"too many connections to this server (at most {self.per_process})"
        return None


async def _accept_and_close(scope: Scope, receive: Receive, send: Send, reason: str) -> None:
    """Complete the handshake (with the subprotocol asked for, so a client does not fail it)
    and close at once with 1013 and `reason`."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    offered = scope.get("subprotocols") or []
    await send({"type": "websocket.accept", "subprotocol": offered[0] if offered else None})
    await send({"type": "websocket.close", "code": TRY_AGAIN_LATER, "reason": reason})
