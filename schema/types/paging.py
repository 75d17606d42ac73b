"""Keyset pages for the query modules: the Relay paging arguments (`first/after` forward,
`last/before` backward), with the db layer's refusals as GraphQL client errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeAlias

import asyncpg
import strawberry
from strawberry.relay.types import NodeType
from strawberry.types import Info

from db import pages
from db.pages import InvalidCursor, InvalidPageSize, InvalidSearch, ListRow, ListSpec
from schema.context import Context
from schema.errors import BAD_CURSOR, PAGE_SIZE, client_error
from schema.types.connections import Connection, CountOf

PAGE_SIZE_HELP = (
    f"Page size from the start of the range, 1 to {pages.MAX_PAGE_SIZE} (the default when "
    "neither first nor last is given); not with last."
)
LAST_HELP = f"Page size from the end of the range (before `before`), 1 to {pages.MAX_PAGE_SIZE}."

# The paging arguments of every list field, typed once.
First: TypeAlias = Annotated[int | None, strawberry.argument(description=PAGE_SIZE_HELP)]
After: TypeAlias = Annotated[
    str | None, strawberry.argument(description="Rows after this cursor (an edge's cursor).")
]
Last: TypeAlias = Annotated[int | None, strawberry.argument(description=LAST_HELP)]
Before: TypeAlias = Annotated[
    str | None, strawberry.argument(description="Rows before this cursor (an edge's cursor).")
]


@dataclass(frozen=True)
class PageArgs:
    first: int | None
    after: str | None
    last: int | None
    before: str | None
    default_size: int


async def page_of(
    info: Info[Context, None], spec: ListSpec[ListRow], filters: dict[str, Any], args: PageArgs
) -> pages.Page[ListRow]:
    first = args.first
    if first is None and args.last is None:
        first = args.default_size
    try:
        async with info.context.pool.acquire() as connection:
            return await pages.fetch_page(
                connection,
                spec,
                filters,
                first=first,
                after=args.after,
                last=args.last,
                before=args.before,
            )
    except InvalidCursor as error:
        raise client_error(f"invalid cursor: {error}", BAD_CURSOR) from None
    except InvalidPageSize as error:
        raise client_error(str(error), PAGE_SIZE) from None
    except InvalidSearch as error:
        raise client_error(f"invalid search query: {error}", argument="filter.query") from None
    except asyncpg.ProgramLimitExceededError:
        # A search the checks let through but Postgres still finds too complex.
        raise client_error(
            "the search query is too complex: use fewer words and operators"
        ) from None
    except ValueError as error:
        raise client_error(str(error)) from None


def count_of(info: Info[Context, None], spec: ListSpec[Any], filters: dict[str, Any]) -> CountOf:
    """The list's totalCount, counted only if the client asks for it."""

    async def count() -> int:
        async with info.context.pool.acquire() as connection:
            return await pages.count_rows(connection, spec, filters)

    return count


def estimate_of(info: Info[Context, None], spec: ListSpec[Any], filters: dict[str, Any]) -> CountOf:
    """The list's totalCountEstimate, computed only if the client asks for it."""

    async def estimate() -> int:
        async with info.context.pool.acquire() as connection:
            return await pages.estimate_rows(connection, spec, filters)

    return estimate


async def connection_of(
    info: Info[Context, None],
    spec: ListSpec[ListRow],
    filters: dict[str, Any],
    args: PageArgs,
    to_node: Callable[[ListRow], NodeType],
) -> Connection[NodeType]:
    """One page of the list as a connection, its counts resolved lazily."""
    page = await page_of(info, spec, filters, args)
    return Connection.from_page(
        page,
        to_node,
        exact=count_of(info, spec, filters),
        estimate=estimate_of(info, spec, filters),
    )
