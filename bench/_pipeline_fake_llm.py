"""The fake models of bench/pipeline.py: the scripted model of tests/support/llm.py
(`grounded_summary` for map calls, `merged_digest` for reduce calls) answering with the usage a
provider would report, either in-process (`InstantModel`, for an httpx MockTransport) or as its
own OpenAI-compatible HTTP server process answering after a fixed delay (`main`).

    python bench/_pipeline_fake_llm.py --delay 0.2     # prints the port on its first line

The server runs in its own process so that its CPU (JSON parsing, building answers) is not
counted as the runner's overhead. It records when each request arrived and when its answer
was ready (time.perf_counter, CLOCK_MONOTONIC on Linux, so comparable across processes) and
serves them at GET /intervals.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

from runner.llm.budget import count_request_tokens
from tests.test_llm_helpers import (
    grounded_summary,
    merged_digest,
    tool_of,
    usage_completion,
)


class ScriptedModel:
    """Answers forced tool calls from what it was sent, reporting usage like a provider:
    prompt tokens as tiktoken counts of the request, and the static prefix (system prompt and
    tool schema) as cached after the first request that carried it."""

    def __init__(self) -> None:
        self._seen_prefixes: dict[str, int] = {}

    def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        tool = tool_of(body)
        arguments = grounded_summary(body) if tool == "emit_chunk_summary" else merged_digest(body)
        prefix = json.dumps([body["messages"][0], body["tools"]], sort_keys=True)
        cached = self._seen_prefixes.get(prefix, 0)
        if prefix not in self._seen_prefixes:
            prefix_tokens, _ = count_request_tokens([body["messages"][0]], body["tools"])
            self._seen_prefixes[prefix] = prefix_tokens
        return usage_completion(body, tool, arguments, cached)


def serve(delay: float) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    model = ScriptedModel()
    intervals: list[tuple[float, float, str]] = []

    async def chat(request: Request) -> Response:
        received = time.perf_counter()
        body = await request.json()
        # The model "thinks" for `delay`, then answers; building the answer is the model's
        # time too, so the interval closes when the answer is ready to send.
        await asyncio.sleep(delay)
        answer = model.respond(body)
        intervals.append((received, time.perf_counter(), tool_of(body)))
        return JSONResponse(answer)

    async def get_intervals(request: Request) -> Response:
        return JSONResponse(intervals)

    async def reset(request: Request) -> Response:
        intervals.clear()
        return JSONResponse({"ok": True})

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/intervals", get_intervals, methods=["GET"]),
            Route("/reset", reset, methods=["POST"]),
        ]
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    )
    asyncio.run(server.serve(sockets=[sock]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.2, help="seconds before each answer")
    serve(parser.parse_args().delay)
    return 0


if __name__ == "__main__":
    sys.exit(main())
