"""Local receivers that answer like Slack's incoming webhooks and Discord's webhooks, served on
loopback (tests.support.servers), recording every request they took: their real status codes and
error bodies (Slack's plain-text codes, Discord's JSON `{code, message}`), their length checks,
and 429 with Retry-After (Slack) or a JSON `retry_after` plus rate limit headers (Discord).
A test queues the failures it wants with `fail_next`."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from runner.core.markdown_text import escape_inline as md
from tests.support.servers import running_server

SLACK_TRUNCATES_AT = 40_000
DISCORD_CONTENT_MAX = 2_000


def long_digest(items: int = 120) -> str:
    """A digest's Markdown as runner.exports.markdown writes it, long enough to be split, whose
    stored texts hold Slack and Discord mentions and markup: `items` action items citing nine
    footnotes, each footnote quoting a long message."""
    quote = md('"ok" ' * 40)
    lines = [f"# {md('ops-team <!channel> digest')}", "", "## Action items"]
    lines += [
        f"- {md(f'Item {n}: rotate the <@U{n:05d}> key & tell *everyone* @here')}[^{n % 9 + 1}]"
        for n in range(items)
    ]
    lines += [""] + [f"[^{n}]: ann, 2024-05-01 10:0{n} UTC, {quote}" for n in range(1, 10)]
    return "\n".join(lines)


@dataclass
class Scripted:
    status: int
    body: str | dict[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)
    after: int = 0  # requests taken normally before this reply is given


@dataclass
class Received:
    path: str
    query: dict[str, str]
    payload: dict[str, Any]


@dataclass
class FakeWebhook:
    """What a fake took (every request, in order) and the failures queued for it."""

    token: str
    received: list[Received] = field(default_factory=list)
    scripted: list[Scripted] = field(default_factory=list)
    base_url: str = ""

    def fail_next(
        self,
        status: int,
        body: str | dict[str, Any],
        headers: Mapping[str, str] | None = None,
        *,
        after: int = 0,
    ) -> None:
        """Answer a later request with `status` and `body`, after taking `after` requests."""
        self.scripted.append(Scripted(status, body, dict(headers or {}), after))

    def _scripted_reply(self) -> Response | None:
        if not self.scripted:
            return None
        if self.scripted[0].after > 0:
            self.scripted[0].after -= 1
            return None
        reply = self.scripted.pop(0)
        if isinstance(reply.body, dict):
            return JSONResponse(reply.body, reply.status, headers=dict(reply.headers))
        return PlainTextResponse(reply.body, reply.status, headers=dict(reply.headers))


@dataclass
class FakeSlack(FakeWebhook):
    """`POST /services/T000/B000/<token>`: 200 `ok`; 400 `invalid_payload` / `no_text`;
    404 `no_service` for an unknown token."""

    @property
    def url(self) -> str:
        return f"{self.base_url}/services/T000/B000/{self.token}"

    @property
    def texts(self) -> list[str]:
        return [str(r.payload.get("text", "")) for r in self.received]

    async def endpoint(self, request: Request) -> Response:
        if request.path_params["token"] != self.token:
            return PlainTextResponse("no_service", 404)
        try:
            payload = json.loads(await request.body())
        except ValueError:
            return PlainTextResponse("invalid_payload", 400)
        if not isinstance(payload, dict):
            return PlainTextResponse("invalid_payload", 400)
        if (reply := self._scripted_reply()) is not None:
            return reply
        if not str(payload.get("text", "")).strip() and not payload.get("blocks"):
            return PlainTextResponse("no_text", 400)
        payload["text"] = str(payload.get("text", ""))[:SLACK_TRUNCATES_AT]
        self.received.append(Received(request.url.path, dict(request.query_params), payload))
        return PlainTextResponse("ok", 200)


@dataclass
class FakeDiscord(FakeWebhook):
    """`POST /api/webhooks/1234/<token>`: 200 with the message (`?wait=true`) or 204; 400
    `{code: 50035}` for content over 2,000 characters, `{code: 50006}` for an empty message;
    404 `{code: 10015, message: "Unknown Webhook"}` for an unknown token."""

    @property
    def url(self) -> str:
        return f"{self.base_url}/api/webhooks/1234/{self.token}"

    @property
    def contents(self) -> list[str]:
        return [str(r.payload.get("content", "")) for r in self.received]

    async def endpoint(self, request: Request) -> Response:
        if request.path_params["token"] != self.token:
            return JSONResponse({"message": "Unknown Webhook", "code": 10015}, 404)
        try:
            payload = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"message": "Cannot send an empty message", "code": 50006}, 400)
        if (reply := self._scripted_reply()) is not None:
            return reply
        content = str(payload.get("content", ""))
        if len(content) > DISCORD_CONTENT_MAX:
            errors = {
                "content": {
                    "_errors": [
                        {
                            "code": "BASE_TYPE_MAX_LENGTH",
                            "message": "Must be 2000 or fewer in length.",
                        }
                    ]
                }
            }
            return JSONResponse(
                {"code": 50035, "errors": errors, "message": "Invalid Form Body"}, 400
            )
        if not content.strip() and not payload.get("embeds"):
            return JSONResponse({"message": "Cannot send an empty message", "code": 50006}, 400)
        self.received.append(Received(request.url.path, dict(request.query_params), payload))
        if request.query_params.get("wait") == "true":
            return JSONResponse(
                {"id": str(len(self.received)), "content": content, "webhook_id": "1234"}
            )
        return Response(status_code=204)


def discord_rate_limited(retry_after: float, *, global_limit: bool = False) -> Scripted:
    """Discord's 429: the JSON body with the wait in seconds (a fraction), and its headers."""
    return Scripted(
        429,
        {
            "message": "You are being rate limited.",
            "retry_after": retry_after,
            "global": global_limit,
        },
        {
            "Retry-After": str(int(retry_after) + 1),
            "X-RateLimit-Reset-After": f"{retry_after:.3f}",
            "X-RateLimit-Scope": "global" if global_limit else "shared",
        },
    )


@contextlib.asynccontextmanager
async def slack_webhook(token: str = "xoxb-secret-token") -> AsyncIterator[FakeSlack]:
    fake = FakeSlack(token)
    app = Starlette(routes=[Route("/services/T000/B000/{token}", fake.endpoint, methods=["POST"])])
    async with running_server(app) as base_url:
        fake.base_url = base_url
        yield fake


@contextlib.asynccontextmanager
async def discord_webhook(token: str = "discord-secret-token") -> AsyncIterator[FakeDiscord]:
    fake = FakeDiscord(token)
    app = Starlette(routes=[Route("/api/webhooks/1234/{token}", fake.endpoint, methods=["POST"])])
    async with running_server(app) as base_url:
        fake.base_url = base_url
        yield fake
