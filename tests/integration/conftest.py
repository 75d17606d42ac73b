"""Fixtures of the integration tests: HTTP clients of the real app over the test database, and
a database populated as an older schema left it."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator

import asyncpg
import httpx
import pytest
from pydantic import SecretStr

from db.engine import connect
from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support import plan_check
from tests.support.schema import with_database
from tests.support.servers import running_server


@pytest.fixture
async def api(db: asyncpg.Pool, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    secured = settings.model_copy(
        update={"digestd_api_tokens": SecretStr("reader:reader-token-1,writer:writer-token-1")}
    )
    app = create_app(secured, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=120) as http,
    ):
        yield http


@pytest.fixture
async def client(db: asyncpg.Pool, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, AppOptions(run_workers=1))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as http,
    ):
        yield http


@pytest.fixture
async def old_database(database_url: str) -> AsyncIterator[tuple[str, asyncpg.Connection]]:
    """A database with only migrations 0001 and 0002, populated as the old code did."""
    name = f"old_{uuid.uuid4().hex[:10]}"
    admin = await connect(database_url)
    await admin.execute(f"CREATE DATABASE {name}")
    try:
        connection = await connect(with_database(database_url, name))
        yield name, connection
        await connection.close()
    finally:
        await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        await admin.close()


@pytest.fixture(autouse=True)
def plans_checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """With DIGESTD_CHECK_PLANS=1, every query is also answered by its compiled plan and the two
    answers compared (tests/support/plan_check.py); off by default, since it doubles the queries
    a test sends (the statement counts, for one, would double)."""
    if os.environ.get(plan_check.ENV) != "1":
        yield
        return
    check = plan_check.PlanCheck()
    check.install(monkeypatch)
    yield
    assert not check.mismatches, "\n".join(check.mismatches)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if os.environ.get(plan_check.ENV) == "1":
        terminalreporter.write_line(f"compiled query plans checked: {dict(plan_check.TOTALS)}")
