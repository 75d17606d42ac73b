"""GraphiQL at /graphql, served entirely by digestd.

The page (server/graphiql.html) loads React, GraphiQL and the explorer plugin from /static/
(server/static/graphiql/, vendored by scripts/vendor_graphiql.py) rather than from a CDN, so it
works offline. Its Content-Security-Policy lets it load and connect to digestd only: the browser
itself refuses any third-party request the page might try. Subscriptions go over WebSocket to the
same host and path (ws: or wss:), which the policy names explicitly: not every browser counts a
WebSocket to its own host as 'self'.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from urllib.parse import parse_qs

from starlette.responses import HTMLResponse
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from server.csp import connect_sources

HERE = Path(__file__).resolve().parent
STATIC_URL = "/static"

# GraphiQL and React set inline styles and embed their fonts and icons as data: URLs; scripts
# come from digestd's own files only (no inline script, no eval). {connect} is 'self' and the
# WebSocket URLs of the host the page was asked from.
PAGE_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src {connect}",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)


def page_policy(host: str | None) -> str:
    """The page's policy, letting it open WebSockets to `host` (the request's Host header)."""
    return PAGE_POLICY.format(connect=connect_sources(host))


@cache
def _page_html() -> str:
    return (HERE / "graphiql.html").read_text(encoding="utf-8")


def graphiql_page(host: str | None) -> HTMLResponse:
    return HTMLResponse(_page_html(), headers={"content-security-policy": page_policy(host)})


def is_page_request(method: str, query_string: bytes) -> bool:
    """A GET of /graphql without `query` in the URL asks for the page (with one, it runs the
    query). The page keeps its own state in the URL as `q` and `variables`."""
    return method == "GET" and "query" not in parse_qs(
        query_string.decode("latin-1"), keep_blank_values=True
    )


def static_files() -> Mount:
    """The page's files (and the vendored packages' licenses) under /static."""
    return Mount(STATIC_URL, StaticFiles(directory=HERE / "static"), name="static")
