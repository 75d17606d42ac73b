"""Error codes of the API, and the line between a client's mistake and a server fault.

Every GraphQL error a client sees carries `extensions.code`, one of the codes below (the list
clients branch on: docs/api-errors.md). A client's mistake (a parse or validation error, a bad
input value, a refused operation) keeps its message, which says where and why. A database outage
(unreachable, silent past its bound, restarting) is neither: the client sees `UNAVAILABLE`, a
generic message and the request id, and may try again. Anything else is a server fault: the
client sees only "Internal server error" with the request id, and the details go to the log under
that id. The typed error members of mutation results carry the same codes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from graphql import GraphQLEnumType, GraphQLError, GraphQLSchema, GraphQLSyntaxError
from strawberry.extensions import SchemaExtension

from db.outage import is_database_outage

# The request itself
BAD_REQUEST = "BAD_REQUEST"  # the HTTP body is no GraphQL request (HTTP 400)
REQUEST_TOO_LARGE = "REQUEST_TOO_LARGE"  # the body is over the cap of its operation (HTTP 413)
UNAUTHENTICATED = "UNAUTHENTICATED"  # no or unknown token (HTTP 401, server/auth.py)
BAD_HOST = "BAD_HOST"  # a Host header the server does not answer to (HTTP 400, server/hosts.py)
FORBIDDEN = "FORBIDDEN"  # the token's role may not run this operation
PARSE = "PARSE"  # the query text is not GraphQL
VALIDATION = "VALIDATION"  # the query or its variables do not fit the schema's types
TOO_COMPLEX = "TOO_COMPLEX"  # the query would cost more than the limit
# a subscription over the cap of its connection, its client address or the server
TOO_MANY_SUBSCRIPTIONS = "TOO_MANY_SUBSCRIPTIONS"
# The values of arguments
BAD_ID = "BAD_ID"  # an id this API did not produce, or one naming another type
BAD_CURSOR = "BAD_CURSOR"  # a cursor this API did not hand out
PAGE_SIZE = "PAGE_SIZE"  # `first` or `last` out of its range, or both given
BAD_USER_INPUT = "BAD_USER_INPUT"  # any other value the API refuses, said where and why
# Results
NOT_FOUND = "NOT_FOUND"  # no object with that id (typed mutation results, jobProgress)
RESPONSE_TOO_LARGE = "RESPONSE_TOO_LARGE"  # the answer would be over the response cap
INTERNAL = "INTERNAL"  # a server fault: only the request id is shown
UNAVAILABLE = "UNAVAILABLE"  # the database is unreachable or did not answer in time: try again

CODES = (
    BAD_REQUEST,
    REQUEST_TOO_LARGE,
    UNAUTHENTICATED,
    BAD_HOST,
    FORBIDDEN,
    PARSE,
    VALIDATION,
    TOO_COMPLEX,
    BAD_ID,
    BAD_CURSOR,
    PAGE_SIZE,
    BAD_USER_INPUT,
    NOT_FOUND,
    RESPONSE_TOO_LARGE,
    INTERNAL,
    UNAVAILABLE,
    TOO_MANY_SUBSCRIPTIONS,
)

INTERNAL_MESSAGE = "Internal server error"
UNAVAILABLE_MESSAGE = "The database is unavailable; try again later"
# The codes whose message is generic, shown with the request id only.
_GENERIC_MESSAGES = {INTERNAL: INTERNAL_MESSAGE, UNAVAILABLE: UNAVAILABLE_MESSAGE}


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
    """The error's code. graphql-core's own errors carry none: a syntax error is PARSE, and an
    error of the whole request (no path: a validation rule, or a variable that does not coerce
    to its type, such as an unknown enum value) is VALIDATION. A value our scalar refuses keeps
    the scalar's code (BAD_USER_INPUT for a date out of range)."""
    if not is_client_error(error):
        return UNAVAILABLE if is_database_outage(error.original_error) else INTERNAL
    # graphql-core wraps the error of a scalar's coercion into its own about the variable.
    for source in (error, error.original_error):
        code = (getattr(source, "extensions", None) or {}).get("code")
        if isinstance(code, str):
            return code
    if isinstance(error, GraphQLSyntaxError):
        return PARSE
    if error.path is None:
        return VALIDATION
    return BAD_USER_INPUT


def formatted(error: GraphQLError, request_id: str) -> dict[str, Any]:
    """The client's view of one error."""
    code = code_of(error)
    if code in _GENERIC_MESSAGES:
        return {
            "message": _GENERIC_MESSAGES[code],
            "extensions": {"code": code, "requestId": request_id},
        }
    shown = error.formatted
    shown["extensions"] = {**(shown.get("extensions") or {}), "code": code}
    return dict(shown)


# graphql-core's message for a name an enum lacks ("Value 'commands' does not exist in
# 'KnowledgeItemKind' enum."), in a literal (validation) and in a variable (coercion) alike.
UNKNOWN_ENUM_VALUE = re.compile(r"does not exist in '(\w+)' enum\.")


def with_allowed_values(error: GraphQLError, schema: GraphQLSchema) -> None:
    """Adds the enum's names to an unknown-value error: graphql-core suggests at most a close
    one, and a typo such as "commands" deserves the whole list."""
    found = UNKNOWN_ENUM_VALUE.search(error.message)
    enum = schema.get_type(found.group(1)) if found else None
    if isinstance(enum, GraphQLEnumType) and "Allowed values" not in error.message:
        error.message += f" Allowed values: {', '.join(enum.values)}."


class EnumValuesInErrors(SchemaExtension):
    """Lists an enum's names in the errors of an unknown value (see with_allowed_values)."""

    def on_validate(self) -> Iterator[None]:
        yield
        for error in self.execution_context.pre_execution_errors or []:
            with_allowed_values(error, self.execution_context.schema._schema)

    def on_execute(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        for error in (result.errors or []) if result else []:
            if error.path is None:
                with_allowed_values(error, self.execution_context.schema._schema)
