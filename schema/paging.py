"""Keyset pages for the query modules, with the db layer's refusals as GraphQL client errors."""

from __future__ import annotations

from typing import Any

import asyncpg
from strawberry.types import Info

from db import pages
from db.pages import InvalidCursor, InvalidPageSize, InvalidSearch, ListRow, ListSpec
from schema.context import Context
from schema.errors import BAD_CURSOR, PAGE_SIZE, client_error

PAGE_SIZE_HELP = f"Page size, 1 to {pages.MAX_PAGE_SIZE}."


async def page_of(
    info: Info[Context, None],
    spec: ListSpec[ListRow],
    filters: dict[str, Any],
    first: int,
    after: str | None,
) -> pages.Page[ListRow]:
    try:
        async with info.context.pool.acquire() as connection:
            return await pages.fetch_page(connection, spec, filters, first=first, after=after)
    except InvalidCursor as error:
        raise client_error(f"invalid cursor: {error}", BAD_CURSOR, argument="after") from None
    except InvalidPageSize as error:
        raise client_error(str(error), PAGE_SIZE, argument="first") from None
    except InvalidSearch as error:
        raise client_error(f"invalid search query: {error}", argument="filter.query") from None
    except asyncpg.ProgramLimitExceededError:
        # A search the checks let through but Postgres still finds too complex.
        raise client_error("the search query is too complex: use fewer words and operators") from None
    except ValueError as error:
        raise client_error(str(error)) from None

