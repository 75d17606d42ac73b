"""Every query the app answers in a test run, answered again by its compiled plan
(schema/compiled/) and compared byte for byte with graphql-core's answer.

On with DIGESTD_CHECK_PLANS=1 (tests/integration/conftest.py): the endpoint's plans are then
never used to answer, so every request goes through graphql-core and is checked. A query graphql-core
answers without errors must get the same JSON bytes from its plan; one it answers with execution
errors must get no answer from its plan (the endpoint then falls back). Documents the plan does
not cover are counted, not compared. A mismatch is confirmed by asking graphql-core again (with a
fresh context): when its own second answer differs too, the data changed in between (a worker
running) and the pair is not counted ("raced").
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import graphql
import pytest
from graphql import OperationType, get_operation_ast

from schema import DigestSchema
from schema.compiled.plan import Unsupported, build_plan
from schema.compiled.plans import QueryPlans
from schema.compiled.run import run_plan
from schema.context import Context

ENV = "DIGESTD_CHECK_PLANS"

# Over the whole session: compared, unsupported, raced, fell back.
TOTALS: Counter[str] = Counter()


def _bytes(data: Any) -> bytes:
    return json.dumps({"data": data}, ensure_ascii=False, separators=(",", ":")).encode()


def _fresh(context: Any) -> Any:
    """A new request context like `context` (its own DataLoaders), or `context` if it is none."""
    if not isinstance(context, Context):
        return context
    return Context(
        pool=context.pool,
        role=context.role,
        config=context.config,
        request_id=context.request_id,
        job_events=context.job_events,
    )


class PlanCheck:
    """The mismatches found while installed, with their query texts."""

    def __init__(self) -> None:
        self.mismatches: list[str] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        original = DigestSchema.execute
        check = self

        async def execute(
            schema: DigestSchema, query: str | None, *args: Any, **kwargs: Any
        ) -> Any:
            result = await original(schema, query, *args, **kwargs)

            async def again() -> Any:
                # A fresh context: the first one's DataLoaders hold the rows it read.
                fresh = {**kwargs, "context_value": _fresh(kwargs.get("context_value"))}
                return await original(schema, query, *args, **fresh)

            await check.compare(schema, query, result, again, **kwargs)
            return result

        monkeypatch.setattr(DigestSchema, "execute", execute)
        monkeypatch.setattr(QueryPlans, "get", lambda *_: None)

    async def compare(
        self,
        schema: DigestSchema,
        query: str | None,
        result: Any,
        again: Any,
        *,
        variable_values: dict[str, Any] | None = None,
        context_value: Any = None,
        operation_name: str | None = None,
        **_: Any,
    ) -> None:
        if query is None or not isinstance(context_value, Context):
            return
        errors = result.errors or []
        if any(error.path is None for error in errors):
            return  # refused before execution (parse, validation, limits): never planned
        try:
            document = graphql.parse(query)
        except graphql.GraphQLError:
            return
        operation = get_operation_ast(document, operation_name)
        if operation is None or operation.operation is not OperationType.QUERY:
            return
        try:
            plan = build_plan(schema._schema, document, operation_name)
        except Unsupported:
            TOTALS["unsupported"] += 1
            return
        data = await run_plan(plan, schema._schema, _fresh(context_value), variable_values or {})
        if errors:
            if data is None:
                TOTALS["fell_back"] += 1
                return
            if (await again()).errors:
                self.mismatches.append(f"the plan answered a query graphql-core failed: {query}")
            else:
                TOTALS["raced"] += 1
            return
        if data is not None and _bytes(data) == _bytes(result.data):
            TOTALS["compared"] += 1
            return
        second = await again()
        if second.errors or _bytes(second.data) != _bytes(result.data):
            TOTALS["raced"] += 1
            return
        shown = "no answer" if data is None else _bytes(data).decode()[:300]
        self.mismatches.append(
            f"{query}\n  graphql-core: {_bytes(result.data).decode()[:300]}\n  plan: {shown}"
        )
