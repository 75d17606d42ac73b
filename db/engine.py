"""Where the database is: `DATABASE_URL` when given, else an embedded PostgreSQL (pgserver).

The embedded server lives in `<home>/pgdata` and is shared by every digestd process on the
machine that uses the same home: pgserver counts handles across processes and stops the server
when the last one exits. Same SQL either way.
"""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path
from typing import Any

import asyncpg

logger = logging.getLogger(__name__)

EMBEDDED_DATABASE = "digestd"


def embedded_database_url(home: Path) -> str:
    """Start (or join) the embedded server under `home` and return a URL of its digestd DB."""
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); harmless here.
        warnings.simplefilter("ignore")
        import pgserver

        home.mkdir(parents=True, exist_ok=True)
        server = pgserver.get_server(home / "pgdata", cleanup_mode="stop")
    exists = server.psql(
        f"SELECT 1 FROM pg_database WHERE datname = '{EMBEDDED_DATABASE}';"
    )
    if "1 row" not in exists:
        server.psql(f"CREATE DATABASE {EMBEDDED_DATABASE};")
        logger.info("created embedded database in %s", home / "pgdata")
    return server.get_uri(EMBEDDED_DATABASE)


def resolve_database_url(database_url: str | None, home: Path) -> str:
    return database_url or embedded_database_url(home)


def redact_url(url: str) -> str:
    """The URL without its password, for logs and errors."""
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    credentials, host = rest.rsplit("@", 1)
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in credentials else url


async def _init_connection(connection: asyncpg.Connection) -> None:
    # JSON columns arrive as Python objects and go out from them, everywhere.
    for type_name in ("json", "jsonb"):
        await connection.set_type_codec(
            type_name, encoder=json.dumps, decoder=json.loads, schema="pg_catalog"
        )


async def create_pool(url: str, *, max_size: int = 10, **kwargs: Any) -> asyncpg.Pool:
    """An asyncpg pool with JSON codecs installed on every connection."""
    pool = await asyncpg.create_pool(
        url, min_size=1, max_size=max_size, init=_init_connection, **kwargs
    )
    assert pool is not None
    return pool


async def connect(url: str) -> asyncpg.Connection:
    """One connection with the same codecs as the pool (LISTEN, migrations)."""
    connection = await asyncpg.connect(url)
    await _init_connection(connection)
    return connection
