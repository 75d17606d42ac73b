"""The GraphQL API: one Strawberry schema with query and mutation roots and abuse limits."""

from __future__ import annotations

import strawberry
from strawberry.extensions import MaxAliasesLimiter, MaxTokensLimiter, QueryDepthLimiter

from schema.mutations import Mutation
from schema.queries import Query

# Limits against abusive queries; a legitimate dashboard query is far below each.
MAX_QUERY_DEPTH = 10
MAX_ALIASES = 30
MAX_TOKENS = 2000


def build_schema() -> strawberry.Schema:
    return strawberry.Schema(
        query=Query,
        mutation=Mutation,
        # Factories, so every request gets fresh limiter state.
        extensions=[
            lambda: QueryDepthLimiter(max_depth=MAX_QUERY_DEPTH),
            lambda: MaxAliasesLimiter(max_alias_count=MAX_ALIASES),
            lambda: MaxTokensLimiter(max_token_count=MAX_TOKENS),
        ],
    )
