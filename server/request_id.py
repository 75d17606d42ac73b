"""Every HTTP response carries an `X-Request-Id`, and no exception reaches a client as text.

The id is the client's own `X-Request-Id` when it sends a sane one (a proxy or a script that
tags its calls can then find them in our log), else made here. It is on every log line written
while the request is served (server/logs.py), so a client quoting it lets an operator find the
details of a fault that the client only saw as "Internal server error".
"""

from __future__ import annotations

import json
import logging
import re
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schema.errors import INTERNAL, INTERNAL_MESSAGE
from server.logs import current_request_id

logger = logging.getLogger(__name__)

HEADER = b"x-request-id"
# What a client may choose as its id: short, and nothing that could forge a log line or header.
CLIENT_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def request_id_from(headers: list[tuple[bytes, bytes]]) -> str:
    for name, value in headers:
        if name.lower() == HEADER:
            text = value.decode("latin-1")
            if CLIENT_ID.fullmatch(text):
                return text
    return uuid.uuid4().hex


def request_id_of(scope: Scope) -> str:
    return str(scope.get("state", {}).get("request_id", "-"))


class RequestIdMiddleware:
    """Outermost: names the request, adds the header, and turns an escaped exception into a
    logged fault and a generic 500."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = request_id_from(scope.get("headers", []))
        scope.setdefault("state", {})["request_id"] = request_id
        token = current_request_id.set(request_id)
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [
                    (name, value)
                    for name, value in message.get("headers", [])
                    if name.lower() != HEADER
                ]
                headers.append((HEADER, request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            logger.exception(
                "http.internal_error request_id=%s method=%s path=%s",
                request_id,
                scope.get("method"),
                scope.get("path"),
            )
            if not started:
                await _internal_error(send_with_id, request_id)
        finally:
            current_request_id.reset(token)


async def _internal_error(send: Send, request_id: str) -> None:
    body = json.dumps(
        {
            "errors": [
                {
                    "message": INTERNAL_MESSAGE,
                    "extensions": {"code": INTERNAL, "requestId": request_id},
                }
            ]
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 500,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
