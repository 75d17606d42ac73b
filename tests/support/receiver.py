"""A webhook receiver on loopback for delivery tests: it checks each request's signature the
way docs/deliveries.md tells receivers to, records what it got, and answers with the statuses
(and Retry-After) a test scripts, as a real receiver that is failing would."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from runner.delivery.webhook import (
    DELIVERY_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    verify_signature,
)
from tests.support.servers import free_port


@dataclass(frozen=True)
class Received:
    delivery_id: str
    event: str
    body: dict[str, Any]
    signature_valid: bool
    at: float  # time.monotonic() when it arrived


@dataclass(frozen=True)
class Answer:
    status: int = 200
    retry_after: str | None = None
    delay_seconds: float = 0.0  # wait this long before answering (a slow receiver)


@dataclass
class Receiver:
    """Answers each request with the next scripted `Answer` (then 200), recording it first."""

    secret: str
    answers: list[Answer] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def distinct_ids(self) -> list[str]:
        return list(dict.fromkeys(r.delivery_id for r in self.received))

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        valid = verify_signature(
            self.secret,
            request.headers.get(TIMESTAMP_HEADER, ""),
            body,
            request.headers.get(SIGNATURE_HEADER, ""),
        )
        payload = json.loads(body)
        self.received.append(
            Received(
                request.headers.get(DELIVERY_HEADER, ""),
                str(payload.get("event")),
                payload,
                valid,
                time.monotonic(),
            )
        )
        self.arrived.set()
        answer = self.answers.pop(0) if self.answers else Answer()
        if answer.delay_seconds:
            await asyncio.sleep(answer.delay_seconds)
        if not valid:
            return JSONResponse({"error": "bad signature"}, status_code=401)
        headers = {"Retry-After": answer.retry_after} if answer.retry_after else {}
        return JSONResponse({"ok": answer.status < 300}, status_code=answer.status, headers=headers)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/hooks/{token}", self.handle, methods=["POST"])])


@contextlib.asynccontextmanager
async def serving(receiver: Receiver, port: int | None = None) -> AsyncIterator[int]:
    """Serve `receiver` on loopback (on `port` when given: a receiver that comes back where it
    was); yields the port."""
    port = port or free_port()
    server = uvicorn.Server(
        uvicorn.Config(receiver.app(), host="127.0.0.1", port=port, log_level="warning")
    )
    task = asyncio.create_task(server.serve())
    for _ in range(200):
        if server.started:
            break
        if task.done():
            task.result()
        await asyncio.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        await task
