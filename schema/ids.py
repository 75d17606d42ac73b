"""Ids as clients see them: a row id goes out as a GraphQL ID (its decimal digits) and comes back
in only in that one canonical spelling. Keyset cursors are db/pages.py's (KeysetCursor)."""

from __future__ import annotations

import re

import strawberry

from schema.errors import BAD_ID, client_error

# The only spelling of an id: ASCII digits, no sign, spaces, leading zeros or separators. Python's
# int() also reads "١" (an Arabic-Indic one), "1_0" and " 7 ", which would make several strings
# name one row (and a cache or a log keyed on the string disagree with the database).
CANONICAL_ID = re.compile(r"(0|[1-9][0-9]{0,18})\Z")
MAX_ID = 2**63 - 1  # bigint


def canonical_id(text: str) -> int | None:
    """The row id `text` spells canonically, or None if it is no id (e.g. a name)."""
    if CANONICAL_ID.match(text) and int(text) <= MAX_ID:
        return int(text)
    return None


def parse_id(value: strawberry.ID | str, what: str) -> int:
    """An id argument as its row id; anything but the canonical form is a clear client error."""
    text = str(value)
    row_id = canonical_id(text)
    if row_id is not None:
        return row_id
    raise client_error(
        f"invalid {what} id {text[:40]!r}: ids are numeric strings of ASCII digits without sign, "
        f"spaces or leading zeros, at most {MAX_ID}",
        BAD_ID,
    )


def parse_optional_id(value: strawberry.ID | None, what: str) -> int | None:
    return parse_id(value, what) if value is not None else None


def format_id(row_id: int) -> strawberry.ID:
    """A row id as the GraphQL ID clients see (and send back to parse_id)."""
    return strawberry.ID(str(row_id))


def format_optional_id(row_id: int | None) -> strawberry.ID | None:
    return format_id(row_id) if row_id is not None else None
