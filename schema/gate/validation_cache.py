"""Validation remembered per query text, for Strawberry.

Strawberry's own `ValidationCache` keys its LRU on the parsed DocumentNode, and graphql-core's
nodes hash by walking the whole tree (a dataclass hash of every field, recursively) on every
lookup: about a hundred hash calls, a quarter of a millisecond, for each request of a small
`job(id)` poll, to find an answer it already has. The text of the query identifies the document
just as well (parsing is deterministic, with the same token limit) and a str caches its own
hash, so this cache keys on the text.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from graphql import DocumentNode, GraphQLError, GraphQLSchema
from strawberry.extensions import SchemaExtension
from strawberry.schema.schema import validate_document


class _Document:
    """A parsed document that hashes and compares by its query text."""

    __slots__ = ("document", "query")

    def __init__(self, query: str, document: DocumentNode) -> None:
        self.query = query
        self.document = document

    def __hash__(self) -> int:
        return hash(self.query)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Document) and other.query == self.query


def validation_cache(maxsize: int) -> type[SchemaExtension]:
    """An extension class validating each distinct (text, rules) once, `maxsize` remembered."""

    @lru_cache(maxsize=maxsize)
    def validated(
        schema: GraphQLSchema, document: _Document, rules: tuple[Any, ...]
    ) -> list[GraphQLError]:
        # Strawberry's validation: the rules given plus its own (maybe-null, one-of inputs).
        return validate_document(schema, document.document, rules)

    class TextValidationCache(SchemaExtension):
        def on_validate(self) -> Iterator[None]:
            context = self.execution_context
            # Without a text (a document given directly) Strawberry validates it as usual.
            if context.query is not None and context.graphql_document is not None:
                key = _Document(context.query, context.graphql_document)
                rules = tuple(context.validation_rules)
                context.pre_execution_errors = validated(context.schema._schema, key, rules)
            yield

    return TextValidationCache
