"""Bearer-token access for the GraphQL endpoint and the export downloads, as a pure ASGI
middleware.

`DIGESTD_API_TOKENS` is `role:token,role:token` with roles `reader`, `writer` and `admin`. When
it is set, every GraphQL request and every export download needs `Authorization: Bearer
<token>`: a missing or unknown token gets a 401 and no data. Tokens are compared in constant time and never logged. With no tokens
configured every caller may do everything, deletions included (the server then binds to
127.0.0.1 by default and checks the Host header: it is one person's local service).
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from schema.context import Role
from server.graphiql import is_page_request


class TokenConfigError(ValueError):
    """DIGESTD_API_TOKENS is malformed. The message never contains a token."""


@dataclass(frozen=True)
class ApiToken:
    role: Role
    secret: bytes


def parse_tokens(spec: str | None) -> list[ApiToken]:
    if not spec or not spec.strip():
        return []
    tokens: list[ApiToken] = []
    for position, entry in enumerate(spec.split(","), start=1):
        role, separator, secret = entry.strip().partition(":")
        if not separator or not secret.strip():
            raise TokenConfigError(f"DIGESTD_API_TOKENS entry {position} is not role:token")
        try:
            parsed_role = Role(role.strip().lower())
        except ValueError:
            raise TokenConfigError(
                f"DIGESTD_API_TOKENS entry {position}: role must be reader, writer or admin"
            ) from None
        if len(secret.strip()) < 8:
            raise TokenConfigError(f"DIGESTD_API_TOKENS entry {position}: token under 8 characters")
        tokens.append(ApiToken(parsed_role, secret.strip().encode()))
    return tokens


def role_for(tokens: list[ApiToken], header: str | None) -> Role | None:
    """The role of the bearer token in `header`, or None. Every configured token is compared, so
    the time taken does not say which one (nor how much of one) matched."""
    if not header or not header.lower().startswith("bearer "):
        return None
    presented = header[7:].strip().encode()
    found: Role | None = None
    for token in tokens:
        if hmac.compare_digest(presented, token.secret):
            found = token.role
    return found


# What holds data: the API, and the downloads of digests and reports (server/exports.py).
GRAPHQL_PATH = "/graphql"
PROTECTED_PREFIXES = (GRAPHQL_PATH, "/export/")


class TokenAuthMiddleware:
    """Sets `scope["state"]["role"]` for GraphQL requests and exports, or answers 401."""

    def __init__(
        self,
        app: ASGIApp,
        tokens: list[ApiToken],
        protected_prefixes: tuple[str, ...] = PROTECTED_PREFIXES,
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.protected_prefixes = protected_prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.protected_prefixes):
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        if not self.tokens:
            state["role"] = Role.ADMIN
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        role = role_for(self.tokens, headers.get("authorization"))
        if role is None and self._is_ide_page(scope, headers):
            # The GraphiQL page itself holds no data; its requests must carry a token.
            state["role"] = Role.READER
            await self.app(scope, receive, send)
            return
        if role is None:
            await self._unauthorized(send)
            return
        state["role"] = role
        await self.app(scope, receive, send)

    @staticmethod
    def _is_ide_page(scope: Scope, headers: dict[str, str]) -> bool:
        if scope["path"] != GRAPHQL_PATH:  # only GraphiQL's page is open; an export never is
            return False
        wants_html = "text/html" in headers.get("accept", "")
        return wants_html and is_page_request(scope["method"], scope.get("query_string", b""))

    @staticmethod
    async def _unauthorized(send: Send) -> None:
        body = json.dumps(
            {
                "errors": [
                    {
                        "message": "unauthorized: send Authorization: Bearer <token>",
                        "extensions": {"code": "UNAUTHENTICATED"},
                    }
                ]
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="digestd"'),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
