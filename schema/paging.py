"""Helpers shared by the query modules: id parsing and keyset pages with GraphQL errors."""

from __future__ import annotations

from typing import Any

import strawberry
from graphql import GraphQLError
from strawberry.types import Info

from db import pages
from db.pages import InvalidCursor, ListSpec
from schema.context import Context

PAGE_SIZE_HELP = f"Page size, 1 to {pages.MAX_PAGE_SIZE}."


def parse_id(value: strawberry.ID | str, what: str) -> int:
    """Internal ids are positive integers; anything else is a clear client error."""
    try:
        parsed = int(str(value))
    except ValueError:
        raise GraphQLError(f"invalid {what} id {str(value)[:40]!r}: ids are numeric strings") from None
    if parsed <= 0 or parsed >= 2**63:
        raise GraphQLError(f"invalid {what} id {parsed}: out of range")
    return parsed


async def page_of(
    info: Info[Context, None], spec: ListSpec, filters: dict[str, Any], first: int, after: str | None
) -> pages.Page:
    try:
        async with info.context.pool.acquire() as connection:
            return await pages.fetch_page(connection, spec, filters, first=first, after=after)
    except InvalidCursor as error:
        raise GraphQLError(f"invalid cursor: {error}") from None
    except ValueError as error:
        raise GraphQLError(str(error)) from None


def optional_id(value: strawberry.ID | None, what: str) -> int | None:
    return parse_id(value, what) if value is not None else None
