"""Running a query plan for one request: its answer's data, or None to let graphql-core answer.

The plan only ever produces answers without errors. Variables that do not coerce, a resolver
that raises, a null where the type allows none, a response over its budget: each makes the run
give up (None), and the request is answered by graphql-core from the start, with a fresh context,
so the errors and their formatting are graphql-core's own. Queries have no side effects, so
running one again costs only time, and only on a request that fails.
"""

from __future__ import annotations

import logging
from inspect import isawaitable
from typing import Any

from graphql import GraphQLSchema
from graphql.execution.values import get_variable_values

from schema.compiled.plan import QueryPlan, execute_fields
from schema.compiled.request import PlanRequest
from schema.gate.response_budget import ResponseBudget, max_response_bytes_of

logger = logging.getLogger(__name__)


async def run_plan(
    plan: QueryPlan, schema: GraphQLSchema, context: Any, variables: dict[str, Any]
) -> dict[str, Any] | None:
    """The `data` of the answer, or None when graphql-core must answer this request."""
    coerced = get_variable_values(schema, plan.operation.variable_definitions or (), variables)
    if isinstance(coerced, list):
        return None
    limit = max_response_bytes_of(context)
    request = PlanRequest(
        schema,
        plan.operation,
        plan.fragments,
        coerced,
        context,
        ResponseBudget(limit) if limit is not None else None,
    )
    try:
        data = execute_fields(plan.fields, None, request, None)
        if isawaitable(data):
            data = await data
    except Exception as error:  # noqa: BLE001 - every failure is graphql-core's to report
        logger.debug("graphql.plan_stopped reason=%s: %s", type(error).__name__, error)
        return None
    return data  # type: ignore[no-any-return]
