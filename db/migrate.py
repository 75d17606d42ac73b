"""Versioned migrations: numbered `.sql` files in db/migrations, applied once each, in order.

Safe to run from several processes at once: a transaction-scoped advisory lock serializes them,
and each migration commits together with its row in `schema_migrations`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib import resources

import asyncpg

from db.queries import QUERIES

logger = logging.getLogger(__name__)

# An arbitrary constant shared by every digestd process ("dgst" in ASCII).
MIGRATION_LOCK = 0x64677374


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def available_migrations() -> list[Migration]:
    folder = resources.files("db.migrations")
    found: list[Migration] = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            version = int(entry.name.split("_", 1)[0])
            found.append(Migration(version, entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found, key=lambda migration: migration.version)


async def migrate(connection: asyncpg.Connection) -> list[str]:
    """Apply every migration not yet applied; return the names applied now.

    A connection lost on the way (the server restarting, a backend killed) raises
    `ConnectionDoesNotExistError` saying so and at which step, in place of what asyncpg raises
    while leaving a transaction on a closed connection (`cannot call Transaction.__aexit__()`).
    The migrations of one run commit together, so running again applies whatever is missing."""
    applied_now: list[str] = []
    step = "waiting for the migration lock"
    try:
        async with connection.transaction():
            await connection.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
            await connection.execute(
                """CREATE TABLE IF NOT EXISTS schema_migrations (
                       version    integer PRIMARY KEY,
                       name       text NOT NULL,
                       applied_at timestamptz NOT NULL DEFAULT now())"""
            )
            done = {
                row["version"]
                for row in await connection.fetch("SELECT version FROM schema_migrations")
            }
            for migration in available_migrations():
                if migration.version in done:
                    continue
                step = f"applying {migration.name}"
                await connection.execute(migration.sql)
                await connection.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                    migration.version,
                    migration.name,
                )
                applied_now.append(migration.name)
            step = "committing"
    except Exception as error:
        if not connection.is_closed():
            raise
        raise asyncpg.ConnectionDoesNotExistError(
            f"the connection was lost while migrating ({step}); running the command again "
            "applies whatever is missing"
        ) from error
    for name in applied_now:
        logger.info("applied migration %s", name)
    return applied_now


async def database_version(connection: asyncpg.Connection) -> int | None:
    """Readiness: the newest applied migration (fails when the database does not answer)."""
    version: int | None = await connection.fetchval(QUERIES["database_ready"])
    return version
