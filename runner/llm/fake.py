"""A fake OpenAI-compatible chat-completions endpoint whose answers come from a model function,
for the tests, the benchmarks, the evaluator and the scripts alike.

A model function takes a request's JSON body and returns a chat completion (a dict, see
`completion`) or any Starlette `Response`: an error status (`error`, with `Retry-After` if
asked), or a body that is not a completion (`raw`). It may be async, to take its time like a
slow model (`delayed`), and it may raise: in-process the exception reaches the client as is (an
`httpx.ReadTimeout` plays a timeout), over a port it is a 500.

One Starlette app serves it, reached either in-process through an httpx transport
(`FakeLLM.http_client`, no socket) or over a free loopback port (`FakeLLM.serve` in the running
event loop, `FakeLLM.serve_in_thread` beside synchronous code); the real `openai` client is
always on the other side. Every exchange is recorded with its body, headers and timings, which
`GET /fake/exchanges` also serves (without bodies) to a process that does not share memory
with the fake.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

Answer = Mapping[str, Any] | Response
Model = Callable[[dict[str, Any]], Answer | Awaitable[Answer]]

CHAT_PATH = "/v1/chat/completions"
# The base URL a client built over `FakeLLM.http_client` may name: the transport ignores it.
IN_PROCESS_BASE_URL = "http://fake-llm.test/v1"


# --- what a model function answers ----------------------------------------------------------


def completion(
    *,
    tool: str | None = None,
    arguments: Any = None,
    content: str | None = None,
    finish_reason: str = "tool_calls",
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    cached_tokens: int = 0,
    model: str = "fake",
    call_id: str = "call_1",
) -> dict[str, Any]:
    """A chat.completion body: a call of `tool` with `arguments` (JSON-encoded unless already a
    string, so a malformed string goes out as is), and/or text `content`."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool is not None:
        encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": tool, "arguments": encoded}}
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason, "message": message}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens},
        },
    }


def error(
    status: int,
    message: str = "error",
    *,
    retry_after: float | None = None,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """An error answer: `{"error": {"message": ...}}` (or `body`) with `status`, and a
    `Retry-After` header when `retry_after` is given."""
    sent = dict(headers or {})
    if retry_after is not None:
        sent["retry-after"] = f"{retry_after:g}"
    payload = {"error": {"message": message}} if body is None else body
    return JSONResponse(payload, status_code=status, headers=sent)


def raw(content: str | bytes, content_type: str, status: int = 200) -> Response:
    """A body sent exactly as given: an HTML page, JSON cut off, an empty body."""
    return Response(content, status_code=status, headers={"content-type": content_type})


def delayed(model: Model, seconds: float) -> Model:
    """`model` answering only after `seconds`, like a model that takes its time."""

    async def slow(body: dict[str, Any]) -> Answer:
        await asyncio.sleep(seconds)
        answer = model(body)
        return await answer if inspect.isawaitable(answer) else answer

    return slow


def char_tokenizer(
    chars_per_token: int = 2, field: str = "content"
) -> Callable[[dict[str, Any]], Answer]:
    """A `/tokenize` answer with one token per `chars_per_token` characters of the body's
    `field` (llama.cpp's server reads `content`, llama-cpp-python's `/extras/tokenize` reads
    `input`): deterministic, and unlike cl100k_base, so a test can tell whose count was used."""

    def tokenize(body: dict[str, Any]) -> Answer:
        text = body.get(field)
        if not isinstance(text, str):
            return error(400, f"'{field}' is required")
        return {"tokens": list(range(-(-len(text) // chars_per_token)))}

    return tokenize


def tool_of(body: Mapping[str, Any]) -> str | None:
    """The name of the tool a request forces (`tool_choice`), if any."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return str(choice["function"].get("name"))
    return None


# --- the endpoint ----------------------------------------------------------------------------


@dataclass
class Exchange:
    """One chat request and the answer it got; the times are `time.perf_counter()` readings
    (CLOCK_MONOTONIC on Linux: comparable across the processes of one machine)."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    received: float
    answered: float = 0.0
    status: int = 0


class FakeLLM:
    """The fake endpoint: POST /v1/chat/completions answered by `model`; GET `routes` (e.g.
    `/v1/models`, llama.cpp's `/props`) answered with their JSON, POST `posts` (e.g. llama.cpp's
    `/tokenize`, see `char_tokenizer`) by their function of the body, any other path with a
    404."""

    def __init__(
        self,
        model: Model,
        routes: Mapping[str, Any] | None = None,
        posts: Mapping[str, Model] | None = None,
    ) -> None:
        self.model = model
        self.exchanges: list[Exchange] = []
        self.requests: list[dict[str, Any]] = []  # the bodies, in arrival order
        self.gets: list[str] = []  # the paths of the GET `routes` asked, in arrival order
        # (path, body) of every POST to a `posts` route, in arrival order.
        self.posted: list[tuple[str, dict[str, Any]]] = []
        static = [
            Route(path, self._static(payload), methods=["GET"])
            for path, payload in (routes or {}).items()
        ]
        static += [
            Route(path, self._posted(answer), methods=["POST"])
            for path, answer in (posts or {}).items()
        ]
        self.app = Starlette(
            routes=[
                Route(CHAT_PATH, self._chat, methods=["POST"]),
                Route("/fake/exchanges", self._list_exchanges, methods=["GET"]),
                Route("/fake/reset", self._reset, methods=["POST"]),
                *static,
            ]
        )

    def tools_called(self) -> list[str | None]:
        return [tool_of(body) for body in self.requests]

    def reset(self) -> None:
        self.exchanges.clear()
        self.requests.clear()
        self.gets.clear()
        self.posted.clear()

    async def _chat(self, request: Request) -> Response:
        received = time.perf_counter()
        body = await request.json()
        exchange = Exchange(request.url.path, body, dict(request.headers), received)
        self.exchanges.append(exchange)
        self.requests.append(exchange.body)
        answer = self.model(exchange.body)
        if inspect.isawaitable(answer):
            answer = await answer
        exchange.answered = time.perf_counter()
        response = answer if isinstance(answer, Response) else JSONResponse(answer)
        exchange.status = response.status_code
        return response

    def _static(self, payload: Any) -> Callable[[Request], Awaitable[Response]]:
        async def answer(request: Request) -> Response:
            self.gets.append(request.url.path)
            return JSONResponse(payload)

        return answer

    def _posted(self, model: Model) -> Callable[[Request], Awaitable[Response]]:
        async def answer(request: Request) -> Response:
            body = await request.json()
            self.posted.append((request.url.path, body))
            reply = model(body)
            if inspect.isawaitable(reply):
                reply = await reply
            return reply if isinstance(reply, Response) else JSONResponse(reply)

        return answer

    async def _list_exchanges(self, request: Request) -> Response:
        return JSONResponse(
            [
                {
                    "path": e.path,
                    "tool": tool_of(e.body),
                    "status": e.status,
                    "received": e.received,
                    "answered": e.answered,
                }
                for e in self.exchanges
            ]
        )

    async def _reset(self, request: Request) -> Response:
        self.reset()
        return JSONResponse({"ok": True})

    # --- reaching it ---

    def transport(self) -> httpx.AsyncBaseTransport:
        """An httpx transport whose requests this fake answers in-process, without a socket."""
        return httpx.ASGITransport(self.app)

    def http_client(self) -> httpx.AsyncClient:
        """An httpx client over `transport()`, for `openai.AsyncOpenAI(http_client=...)` or
        `runner.llm.client.build_client`."""
        return httpx.AsyncClient(transport=self.transport(), base_url=IN_PROCESS_BASE_URL)

    @contextlib.asynccontextmanager
    async def serve(self) -> AsyncIterator[str]:
        """Serve on a free port of 127.0.0.1 in the running event loop; yields the base URL
        (`http://127.0.0.1:PORT/v1`)."""
        import uvicorn

        sock = _loopback_socket()
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off", access_log=False)
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            while not server.started:
                if task.done():  # it failed to start: say why
                    await task
                await asyncio.sleep(0.01)
            yield _base_url(sock)
        finally:
            server.should_exit = True
            await task
            sock.close()

    @contextlib.contextmanager
    def serve_in_thread(self) -> Iterator[str]:
        """`serve` in an event loop of its own on a daemon thread, for synchronous callers;
        yields the base URL and stops the server on exit."""
        ready = threading.Event()
        stop = threading.Event()
        base_url: list[str] = []
        failure: list[BaseException] = []

        async def run() -> None:
            async with self.serve() as url:
                base_url.append(url)
                ready.set()
                while not stop.is_set():
                    await asyncio.sleep(0.05)

        def target() -> None:
            try:
                asyncio.run(run())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
                failure.append(exc)
            finally:
                ready.set()

        thread = threading.Thread(target=target, name="fake-llm", daemon=True)
        thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        try:
            yield base_url[0]
        finally:
            stop.set()
            thread.join(10)


def _loopback_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def _base_url(sock: socket.socket) -> str:
    return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
