"""How many SQL statements one GraphQL request sends, counted on the asyncpg connections of the
real app (for bench/api.py and tests/integration/schema/resolvers/test_statement_count.py).

Every connection the app's pool opens gets a query logger (asyncpg's `add_query_logger`), which
sees each statement the connection sends, the pool's own reset on release included; the
driver's own type lookups are left out. The app
runs in-process with its lifespan (pool, migrations; no runner) and requests go through its
whole ASGI stack (middleware, /graphql endpoint, Strawberry, DataLoaders) over httpx's ASGI
transport: the same path as a served request, minus the socket.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import asyncpg.introspection
import httpx

from db import engine
from server.app import AppOptions, create_app
from server.settings import Settings

# asyncpg looks a type up the first time one connection meets it, whichever request that is; with
# DataLoaders running concurrently, which pool connection meets it first varies from run to run.
_DRIVER_INTROSPECTION = frozenset(
    {
        asyncpg.introspection.INTRO_LOOKUP_TYPES,
        asyncpg.introspection.INTRO_LOOKUP_TYPES_13,
        asyncpg.introspection.TYPE_BY_NAME,
    }
)


def is_request_statement(query: str) -> bool:
    """False for the driver's own type lookups (and the jit toggles around them)."""
    return query not in _DRIVER_INTROSPECTION and "set_config('jit'" not in query


@contextlib.contextmanager
def logged_statements() -> Iterator[list[str]]:
    """The texts of the statements sent by every pool connection opened inside the block."""
    statements: list[str] = []
    original = engine._init_connection

    async def init_and_log(connection: asyncpg.Connection) -> None:
        await original(connection)  # its type introspection is not the requests' work
        connection.add_query_logger(
            lambda logged: (
                statements.append(logged.query) if is_request_statement(logged.query) else None
            )
        )

    # create_pool looks the init function up when called, so the app's pool gets this one.
    engine._init_connection = init_and_log
    try:
        yield statements
    finally:
        engine._init_connection = original


class StatementCounter:
    """Sends GraphQL requests to the app and counts the statements each one sent."""

    def __init__(self, client: httpx.AsyncClient, statements: list[str]) -> None:
        self.client = client
        self.statements = statements

    async def count(self, query: str, variables: dict[str, Any] | None = None) -> int:
        """Statements of one request, after a first run of the same request has warmed the
        pool, the parse/validation caches and asyncpg's prepared statements."""
        await self._send(query, variables)
        self.statements.clear()
        await self._send(query, variables)
        return len(self.statements)

    async def _send(self, query: str, variables: dict[str, Any] | None) -> None:
        response = await self.client.post(
            "/graphql", json={"query": query, "variables": variables or {}}
        )
        body = response.json()
        if response.status_code != 200 or body.get("errors"):
            raise RuntimeError(f"GraphQL request failed: {response.status_code} {body}")


@contextlib.asynccontextmanager
async def statement_counter(settings: Settings) -> AsyncIterator[StatementCounter]:
    """The real app with `settings`, serving in-process, with a statement count per request."""
    with logged_statements() as statements:
        app = create_app(settings, AppOptions(run_workers=0))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://localhost"
            ) as client:  # a name the app answers to
                yield StatementCounter(client, statements)
