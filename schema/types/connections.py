"""Relay connections over keyset pages (strawberry.relay's Connection, Edge and PageInfo): `edges
{ cursor node }`, `nodes`, `pageInfo`, and the list's size: exact, or the planner's estimate."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Generic

import strawberry
from strawberry import relay
from strawberry.relay.types import NodeType

from db.pages import ListRow, Page

# The list's size, computed only when a client selects the field that shows it.
CountOf = Callable[[], Awaitable[int]]


@strawberry.type
class Connection(relay.Connection[NodeType], Generic[NodeType]):
    nodes: list[NodeType]
    count_exact: strawberry.Private[CountOf]
    count_estimate: strawberry.Private[CountOf]

    @strawberry.field(
        description="How many rows the whole list holds with the same filters, every page "
        "together: counted exactly, when this field is selected (one count per list, whatever "
        "the page size)."
    )
    async def total_count(self) -> int:
        return await self.count_exact()

    @strawberry.field(
        description="The database planner's estimate of how many rows the whole list holds "
        "(from table statistics: approximate, possibly stale, never a scan); totalCount is "
        "the exact figure."
    )
    async def total_count_estimate(self) -> int | None:
        return await self.count_estimate()

    @classmethod
    def from_page(
        cls,
        page: Page[ListRow],
        to_node: Callable[[ListRow], NodeType],
        *,
        exact: CountOf,
        estimate: CountOf,
    ) -> Connection[NodeType]:
        edges = [relay.Edge(cursor=page.cursor_of(row), node=to_node(row)) for row in page.rows]
        return cls(
            edges=edges,
            nodes=[edge.node for edge in edges],
            page_info=relay.PageInfo(
                has_next_page=page.has_next_page,
                has_previous_page=page.has_previous_page,
                start_cursor=edges[0].cursor if edges else None,
                end_cursor=edges[-1].cursor if edges else None,
            ),
            count_exact=exact,
            count_estimate=estimate,
        )
