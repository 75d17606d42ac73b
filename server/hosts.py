"""The Host allow-list: a digestd answers only to its own names, over HTTP and WebSocket.

Without tokens (the default on loopback) anything that can reach the port may write. A web page
cannot reach it directly, CORS says so; but after DNS rebinding (the page's own name now
resolving to 127.0.0.1) its requests are same-origin, and CORS never applies. What still tells
them apart is the Host header: the browser sends the page's name (`rebind.attacker.example`),
never one of the server's. So when tokens are unset (or DIGESTD_ALLOWED_HOSTS is set) a request
is answered only when its Host is:

- `localhost`, or a loopback address (`127.0.0.1`, `[::1]`), with or without a port;
- the address or name given to `--host`; when that is a wildcard (`0.0.0.0`, `::`), any IP
  address (an address literal cannot be rebound: a page is same-origin with it only if it was
  served from it);
- a name listed in DIGESTD_ALLOWED_HOSTS (exact, or `*.example.com` for its subdomains), for a
  server reached through a proxy or DNS name.

Anything else is a 400 with code `BAD_HOST` before any other middleware runs; the WebSocket
upgrade is refused with the same response. It is the client's mistake: not a server fault.

Starlette's TrustedHostMiddleware does the same comparison, but answers in plain text (the API's
errors are JSON with a code) and has no notion of "any address literal" for a wildcard bind.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from schema.errors import BAD_HOST

logger = logging.getLogger(__name__)

WILDCARD_ADDRESSES = frozenset({"", "0.0.0.0", "::"})
BAD_HOST_MESSAGE = (
    "this server does not answer to that host name; its operator can list it in "
    "DIGESTD_ALLOWED_HOSTS"
)


def parse_allowed_hosts(spec: str | None) -> list[str]:
    """The names of DIGESTD_ALLOWED_HOSTS, lowercased; empty when unset."""
    return [name.strip().strip("[]").lower() for name in (spec or "").split(",") if name.strip()]


def host_name_of(header: str | None) -> str | None:
    """The host of a Host header (`name`, `name:port`, `[::1]:8000`), lowercased and without
    brackets or port; None when there is none or it is malformed."""
    if not header or any(c in header for c in "/?#@\\ \t"):
        return None
    try:
        parts = urlsplit(f"//{header}")
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError:
        return None
    return parts.hostname or None


@dataclass(frozen=True)
class HostPolicy:
    """Which Host names a server answers to (see the module's docstring)."""

    names: frozenset[str]
    suffixes: tuple[str, ...]
    any_address: bool

    @classmethod
    def for_server(cls, listen_host: str, extra: Iterable[str] = ()) -> HostPolicy:
        listed = [name.lower() for name in extra]
        own = {"localhost", listen_host.strip("[]").lower()} - WILDCARD_ADDRESSES
        return cls(
            names=frozenset(own | {name for name in listed if not name.startswith("*.")}),
            suffixes=tuple(name[1:] for name in listed if name.startswith("*.")),
            any_address=listen_host.strip("[]") in WILDCARD_ADDRESSES,
        )

    def allows(self, host: str) -> bool:
        if host in self.names or host.endswith(self.suffixes):
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return address.is_loopback or self.any_address


class HostGuardMiddleware:
    """Answers 400 `BAD_HOST` to an HTTP request or a WebSocket upgrade whose Host header the
    policy does not allow; passes everything else (and the lifespan) through."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        header = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), None)
        host = host_name_of(header)
        if host is not None and self.policy.allows(host):
            await self.app(scope, receive, send)
            return
        # INFO: a client's mistake (or a rebinding page), not a fault; the name is the caller's.
        logger.info("http.bad_host host=%r", (header or "")[:80])
        response = JSONResponse(
            {"errors": [{"message": BAD_HOST_MESSAGE, "extensions": {"code": BAD_HOST}}]},
            status_code=400,
        )
        await response(scope, receive, send)
