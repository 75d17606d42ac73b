"""Helpers shared by the query modules: id parsing and keyset pages with GraphQL errors."""

from __future__ import annotations

import re
from typing import Any

import asyncpg
import strawberry
from strawberry.types import Info

from db import pages
from db.pages import InvalidCursor, InvalidSearch, ListRow, ListSpec
from schema.context import Context
from schema.errors import client_error

PAGE_SIZE_HELP = f"Page size, 1 to {pages.MAX_PAGE_SIZE}."

# The only spelling of an id: ASCII digits, no sign, spaces, leading zeros or separators. Python's
# int() also reads "١" (an Arabic-Indic one), "1_0" and " 7 ", which would make several strings
# name one row (and a cache or a log keyed on the string disagree with the database).
CANONICAL_ID = re.compile(r"(0|[1-9][0-9]{0,18})\Z")
MAX_ID = 2**63 - 1  # bigint


def parse_id(value: strawberry.ID | str, what: str) -> int:
    """An id argument as its row id; anything but the canonical form is a clear client error."""
    text = str(value)
    if CANONICAL_ID.match(text) and int(text) <= MAX_ID:
        return int(text)
    raise client_error(
        f"invalid {what} id {text[:40]!r}: ids are numeric strings of ASCII digits without sign, "
        f"spaces or leading zeros, at most {MAX_ID}"
    )


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
        raise client_error(f"invalid cursor: {error}", argument="after") from None
    except InvalidSearch as error:
        raise client_error(f"invalid search query: {error}", argument="filter.query") from None
    except asyncpg.ProgramLimitExceededError:
        # A search the checks let through but Postgres still finds too complex.
        raise client_error("the search query is too complex: use fewer words and operators") from None
    except ValueError as error:
        raise client_error(str(error)) from None


def optional_id(value: strawberry.ID | None, what: str) -> int | None:
    return parse_id(value, what) if value is not None else None
