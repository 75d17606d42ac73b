"""Relay-style connections over keyset pages: `edges { cursor node }`, `nodes`, `pageInfo`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import strawberry

from db.pages import ListRow, Page

Node = TypeVar("Node")


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None
    has_previous_page: bool = strawberry.field(
        default=False, description="Always false: pages are read forward with `after`."
    )
    start_cursor: str | None = None


@strawberry.type
class Edge(Generic[Node]):
    cursor: str
    node: Node


@strawberry.type
class Connection(Generic[Node]):
    edges: list[Edge[Node]]
    nodes: list[Node]
    page_info: PageInfo

    @classmethod
    def from_page(
        cls, page: Page[ListRow], to_node: Callable[[ListRow], Node]
    ) -> Connection[Node]:
        edges = [Edge(cursor=page.cursor_of(row), node=to_node(row)) for row in page.rows]
        return cls(
            edges=edges,
            nodes=[edge.node for edge in edges],
            page_info=PageInfo(
                has_next_page=page.has_next_page,
                end_cursor=edges[-1].cursor if edges else None,
                start_cursor=edges[0].cursor if edges else None,
            ),
        )
