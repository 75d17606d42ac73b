"""What the pages' Content-Security-Policies (GraphiQL, the console) let them connect to."""

from __future__ import annotations

import re

# A Host header as a policy may quote it: a host name or address and a port, nothing that could
# end the directive (a `;` or a space) or widen it (a `*`).
_PLAIN_HOST = re.compile(r"[A-Za-z0-9.\-]+(?::\d{1,5})?|\[[0-9A-Fa-f:.]+\](?::\d{1,5})?")


def connect_sources(host: str | None) -> str:
    """`connect-src` for a page asked from `host`: 'self', and the WebSocket URLs of that host
    (subscriptions at /graphql). 'self' covers same-origin WebSockets in CSP 3; the explicit
    ws:/wss: sources are for browsers that predate it."""
    sources = ["'self'"]
    if host and _PLAIN_HOST.fullmatch(host):
        sources += [f"ws://{host}", f"wss://{host}"]
    return " ".join(sources)
