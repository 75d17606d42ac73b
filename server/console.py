"""The web console at /: a small reference client of the public GraphQL API.

The page (server/static/console/index.html) and its plain ES modules are served by digestd with no
build step and no CDN, so it works offline. Everything it shows comes from /graphql with the
token the user typed (kept in the browser session); the page itself holds no data, so it needs
no token. Chat and document text is untrusted: the scripts build DOM nodes and set textContent
only, and the policy below (with Trusted Types required) makes any HTML string sink throw.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse

from server.csp import connect_sources

PAGE = Path(__file__).resolve().parent / "static" / "console" / "index.html"


def page_policy(host: str | None) -> str:
    """Scripts, styles and requests from digestd only. 'self' covers same-origin WebSockets in
    CSP 3, the explicit ws:/wss: source is for browsers that predate it (the job page
    subscribes to progress over graphql-transport-ws at /graphql)."""
    return "; ".join(
        (
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            f"connect-src {connect_sources(host)}",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
            "require-trusted-types-for 'script'",
            "trusted-types 'none'",
        )
    )


@cache
def _page_html() -> str:
    return PAGE.read_text(encoding="utf-8")


async def console_page(request: Request) -> HTMLResponse:
    return HTMLResponse(
        _page_html(),
        headers={
            "content-security-policy": page_policy(request.headers.get("host")),
            "referrer-policy": "no-referrer",
            "x-content-type-options": "nosniff",
        },
    )
