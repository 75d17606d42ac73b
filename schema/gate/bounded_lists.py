"""Lists inside an object that grow with the data (an entity's items, a digest's left-out
ranges, the messages of an appearance): each takes a `first` with a default and a hard maximum,
and its owner has a count of the whole list beside it, so a capped list says how much it left
out. The request's cost counts such a list as `first` rows (schema/gate/query_cost.py)."""

from __future__ import annotations

from typing import Any, TypeVar

import strawberry

from schema.errors import PAGE_SIZE, client_error

Row = TypeVar("Row")


def first_argument(maximum: int, count_field: str) -> Any:
    """The `first` argument of a bounded list, described once."""
    return strawberry.argument(
        description=f"How many to return, 1 to {maximum} (the rest are counted by {count_field})."
    )


def capped(rows: list[Row], first: int, maximum: int, argument: str = "first") -> list[Row]:
    """The first `first` rows; a size outside 1..maximum is the client's mistake."""
    if not 1 <= first <= maximum:
        raise client_error(
            f"{argument} must be between 1 and {maximum}", PAGE_SIZE, argument=argument
        )
    return rows[:first]


# Maximums and defaults of each bounded list.
MAX_APPEARANCE_MESSAGE_IDS = 1000  # = the LIMIT in db/queries.sql's *_digests_of
APPEARANCE_MESSAGE_IDS = 20
MAX_OWNER_ITEMS = 200  # = the n <= 200 of db/queries.sql's *_items_of
OWNER_ITEMS = 20
MAX_OWNER_DIGESTS = 100  # = the n <= 100 of db/queries.sql's *_digests_of
OWNER_DIGESTS = 10
MAX_PROFILE_CONVERSATIONS = 100
PROFILE_CONVERSATIONS = 20
MAX_LEFT_OUT_RANGES = 1000
LEFT_OUT_RANGES = 100
MAX_ITEM_MENTIONS = 100  # = the n <= 100 of db/queries.sql's mentions_of_channel_items
ITEM_MENTIONS = 10
