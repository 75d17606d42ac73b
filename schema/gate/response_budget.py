"""The response size, counted while the answer is built, not after.

The cost limit (schema/gate/query_cost.py) bounds what a query may ask for; what it gets depends on
the data. A query within the cost limit can still select texts that add up to more than the
response cap (ApiConfig.max_response_bytes), and checking the encoded answer only after the whole
result was built let nine pages of 195,000-character messages grow the process by a gigabyte
before the cap refused them. So every leaf value is charged, as it is completed, against the
request's budget: the leaf that goes over it fails with RESPONSE_TOO_LARGE, and from then on no
resolver of the request runs (each field not yet started resolves to null without running), so
execution winds down at once, holding no more than the budget of values. The HTTP layer answers
that one error and drops the partial data.

Values are counted in characters (for a text) or in the characters of their JSON (other
scalars): a lower bound of the encoded bytes, so nothing under the cap is refused here; the
encoded answer is still checked against the cap in bytes (server/graphql_http.py).
"""

from __future__ import annotations

import json
from typing import Any

from graphql import GraphQLLeafType, GraphQLObjectType, OperationType
from graphql.execution.collect_fields import FieldDetailsList
from graphql.pyutils import AwaitableOrValue, Path, UndefinedType
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from schema.errors import response_too_large

# A number, boolean or enum name charged as this many characters (an upper bound of the JSON of
# any of them but a long enum name; what matters is the texts).
SMALL_VALUE_CHARS = 8
# Characters charged per leaf besides its value: its key, quotes and separators.
LEAF_OVERHEAD_CHARS = 4


class ResponseBudget:
    """Characters of leaf values one request may produce; `spend` raises once they are over."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.spent = 0
        self.exhausted = False

    def spend(self, value: Any) -> None:
        if self.exhausted:
            return
        self.spent += LEAF_OVERHEAD_CHARS + _chars_of(value)
        if self.spent > self.limit:
            self.exhausted = True
            raise response_too_large(self.limit)


def _chars_of(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if value is None or isinstance(value, bool | int | float):
        return SMALL_VALUE_CHARS
    # A JSON scalar (message attachments): its encoding, as the answer will hold it.
    return len(json.dumps(value, ensure_ascii=False, default=str))


def max_response_bytes_of(context: Any) -> int | None:
    """The response cap of the request's context (schema.context.Context), if it has one."""
    config = getattr(context, "config", None)
    limit = getattr(config, "max_response_bytes", None)
    return limit if isinstance(limit, int) else None


class BudgetedExecutor(StrawberryGraphQLCoreExecutionContext):
    """Strawberry's executor, charging every leaf of a query or mutation against the request's
    ResponseBudget. Subscriptions are not charged: each of their events is a small job update,
    and one budget for a whole connection would end it after 16 MB of events."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limit = max_response_bytes_of(self.context_value)
        charged = self.operation.operation is not OperationType.SUBSCRIPTION
        self.response_budget = ResponseBudget(limit) if charged and limit is not None else None

    def complete_leaf_value(self, return_type: GraphQLLeafType, result: Any) -> Any:  # type: ignore[override]
        value = super().complete_leaf_value(return_type, result)
        if self.response_budget is not None:
            self.response_budget.spend(value)
        return value

    def execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: FieldDetailsList,
        path: Path,
        position_context: Any,
    ) -> AwaitableOrValue[Any] | UndefinedType:
        # Once the budget is spent the answer is an error: start no more resolvers (and no
        # more database reads). The null is never shown: the partial data is dropped.
        if self.response_budget is not None and self.response_budget.exhausted:
            return None
        return super().execute_field(
            parent_type, source, field_details_list, path, position_context
        )
