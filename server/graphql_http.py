"""The /graphql endpoint: GraphQL over HTTP with every limit applied at the edge.

In order, before any GraphQL value is coerced: the body is read up to the caller's cap (a reader
only runs queries, which need far less than an ingest), decoded as strict JSON (bounded numbers
and nesting), its shape checked, and the request admitted by schema/gate/request_gate.py (operation
vs role, per-operation body cap, message count, input values, cost). Then Strawberry executes,
and the answer is encoded and checked against the response cap. Errors come out with a code
(schema/errors.py); a problem with the body itself is an HTTP 400 with code BAD_REQUEST.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import strawberry
from graphql import DocumentNode, GraphQLError, get_operation_ast
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send
from strawberry.types.graphql import OperationType

from schema.compiled.plans import QueryPlans
from schema.compiled.run import run_plan
from schema.context import ApiConfig, Context, Role
from schema.errors import (
    BAD_REQUEST,
    REQUEST_TOO_LARGE,
    RESPONSE_TOO_LARGE,
    code_of,
    formatted,
    response_too_large,
)
from schema.gate.request_gate import GateLimits, GraphQLRequest, Refused, admit
from server.etag import entity_tag, none_match
from server.graphiql import graphiql_page, is_page_request
from server.metrics import observe_graphql
from server.request_id import request_id_of

logger = logging.getLogger(__name__)

# JSON numbers longer than this are refused while decoding (Python would build a 5000-digit int,
# or refuse one past 4300 digits with a ValueError); no argument of the API needs more.
MAX_NUMBER_CHARS = 40


class BadBody(Exception):
    """A request body that is not a GraphQL request: HTTP 400 (413 when too large)."""

    def __init__(self, message: str, status: int = 400, code: str = BAD_REQUEST) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def _number(text: str) -> float | int:
    if len(text) > MAX_NUMBER_CHARS:
        raise BadBody(
            f"the request body has a number of {len(text)} characters (at most {MAX_NUMBER_CHARS})"
        )
    return float(text) if any(c in text for c in ".eE") else int(text)


def _no_constant(name: str) -> Any:
    raise BadBody(f"the request body is not strict JSON: {name} is not a JSON value")


def is_json_media_type(content_type: str) -> bool:
    """Whether a Content-Type names JSON: its type and subtype are `application/json` (in any
    case) and a charset, if given, is UTF-8. Not a substring test: `text/plain;
    a=application/json` is a type a page on any origin may send without a CORS preflight, so
    taking it for JSON would let such a page run mutations on a server without tokens."""
    essence, _, parameters = content_type.partition(";")
    if essence.strip().lower() != "application/json":
        return False
    for parameter in parameters.split(";"):
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            if value.strip().strip('"').lower() not in ("utf-8", "utf8"):
                return False
    return True


def decode_json(body: bytes | str) -> Any:
    """Strict JSON, bounded: refusing is a BadBody, never a crash of the decoder."""
    try:
        return json.loads(body, parse_int=_number, parse_float=_number, parse_constant=_no_constant)
    except RecursionError:
        raise BadBody("the request body is nested too deeply to decode") from None
    except UnicodeDecodeError:
        raise BadBody("the request body is not UTF-8 JSON") from None
    except json.JSONDecodeError as error:
        raise BadBody(
            f"the request body is not JSON: {error.msg} at character {error.pos}"
        ) from None


def graphql_request(data: Any, body_bytes: int, method: str) -> GraphQLRequest:
    if isinstance(data, list):
        raise BadBody("batched requests are not supported: send one operation per request")
    if not isinstance(data, dict):
        raise BadBody(
            'the request body must be a JSON object like {"query": "...", "variables": {}}'
        )
    query, variables, name = data.get("query"), data.get("variables"), data.get("operationName")
    if not isinstance(query, str) or not query.strip():
        raise BadBody("the request has no query: `query` must be a non-empty string")
    if variables is not None and not isinstance(variables, dict):
        raise BadBody("`variables` must be a JSON object or null")
    if name is not None and not isinstance(name, str):
        raise BadBody("`operationName` must be a string or null")
    if not isinstance(data.get("extensions"), dict | None):
        raise BadBody("`extensions` must be a JSON object or null")
    return GraphQLRequest(query, variables or {}, name, body_bytes, method)


class GraphQLEndpoint:
    """ASGI app for /graphql (GET serves GraphiQL, or runs a query given in the URL)."""

    def __init__(self, schema: strawberry.Schema, config: ApiConfig, limits: GateLimits) -> None:
        self.schema = schema
        self.config = config
        self.limits = limits
        # Query texts answered once without errors, compiled (schema/compiled/).
        self.plans = QueryPlans(schema._schema)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        response = await self.handle(request)
        await response(scope, receive, send)

    async def handle(self, request: Request) -> Response:
        request_id = request_id_of(request.scope)
        role: Role = request.scope.get("state", {}).get("role", Role.READER)
        try:
            if is_page_request(request.method, request.scope["query_string"]):
                return graphiql_page(request.headers.get("host"))
            parsed = await self._read(request, role)
            document = admit(self.schema._schema, parsed, role, self.limits)
        except BadBody as problem:
            observe_graphql("none", [problem.code])
            logger.info(
                "graphql.bad_request request_id=%s status=%d reason=%r",
                request_id,
                problem.status,
                str(problem)[:200],
            )
            return _json(
                {"errors": [{"message": str(problem), "extensions": {"code": problem.code}}]},
                problem.status,
            )
        except Refused as refused:
            code = code_of(refused.error)
            observe_graphql("none", [code])
            logger.info(
                "graphql.refused request_id=%s code=%s message=%r",
                request_id,
                code,
                refused.error.message[:200],
            )
            return _json(
                {"data": None, "errors": [formatted(refused.error, request_id)]}, refused.status
            )
        # A GET of a query may be answered 304 (server/etag.py); a POST is never conditional.
        if_none_match = request.headers.get("if-none-match") if request.method == "GET" else None
        plan = self.plans.get(parsed.query, parsed.operation_name)
        if plan is not None:
            data = await run_plan(
                plan, self.schema._schema, self._context(request, role), parsed.variables
            )
            if data is not None:
                observe_graphql("query", [])
                return self._answer(data, [], request_id, tagged=True, if_none_match=if_none_match)
            # Anything the plan does not answer, graphql-core answers, from the start.
        result = await self.schema.execute(
            parsed.query,
            variable_values=parsed.variables,
            context_value=self._context(request, role),
            operation_name=parsed.operation_name,
            allowed_operation_types={OperationType.QUERY, OperationType.MUTATION},
        )
        errors: list[GraphQLError] = list(result.errors or [])
        operation_type = _operation_type(document, parsed.operation_name)
        if operation_type == "query" and not errors:
            if not self.plans.known(parsed.query, parsed.operation_name):
                self.plans.learn(parsed.query, parsed.operation_name, document)
        tagged = operation_type == "query"
        response = self._answer(
            result.data, errors, request_id, tagged=tagged, if_none_match=if_none_match
        )
        observe_graphql(operation_type, [code_of(e) for e in errors])
        return response

    def _context(self, request: Request, role: Role) -> Context:
        return Context(
            pool=request.app.state.pool,
            role=role,
            config=self.config,
            request_id=request_id_of(request.scope),
        )

    async def _read(self, request: Request, role: Role) -> GraphQLRequest:
        if request.method == "GET":
            params = request.query_params
            try:
                variables = decode_json(params["variables"]) if params.get("variables") else None
            except BadBody as problem:  # a GET has no body: say which parameter is wrong
                where = "the `variables` parameter of the URL"
                raise BadBody(str(problem).replace("the request body", where, 1)) from None
            data = {
                "query": params.get("query"),
                "variables": variables,
                "operationName": params.get("operationName"),
            }
            return graphql_request(data, len(request.url.query), "GET")
        if request.method != "POST":
            raise BadBody("GraphQL is served over GET and POST only", status=405)
        if not is_json_media_type(request.headers.get("content-type", "")):
            raise BadBody(
                "the request body must be UTF-8 JSON (Content-Type: application/json)", status=415
            )
        body = await self._body(request, role)
        return graphql_request(decode_json(body), len(body), "POST")

    async def _body(self, request: Request, role: Role) -> bytes:
        """The body, read no further than the caller's cap: a reader's is the query cap, since
        a reader can run no mutation, so a reader's 22 MB post is refused at its first bytes."""
        cap = self.limits.max_ingest_body_bytes if role.may_write else self.limits.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise _too_large(int(declared), cap, role)
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > cap:
                    raise _too_large(size, cap, role)
                chunks.append(chunk)
        except ClientDisconnect:
            raise BadBody("the client went away before sending the whole body") from None
        return b"".join(chunks)

    def _answer(
        self,
        data: dict[str, Any] | None,
        errors: list[GraphQLError],
        request_id: str,
        *,
        tagged: bool,
        if_none_match: str | None,
    ) -> Response:
        """The JSON answer; a query's answer without errors carries its ETag (304 if it matches)."""
        too_large = next((e for e in errors if code_of(e) == RESPONSE_TOO_LARGE), None)
        if too_large is not None:
            return _json({"data": None, "errors": [formatted(too_large, request_id)]}, 200)
        payload: dict[str, Any] = {"data": data}
        if errors:
            payload["errors"] = [formatted(error, request_id) for error in errors]
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        if len(body) > self.config.max_response_bytes:
            logger.info("graphql.response_too_large request_id=%s bytes=%d", request_id, len(body))
            error = response_too_large(self.config.max_response_bytes)
            return _json({"data": None, "errors": [formatted(error, request_id)]}, 200)
        if errors or not tagged:
            return Response(body, media_type="application/json")
        tag = entity_tag(body)
        if none_match(if_none_match, tag):
            return Response(status_code=304, headers={"etag": tag})
        return Response(body, media_type="application/json", headers={"etag": tag})


def _operation_type(document: DocumentNode, name: str | None) -> str:
    operation = get_operation_ast(document, name)
    return operation.operation.value if operation is not None else "none"


def _too_large(size: int, cap: int, role: Role) -> BadBody:
    return BadBody(
        f"request body of {size} bytes is over {cap} bytes, the limit for a {role.value} token",
        413,
        REQUEST_TOO_LARGE,
    )


def _json(payload: dict[str, Any], status: int) -> Response:
    return Response(
        json.dumps(payload, ensure_ascii=False).encode(),
        status_code=status,
        media_type="application/json",
    )
