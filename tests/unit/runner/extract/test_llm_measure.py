"""Token economy of the LLM extractor on the largest real chat in ../shared/data
(gitter/manual_docker.txt), with a fake model that returns a minimal valid summary and reports
usage as tiktoken counts of what it was sent (and, like a provider with prompt caching, the
static prefix as cached after the first call).

    /tmp/venv/bin/python tests/unit/runner/extract/test_llm_measure.py      # prints the table for several sizes
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from runner.core.tokens import count_tokens
from runner.digests.pipeline import run_pipeline
from runner.llm.fake import FakeLLM, tool_of
from runner.llm.prompts import MAP_PROMPT, MAP_PROMPT_VERSION, Prompt, load_prompt
from tests.support.llm import (
    make_extractor,
    merged_digest,
    minimal_summary,
    parse_chat_log,
    shared_data,
    usage_completion,
)

LARGEST_CHAT = "chat/gitter/manual_docker.txt"


def usage_reporting_model(prefix_tokens: dict[str, int]) -> FakeLLM:
    seen_prefixes: set[str] = set()

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        tool = tool_of(body)
        assert tool is not None  # every request forces its tool
        arguments = minimal_summary(body) if tool == "emit_chunk_summary" else merged_digest(body)
        prefix = json.dumps([body["messages"][0], body["tools"]])
        cached = prefix_tokens[tool] if prefix in seen_prefixes else 0
        seen_prefixes.add(prefix)
        return usage_completion(body, tool, arguments, cached)

    return FakeLLM(respond)


async def measure(chunk_tokens: int, map_prompt: str | None = None) -> dict[str, float]:
    window = parse_chat_log(shared_data(LARGEST_CHAT))
    probe = make_extractor(FakeLLM(lambda body: {}))
    if map_prompt is not None:
        probe.map_prompt = Prompt("map", "measure", map_prompt)
    prefix = {"emit_chunk_summary": probe.static_prefix_tokens(), "emit_digest": 0}
    endpoint = usage_reporting_model(prefix)
    extractor = make_extractor(endpoint, concurrency=8)
    extractor.map_prompt = probe.map_prompt
    result = await run_pipeline(window, extractor, chunk_tokens=chunk_tokens, concurrency=8)
    usage = extractor.usage
    assert not result.failed_chunks
    messages = len(window.messages)
    # Content as sent is the chunk XML (text plus id/author/ts markup); the bare text is less.
    text_tokens = sum(count_tokens(m.normalized_text).tokens for m in window.messages)
    return {
        "messages": messages,
        "chunks": result.chunk_count,
        "calls": usage.llm_calls,
        "calls_per_1000_messages": 1000 * usage.llm_calls / messages,
        "static_prefix_tokens": prefix["emit_chunk_summary"],
        "content_tokens": usage.content_tokens,
        "message_text_tokens": text_tokens,
        "prompt_tokens": usage.prompt_tokens,
        "cached_tokens": usage.cached_tokens,
        "prompt_to_content": usage.prompt_tokens / usage.content_tokens,
        "uncached_prompt_to_content": (usage.prompt_tokens - usage.cached_tokens)
        / usage.content_tokens,
        "prompt_to_message_text": usage.prompt_tokens / text_tokens,
    }


async def test_token_economy_at_the_default_chunk_size() -> None:
    figures = await measure(3000)
    print("\nmanual_docker.txt @ 3000-token chunks:", json.dumps(figures, indent=1))
    assert figures["messages"] > 900
    # The map prompt is sent once per chunk, so at 3000-token chunks it costs under 100%.
    assert 1.0 < figures["prompt_to_content"] < 2.0
    assert figures["calls"] == figures["chunks"] + 1  # one reduce call fits everything
    assert figures["calls_per_1000_messages"] < 25


async def main() -> None:
    sizes = (1000, 2000, 3000, 4000, 6000, 8000, 12000)
    name = f"map.{MAP_PROMPT_VERSION}"
    no_example = load_prompt(MAP_PROMPT, MAP_PROMPT_VERSION).text.split("Example", 1)[0]
    variants = [(f"{name} (prompt+example+schema)", None), (f"{name} without example", no_example)]
    print(
        f"{'variant':34} {'chunk':>6} {'prefix':>6} {'chunks':>6} {'calls/1k':>8} "
        f"{'prompt/content':>14} {'uncached/content':>16} {'prompt/text':>11}"
    )
    for label, prompt in variants:
        for size in sizes:
            f = await measure(size, prompt)
            print(
                f"{label:34} {size:>6} {f['static_prefix_tokens']:>6} {f['chunks']:>6} "
                f"{f['calls_per_1000_messages']:>8.1f} {f['prompt_to_content']:>14.2f} "
                f"{f['uncached_prompt_to_content']:>16.2f} {f['prompt_to_message_text']:>11.2f}"
            )
    print(
        f"messages: {f['messages']}, chunk XML tokens: {f['content_tokens']}, "
        f"bare message text tokens: {f['message_text_tokens']}"
    )


if __name__ == "__main__":
    asyncio.run(main())
