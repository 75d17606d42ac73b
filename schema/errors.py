"""Error codes of the API, and the line between a client's mistake and a server fault.

Every GraphQL error a client sees carries `extensions.code`. A client's mistake (a parse or
validation error, a bad input value, a refused operation) keeps its message, which says where and
why. Anything else is a server fault: the client sees only "Internal server error" with the
request id, and the details go to the log under that id.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphql import GraphQLError, GraphQLSyntaxError
from strawberry.extensions import SchemaExtension

BAD_USER_INPUT = "BAD_USER_INPUT"
BAD_REQUEST = "BAD_REQUEST"
FORBIDDEN = "FORBIDDEN"
NOT_FOUND = "NOT_FOUND"
INTERNAL = "INTERNAL"
PARSE_FAILED = "GRAPHQL_PARSE_FAILED"
VALIDATION_FAILED = "GRAPHQL_VALIDATION_FAILED"
QUERY_TOO_COSTLY = "QUERY_TOO_COSTLY"
RESPONSE_TOO_LARGE = "RESPONSE_TOO_LARGE"
REQUEST_TOO_LARGE = "REQUEST_TOO_LARGE"
BAD_ID = "BAD_ID"  # an id that is not one this API produced, or names another type
BAD_CURSOR = "BAD_CURSOR"  # a cursor that is not one this list produced
PAGE_SIZE = "PAGE_SIZE"  # first/last out of range, or both given

INTERNAL_MESSAGE = "Internal server error"


def client_error(message: str, code: str = BAD_USER_INPUT, **extensions: Any) -> GraphQLError:
    """An error the client caused and can fix; its message is shown as is."""
    return GraphQLError(message, extensions={"code": code, **extensions})


def response_too_large(limit: int) -> GraphQLError:
    return client_error(
        f"the response is over {limit} bytes: ask for fewer rows or fields (a document's "
        "canonicalText one at a time)",
        RESPONSE_TOO_LARGE,
        maxBytes=limit,
    )


def is_client_error(error: GraphQLError) -> bool:
    """True for errors graphql-core or our code made on purpose; False for a wrapped exception
    (a bug, a database failure, a crash inside a library), which must not reach the client."""
    original = error.original_error
    return original is None or isinstance(original, GraphQLError)


def code_of(error: GraphQLError) -> str:
    if not is_client_error(error):
        return INTERNAL
    code = (error.extensions or {}).get("code")
    if isinstance(code, str):
        return code
    if isinstance(error, GraphQLSyntaxError):
        return PARSE_FAILED
    return BAD_USER_INPUT


def formatted(error: GraphQLError, request_id: str) -> dict[str, Any]:
    """The client's view of one error."""
    code = code_of(error)
    if code == INTERNAL:
        return {"message": INTERNAL_MESSAGE, "extensions": {"code": INTERNAL, "requestId": request_id}}
    shown = error.formatted
    shown["extensions"] = {**(shown.get("extensions") or {}), "code": code}
    return dict(shown)


class ValidationErrorCodes(SchemaExtension):
    """Marks the errors of the validation step, so a client can tell a query that does not fit
    the schema (GRAPHQL_VALIDATION_FAILED) from a bad input value (BAD_USER_INPUT)."""

    def on_validate(self) -> Iterator[None]:
        yield
        for error in self.execution_context.pre_execution_errors or []:
            if is_client_error(error) and not isinstance(error, GraphQLSyntaxError):
                extensions = dict(error.extensions or {})
                extensions.setdefault("code", VALIDATION_FAILED)
                error.extensions = extensions
