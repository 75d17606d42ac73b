"""The checks a GraphQL request passes before Strawberry coerces its variables.

Coercing variables is the expensive step that a client controls: 300,000 messages (22 MB) took
18 s of the event loop before the resolver's permission check and its 5,000-message cap refused
them. So the request is refused here, from the parsed document and the raw JSON variables, by
what it asks (a reader cannot run a mutation; only the ingest mutations may send a large body; an
ingest may carry at most ApiConfig.max_ingest_batch messages, counted by list length; subscriptions
come over WebSocket only, and nothing else does) and by what it would cost, before any value is
coerced. The values themselves are checked here too (see schema/types/input_values.py), and a
document with an empty selection set (which graphql-core 3.3 parses) is refused before a
validation rule trips on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from graphql import (
    BREAK,
    SKIP,
    ArgumentNode,
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLSchema,
    GraphQLSyntaxError,
    InlineFragmentNode,
    ListValueNode,
    Node,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    VariableNode,
    Visitor,
    get_operation_ast,
    parse,
    visit,
)

from schema import MAX_TOKENS
from schema.context import Role
from schema.errors import (
    BAD_REQUEST,
    BAD_USER_INPUT,
    FORBIDDEN,
    PARSE,
    REQUEST_TOO_LARGE,
    TOO_COMPLEX,
    VALIDATION,
    client_error,
)
from schema.gate.query_cost import (
    DEFAULT_MAX_MESSAGE_CHARS,
    MAX_QUERY_COST,
    QueryCosts,
    field_weights,
)
from schema.types.input_values import InputProblem, check_literal, check_variables, variables_in

MAX_QUERY_CHARS = 100_000
MB = 1024 * 1024
# The ingest mutations (their argument holding the records, if any) may send large bodies.
INGEST_FIELDS: Mapping[str, str | None] = {
    "ingestMessages": "messages",
    "ingestDocument": None,
    "importChatExport": None,
}
# Message fields are repaired like imported records (NULs removed...), not refused.
REPAIRED_ARGUMENT = ("ingestMessages", "messages")
WRITER_MESSAGE = "permission denied: this operation needs a writer token"
# GraphQLRequest.method of a subscribe message on a WebSocket: only subscriptions come that way.
WEBSOCKET = "WEBSOCKET"


@dataclass(frozen=True)
class GateLimits:
    max_body_bytes: int = 1 * MB  # queries and every mutation but the ingests
    max_ingest_body_bytes: int = 32 * MB
    max_ingest_messages: int = 5000
    max_query_cost: int = MAX_QUERY_COST
    # The longest message text (DIGESTD_MAX_MESSAGE_CHARS): what a message's text weighs.
    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS


@dataclass(frozen=True)
class GraphQLRequest:
    query: str
    variables: dict[str, Any]
    operation_name: str | None
    body_bytes: int
    method: str = "POST"


class Refused(Exception):
    """A request refused before execution: the error to answer and its HTTP status."""

    def __init__(self, error: GraphQLError, status: int = 200) -> None:
        super().__init__(error.message)
        self.error = error
        self.status = status


def _refuse(message: str, code: str, status: int = 200, **extensions: Any) -> Refused:
    return Refused(client_error(message, code, **extensions), status)


@lru_cache(maxsize=256)
def parse_document(query: str) -> DocumentNode:
    """The parsed document (remembered: dashboards send the same few texts again and again)."""
    return parse(query, max_tokens=MAX_TOKENS)


def admit(
    schema: GraphQLSchema, request: GraphQLRequest, role: Role, limits: GateLimits
) -> DocumentNode:
    """The parsed document of an acceptable request; raises Refused otherwise."""
    if len(request.query) > MAX_QUERY_CHARS:
        raise _refuse(f"the query text is over {MAX_QUERY_CHARS} characters", BAD_REQUEST, 400)
    try:
        document = parse_document(request.query)
    except GraphQLSyntaxError as error:
        error.extensions = {"code": PARSE}
        raise Refused(error) from None
    except RecursionError:
        raise _refuse("the query is nested too deeply to parse", PARSE) from None
    operation = get_operation_ast(document, request.operation_name)
    if operation is None:
        reason = (
            f"no operation named {request.operation_name[:100]!r}"
            if request.operation_name
            else "the document has several operations: give operationName"
        )
        raise _refuse(f"cannot tell which operation to run: {reason}", BAD_REQUEST, 400)
    try:
        survey = _survey_of(request.query)
    except RecursionError:
        raise _refuse("the query is nested too deeply", VALIDATION) from None
    if survey.empty_selection is not None:
        raise Refused(survey.empty_selection)
    if operation.operation is OperationType.SUBSCRIPTION:
        if request.method != WEBSOCKET:
            raise _refuse(
                "subscriptions are served over WebSocket (graphql-transport-ws) at /graphql; "
                "or poll job(id)",
                VALIDATION,
            )
    elif request.method == WEBSOCKET:
        raise _refuse(
            "only subscriptions are served over WebSocket: send queries and mutations "
            "over HTTP (POST /graphql)",
            BAD_REQUEST,
        )
    elif operation.operation is not OperationType.QUERY:
        if request.method == "GET":
            raise _refuse(
                f"{operation.operation.value}s are not allowed over GET: use POST", BAD_REQUEST, 400
            )
        if not role.may_write:
            raise _refuse(WRITER_MESSAGE, FORBIDDEN)
    shape = _shape_of(request.query, request.operation_name)
    fragments, ingests = shape.fragments, shape.ingests
    is_ingest = operation.operation is OperationType.MUTATION and bool(ingests)
    cap = limits.max_ingest_body_bytes if is_ingest else limits.max_body_bytes
    if request.body_bytes > cap:
        raise _refuse(
            f"request body of {request.body_bytes} bytes is over {cap} bytes for this operation "
            f"(only ingestMessages, ingestDocument and importChatExport may send up to {limits.max_ingest_body_bytes})",
            REQUEST_TOO_LARGE,
            413,
        )
    messages = sum(_message_count(f, request.variables) for f in ingests)
    if messages > limits.max_ingest_messages:
        raise _refuse(
            f"too many messages in one request: {messages} (at most {limits.max_ingest_messages}; "
            "send several requests)",
            BAD_USER_INPUT,
        )
    try:
        check_variables(request.variables, repaired=survey.repaired_variables)
    except InputProblem as problem:
        raise _refuse(str(problem), BAD_USER_INPUT, at=problem.where) from None
    literal = survey.literal_problem
    if literal is not None:
        raise _refuse(str(literal), BAD_USER_INPUT, at=literal.where)
    root_type = schema.get_root_type(operation.operation)
    if root_type is not None:
        try:
            weights = field_weights(limits.max_message_chars)
            cost = _COSTS.cost(
                (schema, request.query, request.operation_name, limits.max_message_chars),
                schema,
                root_type,
                operation.selection_set,
                fragments,
                request.variables,
                weights,
            )
        except RecursionError:
            raise _refuse("the query is nested too deeply", VALIDATION) from None
        if cost > limits.max_query_cost:
            raise _refuse(
                f"the query would cost {cost}, over the limit of {limits.max_query_cost}: ask for "
                "smaller pages, fewer aliases or fewer large texts (message texts, canonicalText) per "
                "request",
                TOO_COMPLEX,
                cost=cost,
                maxCost=limits.max_query_cost,
            )
    return document


@dataclass(frozen=True)
class _Shape:
    """What the gate reads of one operation of a text, the same for every request of it: the
    document's fragments and the operation's ingest fields (through fragments)."""

    fragments: dict[str, FragmentDefinitionNode]
    ingests: tuple[FieldNode, ...]


@lru_cache(maxsize=256)
def _shape_of(query: str, operation_name: str | None) -> _Shape:
    """The shape of `query`'s operation (remembered like the parse; only asked once the
    operation is known to exist and the document is known not too deep)."""
    document = parse_document(query)
    operation = get_operation_ast(document, operation_name)
    assert isinstance(operation, OperationDefinitionNode)
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    roots = _root_fields(operation.selection_set, fragments)
    return _Shape(fragments, tuple(f for f in roots if f.name.value in INGEST_FIELDS))


# Costs by text and the values of the variables they read (schema/gate/query_cost.py).
_COSTS = QueryCosts()


def _root_fields(
    selections: SelectionSetNode, fragments: dict[str, FragmentDefinitionNode]
) -> list[FieldNode]:
    """The operation's top-level fields, through fragments, each fragment walked once: a field
    reached through two spreads of one fragment is one field of the answer, and walking every
    path would take 2**30 steps for thirty fragments each spreading the next one twice."""
    fields: list[FieldNode] = []
    walked: set[str] = set()
    pending = [selections]
    while pending:
        for selection in pending.pop().selections:
            if isinstance(selection, FieldNode):
                fields.append(selection)
            elif isinstance(selection, InlineFragmentNode):
                pending.append(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                if name in fragments and name not in walked:
                    walked.add(name)
                    pending.append(fragments[name].selection_set)
    return fields


def _message_count(ingest: FieldNode, variables: Mapping[str, Any]) -> int:
    """How many records an ingest field carries, counted without coercing any of them."""
    name = INGEST_FIELDS[ingest.name.value]
    for argument in ingest.arguments or ():
        if argument.name.value != name:
            continue
        value = argument.value
        if isinstance(value, VariableNode):
            given = variables.get(value.name.value)
            return len(given) if isinstance(given, list) else 1
        if isinstance(value, ListValueNode):
            return len(value.values)
        return 1
    return 0


class _Survey(Visitor):
    """One pass over the document: the first empty selection set, and every argument to check
    (and, once checked, the first problem in the values written in the document itself)."""

    def __init__(self) -> None:
        super().__init__()
        self.empty_selection: GraphQLError | None = None
        self.arguments: list[tuple[ArgumentNode, str, bool]] = []
        self.repaired_variables: set[str] = set()
        self.literal_problem: InputProblem | None = None

    def enter_selection_set(self, node: SelectionSetNode, key: Any, parent: Any, *_: Any) -> Any:
        if node.selections:
            return None
        owner = f"Field '{parent.name.value}'" if isinstance(parent, FieldNode) else "The operation"
        self.empty_selection = GraphQLError(
            f"{owner} has an empty selection set: select at least one field",
            nodes=node,
            extensions={"code": VALIDATION},
        )
        return BREAK

    def enter_argument(
        self, node: ArgumentNode, key: Any, parent: Any, path: Any, ancestors: list[Node]
    ) -> Any:
        owner = next((a for a in reversed(ancestors) if isinstance(a, FieldNode)), None)
        owner_name = owner.name.value if owner is not None else "directive"
        repaired = (owner_name, node.name.value) == REPAIRED_ARGUMENT
        if repaired:
            self.repaired_variables |= variables_in(node.value)
        self.arguments.append((node, f"{owner_name}({node.name.value})", repaired))
        return SKIP


def _survey(document: DocumentNode) -> _Survey:
    survey = _Survey()
    visit(document, survey)
    # The literals are part of the text: checked once, like the walk that found them.
    try:
        for argument, where, repaired in survey.arguments:
            check_literal(argument, where, check_text=not repaired)
    except InputProblem as problem:
        survey.literal_problem = problem
    return survey


@lru_cache(maxsize=256)
def _survey_of(query: str) -> _Survey:
    """The survey of `query`'s document (remembered like the parse: it depends on the text alone,
    and walking the document was a fifth of the CPU of a small poll). Read-only once made."""
    return _survey(parse_document(query))
