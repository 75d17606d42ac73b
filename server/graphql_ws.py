"""/graphql over WebSocket: subscriptions (jobProgress) with the graphql-transport-ws protocol.

Strawberry's protocol handler runs the connection (connection_init and ack, ping, subscribe,
complete, the close codes of the protocol); what digestd adds is what its HTTP endpoint
(server/graphql_http.py) does at the edge:

- origin: a browser page may connect only from the server's own origin or one of
  DIGESTD_CORS_ORIGINS (browsers apply no CORS to WebSockets; a refused handshake is a 403);
- authentication: with DIGESTD_API_TOKENS set, the bearer token comes in the upgrade request's
  Authorization header or, since browsers cannot set headers on a WebSocket, in the
  connection_init payload (`{"Authorization": "Bearer ..."}`); without a valid one the
  connection is closed with 4403 Forbidden. Any role may subscribe;
- bounds: messages of at most MAX_MESSAGE_CHARS, decoded as strict JSON; open subscriptions
  capped per connection (MAX_SUBSCRIPTIONS), per client address and per process
  (SubscriptionQuota; over a cap: TOO_MANY_SUBSCRIPTIONS); each subscribe message admitted by
  schema/gate/request_gate.py (subscriptions only, input values, cost) before it runs;
- errors: every error goes out with its code, a server fault as "Internal server error" with
  the connection's request id (schema/errors.py), as over HTTP.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, cast

import strawberry
from graphql import GraphQLError
from graphql.error import GraphQLFormattedError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState
from strawberry.asgi import ASGIWebSocketAdapter, GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http.exceptions import NonJsonMessageReceived, NonTextMessageReceived
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import (
    NextMessagePayload,
    SubscribeMessage,
)
from strawberry.types import ExecutionResult
from strawberry.types.unset import UnsetType

from schema.context import ApiConfig, Context, Role
from schema.errors import TOO_MANY_SUBSCRIPTIONS, code_of, formatted
from schema.gate.request_gate import WEBSOCKET, GateLimits, Refused, admit
from server.auth import ApiToken, role_for
from server.graphql_http import BadBody, decode_json, graphql_request
from server.metrics import observe_graphql
from server.request_id import request_id_from

logger = logging.getLogger(__name__)

# A subscribe message carries a query (at most request_gate.MAX_QUERY_CHARS) and its variables.
MAX_MESSAGE_CHARS = 128 * 1024
MAX_SUBSCRIPTIONS = 20
# A client sends connection_init as soon as the socket opens; an idle socket is let go soon.
CONNECTION_INIT_SECONDS = 5
# WebSocket close code for a message over the size limit (RFC 6455: "message too big").
MESSAGE_TOO_BIG = 1009
# The protocol's close code for a subprotocol the server does not speak, and why, in the 123
# bytes a close reason may hold: a client of the legacy protocol (subscriptions-transport-ws,
# whose subprotocol is also named "graphql-ws") learns what to use instead.
SUBPROTOCOL_NOT_ACCEPTABLE = 4406
SUBPROTOCOL_REFUSAL = (
    "Subprotocol not acceptable: only graphql-transport-ws is served,"
    " not the legacy graphql-ws of subscriptions-transport-ws"
)


@dataclass
class SocketContext(Context):
    """The context of one WebSocket connection: the role is settled at connection_init."""

    header_role: Role | None = None
    connection_params: dict[str, object] = field(default_factory=dict)
    # The client's address (as uvicorn resolved it, behind a trusted proxy too): its quota key.
    client: str = "-"


class SubscriptionQuota:
    """Open subscriptions of the process, counted per client address: each costs a watch of a
    job and a message per change, so neither one client nor all of them may hold unboundedly
    many (the per-connection cap alone let one client open 50 connections of 20)."""

    def __init__(self, per_client: int, total: int) -> None:
        self.per_client = per_client
        self.total = total
        self._by_client: dict[str, int] = {}
        self.held = 0

    def take(self, client: str) -> str | None:
        """Count one more subscription of `client`, or say why not (nothing counted)."""
        if self._by_client.get(client, 0) >= self.per_client:
            return f"at most {self.per_client} open subscriptions per client address: complete one first"
        if self.held >= self.total:
            return f"the server holds its most open subscriptions ({self.total}): try again later or poll job(id)"
        self._by_client[client] = self._by_client.get(client, 0) + 1
        self.held += 1
        return None

    def give_back(self, client: str) -> None:
        left = self._by_client.get(client, 0) - 1
        if left > 0:
            self._by_client[client] = left
        else:
            self._by_client.pop(client, None)
        self.held -= 1


class BoundedSocket(ASGIWebSocketAdapter):
    """Strawberry's adapter, reading text messages of bounded size as strict JSON."""

    async def close(self, code: int, reason: str) -> None:
        if code == SUBPROTOCOL_NOT_ACCEPTABLE:
            reason = SUBPROTOCOL_REFUSAL
        await super().close(code, reason)

    async def iter_json(
        self, *, ignore_parsing_errors: bool = False
    ) -> AsyncGenerator[object, None]:
        try:
            while self.ws.application_state != WebSocketState.DISCONNECTED:
                text = await self.ws.receive_text()
                if len(text) > MAX_MESSAGE_CHARS:
                    await self.close(
                        MESSAGE_TOO_BIG, f"message over {MAX_MESSAGE_CHARS} characters"
                    )
                    return
                try:
                    yield decode_json(text)
                except BadBody as problem:
                    if not ignore_parsing_errors:
                        raise NonJsonMessageReceived from problem
        except KeyError as error:  # a binary frame
            raise NonTextMessageReceived from error
        except WebSocketDisconnect:
            pass


class AdmittedOperation(Operation[SocketContext, None]):
    """An operation whose errors go out as digestd's do (codes, server faults masked)."""

    __slots__ = ()

    def _shown(self, errors: Sequence[GraphQLError]) -> list[GraphQLFormattedError]:
        request_id = self.handler.context.request_id
        return [cast(GraphQLFormattedError, formatted(error, request_id)) for error in errors]

    async def send_initial_errors(self, errors: list[GraphQLError]) -> None:
        observe_graphql("subscription", [code_of(error) for error in errors])
        await self.send_operation_message(
            {"id": self.id, "type": "error", "payload": self._shown(errors)}
        )

    async def send_next(self, execution_result: ExecutionResult) -> None:
        payload: NextMessagePayload = {"data": execution_result.data}
        if execution_result.errors:
            observe_graphql("subscription", [code_of(error) for error in execution_result.errors])
            payload["errors"] = self._shown(execution_result.errors)
        await self.send_operation_message({"id": self.id, "type": "next", "payload": payload})


class AdmittingHandler(BaseGraphQLTransportWSHandler[SocketContext, None]):
    """graphql-transport-ws, with each subscribe message admitted like an HTTP request."""

    async def handle_subscribe(self, message: SubscribeMessage) -> None:
        if not self.connection_acknowledged or message["id"] in self.operations:
            await super().handle_subscribe(message)  # closes with 4401 or 4409, per the protocol
            return
        problem = self._refusal(message) or self._reserve()
        if problem is not None:
            await self.send_message({"id": message["id"], "type": "error", "payload": [problem]})
            return
        payload = message["payload"]
        operation = AdmittedOperation(
            self,
            message["id"],
            payload["query"],
            payload.get("variables"),
            payload.get("operationName"),
        )
        operation.task = asyncio.create_task(self.run_operation(operation))
        operation.task.add_done_callback(self._task_done)
        # Its place is given back however it ends: completed, cancelled by the client or the close.
        quota, client = cast(SubscriptionEndpoint, self.view).quota, self.context.client
        operation.task.add_done_callback(lambda _: quota.give_back(client))
        self.operations[message["id"]] = operation

    def _reserve(self) -> GraphQLFormattedError | None:
        """A place in the process's quota for an admitted subscription, or the refusal."""
        refusal = cast(SubscriptionEndpoint, self.view).quota.take(self.context.client)
        if refusal is None:
            return None
        return self._too_many(refusal)

    def _too_many(self, why: str) -> GraphQLFormattedError:
        observe_graphql("none", [TOO_MANY_SUBSCRIPTIONS])
        logger.info(
            "graphql.refused request_id=%s code=%s message=%r",
            self.context.request_id,
            TOO_MANY_SUBSCRIPTIONS,
            why,
        )
        return _error(why, TOO_MANY_SUBSCRIPTIONS)

    def _refusal(self, message: SubscribeMessage) -> GraphQLFormattedError | None:
        """Why this subscribe message is refused, as the error to send, or None."""
        view = cast(SubscriptionEndpoint, self.view)
        request_id = self.context.request_id
        if len(self.operations) >= MAX_SUBSCRIPTIONS:
            return self._too_many(f"at most {MAX_SUBSCRIPTIONS} subscriptions per connection")
        try:
            payload = message.get("payload")
            size = len(json.dumps(payload, ensure_ascii=False).encode())
            request = graphql_request(payload, size, WEBSOCKET)
            admit(view.schema_definition, request, self.context.role, view.limits)
        except BadBody as problem:
            observe_graphql("none", [problem.code])
            return _error(str(problem), problem.code)
        except Refused as refused:
            code = code_of(refused.error)
            observe_graphql("none", [code])
            logger.info(
                "graphql.refused request_id=%s code=%s message=%r",
                request_id,
                code,
                refused.error.message[:200],
            )
            return cast(GraphQLFormattedError, formatted(refused.error, request_id))
        return None


def _error(message: str, code: str) -> GraphQLFormattedError:
    return {"message": message, "extensions": {"code": code}}


class SubscriptionEndpoint(GraphQL[SocketContext, None]):
    """ASGI app for /graphql WebSocket connections (HTTP goes to GraphQLEndpoint)."""

    graphql_transport_ws_handler_class = AdmittingHandler
    websocket_adapter_class = BoundedSocket

    def __init__(
        self,
        schema: strawberry.Schema,
        config: ApiConfig,
        limits: GateLimits,
        *,
        tokens: list[ApiToken],
        allowed_origins: Sequence[str],
    ) -> None:
        super().__init__(
            schema,
            graphql_ide=None,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            connection_init_wait_timeout=timedelta(seconds=CONNECTION_INIT_SECONDS),
            max_subscriptions_per_connection=MAX_SUBSCRIPTIONS,
            allowed_origins=allowed_origins,
        )
        self.schema_definition = schema._schema
        self.config = config
        self.limits = limits
        self.tokens = tokens
        self.quota = SubscriptionQuota(
            config.max_subscriptions_per_client, config.max_subscriptions
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":  # never routed here; HTTP is GraphQLEndpoint's
            await Response(status_code=404)(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def create_websocket_response(
        self, request: WebSocket, subprotocol: str | None
    ) -> WebSocket:
        """Accept the handshake; with no subprotocol served among those offered, with the first
        offered one, so the close that follows (4406 and why) reaches a browser: a browser that
        offered subprotocols fails a handshake answering none, and its page learns nothing."""
        offered: list[str] = request.scope.get("subprotocols") or []
        await request.accept(subprotocol=subprotocol or next(iter(offered), None))
        return request

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> SocketContext:
        header_role = (
            role_for(self.tokens, request.headers.get("authorization")) if self.tokens else None
        )
        return SocketContext(
            pool=request.app.state.pool,
            # Open (no tokens): every caller is an admin, as over HTTP. Else settled at init.
            role=Role.ADMIN if not self.tokens else header_role or Role.READER,
            config=self.config,
            request_id=request_id_from(request.scope["headers"]),
            job_events=request.app.state.job_events,
            header_role=header_role,
            client=request.client.host if request.client else "-",
        )

    async def on_ws_connect(self, context: SocketContext) -> UnsetType | dict[str, object] | None:
        """connection_init: with tokens configured, a valid one from the upgrade request or the
        payload, else the connection is closed with 4403 (ConnectionRejectionError)."""
        if not self.tokens:
            return await super().on_ws_connect(context)
        role = context.header_role or role_for(
            self.tokens, _authorization(context.connection_params)
        )
        if role is None:
            logger.info("graphql.ws_unauthorized request_id=%s", context.request_id)
            raise ConnectionRejectionError()
        context.role = role
        return await super().on_ws_connect(context)


def _authorization(params: dict[str, object]) -> str | None:
    """The payload's Authorization value, whatever the case of its key."""
    value: Any = next((v for k, v in params.items() if k.lower() == "authorization"), None)
    return value if isinstance(value, str) else None
