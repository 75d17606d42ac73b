"""The GraphQL API: one Strawberry schema with query and mutation roots and abuse limits."""

from __future__ import annotations

import strawberry
from strawberry.extensions import (
    AddValidationRules,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    ValidationCache,
)

from schema.mutations import Mutation
from schema.queries import Query

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


class QueryLimitRules(AddValidationRules):
    """The depth and alias limits, with rule classes stable across requests."""

    def __init__(self) -> None:
        super().__init__(list(_LIMIT_RULES))


def build_schema() -> strawberry.Schema:
    return strawberry.Schema(
        query=Query,
        mutation=Mutation,
        # Factories, so every request gets fresh extension state. The parse and validation
        # caches are module-level LRUs inside Strawberry, shared by those instances; a cached
        # result is that of the same text, parsed with the same token limit and validated by
        # the same rules, so the limits hold for cached texts too.
        extensions=[
            QueryLimitRules,
            lambda: MaxTokensLimiter(max_token_count=MAX_TOKENS),
            lambda: ParserCache(maxsize=QUERY_CACHE_SIZE),
            lambda: ValidationCache(maxsize=QUERY_CACHE_SIZE),
        ],
    )
