"""The GraphQL schema executed in-process over the test pool, without HTTP."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import asyncpg

from schema import build_schema
from schema.context import ApiConfig, Context, Role


async def gql(pool: asyncpg.Pool, query: str, **variables: Any) -> dict[str, Any]:
    """The data of `query` run as a writer; no GraphQL error allowed."""
    return await gql_as(Role.WRITER, pool, query, **variables)


async def gql_as(role: Role, pool: asyncpg.Pool, query: str, **variables: Any) -> dict[str, Any]:
    """The data of `query` run with `role` (an admin's destinations, say); no GraphQL error."""
    result = await build_schema().execute(
        query,
        variable_values=variables,
        context_value=Context(pool=pool, role=role, config=ApiConfig()),
    )
    assert result.errors is None, result.errors
    assert result.data is not None
    return result.data


def with_database(url: str, name: str) -> str:
    return urlsplit(url)._replace(path=f"/{name}").geturl()
