"""The GraphQL schema executed in-process over the test pool, without HTTP."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import asyncpg

from schema import build_schema
from schema.context import ApiConfig, Context, Role


async def gql(pool: asyncpg.Pool, query: str, **variables: Any) -> dict[str, Any]:
    result = await build_schema().execute(
        query,
        variable_values=variables,
        context_value=Context(pool=pool, role=Role.WRITER, config=ApiConfig()),
    )
    assert result.errors is None, result.errors
    assert result.data is not None
    return result.data


def with_database(url: str, name: str) -> str:
    return urlsplit(url)._replace(path=f"/{name}").geturl()
