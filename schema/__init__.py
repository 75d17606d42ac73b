"""The GraphQL API: one Strawberry schema with query, mutation and subscription roots and abuse
limits."""

from __future__ import annotations

import logging
from datetime import datetime

import strawberry
from graphql import GraphQLError
from strawberry.extensions import (
    AddValidationRules,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
)
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext

from schema.errors import UNAVAILABLE, EnumValuesInErrors, code_of, is_client_error
from schema.gate.response_budget import BudgetedExecutor
from schema.gate.validation_cache import validation_cache
from schema.resolvers.mutations import Mutation
from schema.resolvers.queries import Query
from schema.resolvers.subscriptions import Subscription
from schema.types.scalars import DATETIME

logger = logging.getLogger(__name__)

# Limits against abusive queries; a legitimate dashboard query is far below each.
MAX_QUERY_DEPTH = 10
MAX_ALIASES = 30
MAX_TOKENS = 2000
# Distinct query texts whose parse and validation are remembered. Polling scripts and dashboards
# send the same few texts again and again; the bound keeps a flood of unique texts from growing
# memory.
QUERY_CACHE_SIZE = 256

# The depth and alias rules, made once for the process. Each limiter instance makes a new rule
# class, and ValidationCache keys on the rule classes: made per request, the cache never hits.
_LIMIT_RULES = [
    *QueryDepthLimiter(max_depth=MAX_QUERY_DEPTH).validation_rules,
    *MaxAliasesLimiter(max_alias_count=MAX_ALIASES).validation_rules,
]


# Validation remembered per query text (schema/gate/validation_cache.py).
TextValidationCache = validation_cache(QUERY_CACHE_SIZE)


class QueryLimitRules(AddValidationRules):
    """The depth and alias limits, with rule classes stable across requests."""

    def __init__(self) -> None:
        super().__init__(list(_LIMIT_RULES))


class DigestSchema(strawberry.Schema):
    """The schema, logging its errors the way schema/errors.py classifies them: a client's
    mistake in one line at info level without a traceback, a database outage in one line at
    warning level without one (the database's state, not a fault of this code), a server fault
    at error level with its traceback, all under the request id the client was given."""

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        context = execution_context.context if execution_context else None
        request_id = getattr(context, "request_id", "-")
        for error in errors:
            if is_client_error(error):
                logger.info(
                    "graphql.client_error request_id=%s code=%s path=%s message=%r",
                    request_id,
                    code_of(error),
                    error.path,
                    error.message[:200],
                )
            elif code_of(error) == UNAVAILABLE:
                logger.warning(
                    "graphql.unavailable request_id=%s path=%s error=%s",
                    request_id,
                    error.path,
                    type(error.original_error).__name__,
                )
            else:
                logger.error(
                    "graphql.internal_error request_id=%s path=%s error=%s",
                    request_id,
                    error.path,
                    type(error.original_error).__name__,
                    exc_info=error.original_error,
                )


def build_schema() -> strawberry.Schema:
    return DigestSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        config=StrawberryConfig(scalar_map={datetime: DATETIME}),
        # The response size counted while the answer is built (schema/gate/response_budget.py).
        execution_context_class=BudgetedExecutor,
        # Factories, so every request gets fresh extension state. The parse and validation
        # caches are module-level LRUs inside Strawberry, shared by those instances; a cached
        # result is that of the same text, parsed with the same token limit and validated by
        # the same rules, so the limits hold for cached texts too.
        extensions=[
            QueryLimitRules,
            EnumValuesInErrors,
            lambda: MaxTokensLimiter(max_token_count=MAX_TOKENS),
            lambda: ParserCache(maxsize=QUERY_CACHE_SIZE),
            TextValidationCache,
        ],
    )
