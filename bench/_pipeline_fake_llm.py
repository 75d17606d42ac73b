"""The fake model of bench/pipeline.py and bench/coverage.py: the scripted model of
tests/support/llm.py (`grounded_summary` for map calls, each chunk of a packed one, `merged_digest` for reduce calls)
answering with the usage a provider would report. The fake endpoint of runner/llm/fake.py serves
it, in-process (bench/pipeline.py's instant run) or, run as a script, in a process of its own
answering after a fixed delay per chunk summary it writes (`main`: a request carrying three chunks
waits three times as long, as a real model's time grows with the tokens it writes):

    python bench/_pipeline_fake_llm.py --delay 0.2     # prints its base URL on its first line

The server runs in its own process so that its CPU (JSON parsing, building answers) is not
counted as the runner's overhead. The fake endpoint records when each request arrived and when
its answer was ready (time.perf_counter, CLOCK_MONOTONIC on Linux, so comparable across
processes) and serves them at GET /fake/exchanges.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

from runner.llm.budget import count_request_tokens
from runner.llm.fake import Answer, FakeLLM, tool_of
from tests.support.llm import (
    chunk_requests,
    grounded_summary,
    merged_digest,
    packed,
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
        assert tool is not None  # every request of the pipeline forces its tool
        if tool == "emit_chunk_summary":
            arguments = grounded_summary(body)
        elif tool == "emit_chunk_summaries":
            arguments = packed(grounded_summary)(body)
        else:
            arguments = merged_digest(body)
        prefix = json.dumps([body["messages"][0], body["tools"]], sort_keys=True)
        cached = self._seen_prefixes.get(prefix, 0)
        if prefix not in self._seen_prefixes:
            prefix_tokens, _ = count_request_tokens([body["messages"][0]], body["tools"])
            self._seen_prefixes[prefix] = prefix_tokens
        return usage_completion(body, tool, arguments, cached)


def per_summary(model: ScriptedModel, delay: float) -> Any:
    """`model` answering after `delay` seconds per chunk summary it writes (one for a reduce)."""

    async def slow(body: dict[str, Any]) -> Answer:
        summaries = len(chunk_requests(body)) if tool_of(body) == "emit_chunk_summaries" else 1
        await asyncio.sleep(delay * max(1, summaries))
        return model.respond(body)

    return slow


async def serve(delay: float) -> None:
    """Serve the scripted model, each answer `delay` seconds late per chunk summary, until the
    process ends."""
    fake = FakeLLM(per_summary(ScriptedModel(), delay))
    async with fake.serve() as base_url:
        print(base_url, flush=True)
        await asyncio.Event().wait()  # SIGTERM ends the process


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--delay", type=float, default=0.2, help="seconds before an answer, per chunk summary"
    )
    asyncio.run(serve(parser.parse_args().delay))
    return 0


if __name__ == "__main__":
    sys.exit(main())
