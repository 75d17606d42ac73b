"""The query plans of the process, one per query text and operation name, bounded like the parse
and validation caches.

A text gets a plan only after graphql-core answered it once without errors: the parse, the
validation and the limits (depth, aliases, tokens) that Strawberry's extensions apply to a text
passed then, and hold for every later request of the same text. A text the plan does not cover
is remembered as such, so it is not planned again.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from graphql import DocumentNode, GraphQLSchema

from schema.compiled.plan import QueryPlan, Unsupported, build_plan

# Distinct (query text, operation name) pairs remembered; older ones are dropped first.
PLAN_CACHE_SIZE: Final = 256


class _NoPlan:
    """A text the plan does not cover."""


NO_PLAN: Final = _NoPlan()


class QueryPlans:
    """An LRU of plans by (query text, operation name)."""

    def __init__(self, schema: GraphQLSchema, size: int = PLAN_CACHE_SIZE) -> None:
        self.schema = schema
        self.size = size
        self._plans: OrderedDict[tuple[str, str | None], QueryPlan | _NoPlan] = OrderedDict()

    def get(self, query: str, operation_name: str | None) -> QueryPlan | None:
        """The plan of a text answered before without errors, if it has one."""
        key = (query, operation_name)
        plan = self._plans.get(key)
        if plan is None:
            return None
        self._plans.move_to_end(key)
        return plan if isinstance(plan, QueryPlan) else None

    def known(self, query: str, operation_name: str | None) -> bool:
        return (query, operation_name) in self._plans

    def learn(self, query: str, operation_name: str | None, document: DocumentNode) -> None:
        """Plan a text graphql-core just answered without errors (or remember it has none)."""
        key = (query, operation_name)
        try:
            self._plans[key] = build_plan(self.schema, document, operation_name)
        except Unsupported:
            self._plans[key] = NO_PLAN
        while len(self._plans) > self.size:
            self._plans.popitem(last=False)
