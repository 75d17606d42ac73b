"""What one request's run of a query plan reads: its coerced variables, context and budget."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphql import FragmentDefinitionNode, GraphQLSchema, OperationDefinitionNode
from graphql.execution.values import VariableValues
from graphql.type.definition import GraphQLResolveInfoHelpers

from schema.gate.response_budget import ResponseBudget


class Stopped(Exception):
    """The plan met something only graphql-core answers (an error, a null where none may be):
    the request is run again through graphql-core."""


async def _gather(values: Sequence[Awaitable[Any]]) -> list[Any]:
    return list(await asyncio.gather(*values))


def _track(values: Sequence[Any]) -> None:
    """Resolvers of this schema start no background work; nothing to track."""


HELPERS = GraphQLResolveInfoHelpers(_gather, _track)


@dataclass
class PlanRequest:
    """Per request: what the resolvers' `info` carries, and the response budget."""

    schema: GraphQLSchema
    operation: OperationDefinitionNode
    fragments: dict[str, FragmentDefinitionNode]
    variables: VariableValues
    context: Any
    budget: ResponseBudget | None
    helpers: GraphQLResolveInfoHelpers = field(default=HELPERS)

    @staticmethod
    async def gather(*awaitables: Awaitable[Any]) -> list[Any]:
        """All of them together (so DataLoader loads batch), every one settled before the first
        failure is raised: none is left running behind a request that gave up."""
        results = await asyncio.gather(*awaitables, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return results
