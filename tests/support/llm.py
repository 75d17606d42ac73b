"""The scripted digest models of the LLM tests (and of bench/pipeline.py), served by the fake
endpoint of runner/llm/fake.py behind the real `openai` client, and a tiny chat-log parser.

A scripted model reads what the extractor actually sent (the chunk's `<message>` elements, the
reduce step's `<summary>` JSON) and answers with tool calls built from it, so the whole pipeline
runs end to end without a real model. A packed map request (`emit_chunk_summaries`, several
`<chunk>` elements) is answered chunk by chunk by the same builder (`packed`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from xml.sax.saxutils import unescape

import pytest

from runner.core.contract import ChunkSummary
from runner.core.tokens import count_tokens
from runner.core.vocabulary import MappedChunk
from runner.core.window import Window, WindowMessage
from runner.extract.llm import LLMExtractor
from runner.grounding.normalize import normalize_text
from runner.llm.breaker import CircuitBreaker
from runner.llm.client import build_client
from runner.llm.config import LLMConfig
from runner.llm.fake import FakeLLM, completion, tool_of
from tests.support.paths import REPO_ROOT

DATA_DIR = REPO_ROOT.parent / "shared" / "data"
API_KEY = "sk-test-SECRET-0123456789abcdef"

_ATTR = re.compile(r"""(\w+)=(?:"([^"]*)"|'([^']*)')""")
_MESSAGE = re.compile(r"<message ([^>]*)>(.*?)</message>", re.DOTALL)
_CHUNK = re.compile(r'<chunk index="(\d+)"[^>]*>.*?</chunk>\n', re.DOTALL)
_KNOWN = re.compile(r"<known_items>\n.*?</known_items>\n", re.DOTALL)
_SUMMARY = re.compile(r"<summary [^>]*>(.*?)</summary>", re.DOTALL)
_ATTR_ENTITIES = {"&quot;": '"', "&#10;": "\n", "&#13;": "\r", "&#9;": "\t"}


def shared_data(relative: str) -> Path:
    path = DATA_DIR / relative
    if not path.exists():
        pytest.skip(f"../shared/data/{relative} is absent (real data lives beside the repo)")
    return path


# --- windows --------------------------------------------------------------------------------


def mapped(summaries: list[ChunkSummary]) -> list[MappedChunk]:
    """Summaries as the pipeline hands them to the reduce step: each from a chunk that held the
    messages it calls notable."""
    return [MappedChunk(summary, tuple(summary.notable_message_ids)) for summary in summaries]


def make_window(texts: list[str], channel: str = "general") -> Window:
    start = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    messages = tuple(
        WindowMessage(
            message_id=str(1000 + i),
            author=f"user{i % 3}",
            ts=start + timedelta(minutes=i),
            normalized_text=normalize_text(text),
        )
        for i, text in enumerate(texts)
    )
    return Window(channel_name=channel, messages=messages)


_CHAT_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] <([^>]+)> ?(.*)$")


def parse_chat_log(path: Path) -> Window:
    """`[YYYY-MM-DD HH:MM:SS] <author> text` lines; other lines continue the previous message."""
    messages: list[WindowMessage] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _CHAT_LINE.match(line)
        if match:
            ts = datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
            messages.append(
                WindowMessage(str(len(messages) + 1), match[2], ts, normalize_text(match[3]))
            )
        elif messages and line.strip():
            last = messages[-1]
            messages[-1] = WindowMessage(
                last.message_id,
                last.author,
                last.ts,
                normalize_text(last.normalized_text + "\n" + line),
            )
    return Window(channel_name=path.stem, messages=tuple(messages))


# --- reading requests -----------------------------------------------------------------------


@dataclass(frozen=True)
class SentMessage:
    message_id: str
    text: str  # the part's text, unescaped
    offset: int  # where the part starts in the whole message


def _attributes(raw: str) -> dict[str, str]:
    values = {}
    for name, double, single in _ATTR.findall(raw):
        value = double or single
        for entity, char in _ATTR_ENTITIES.items():
            value = value.replace(entity, char)
        values[name] = unescape(value)
    return values


def chunk_messages_of(body: dict[str, Any]) -> list[SentMessage]:
    """The `<message>` elements of the last user message of a request."""
    user = [m for m in body["messages"] if m["role"] == "user"][0]["content"]
    chunk = user.split("<chunk", 1)[1] if "<chunk" in user else user
    sent = []
    for raw_attributes, text in _MESSAGE.findall(chunk):
        attributes = _attributes(raw_attributes)
        sent.append(SentMessage(attributes["id"], unescape(text), int(attributes.get("offset", 0))))
    return sent


def chunk_requests(body: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """Each `<chunk>` of a (packed) map request with its index, as the body of a request that
    carried that chunk alone: the same messages, the user message holding only that chunk."""
    user = [m for m in body["messages"] if m["role"] == "user"][0]["content"]
    known = _KNOWN.search(user)
    singles = []
    for match in _CHUNK.finditer(user):
        content = (known[0] if known else "") + match[0]
        messages = [
            {**m, "content": content} if m["role"] == "user" else m for m in body["messages"]
        ]
        singles.append((int(match[1]), {**body, "messages": messages}))
    return singles


def packed(
    map_arguments: Callable[[dict[str, Any]], Any],
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The arguments of `emit_chunk_summaries`: `map_arguments` of each chunk, with its index."""

    def build(body: dict[str, Any]) -> dict[str, Any]:
        return {
            "summaries": [
                {"chunk": index, **map_arguments(single)} for index, single in chunk_requests(body)
            ]
        }

    return build


def summaries_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    user = [m for m in body["messages"] if m["role"] == "user"][0]["content"]
    return [json.loads(unescape(raw)) for raw in _SUMMARY.findall(user)]


# --- responses ------------------------------------------------------------------------------


def usage_completion(
    body: dict[str, Any], tool: str, arguments: Any, cached_tokens: int
) -> dict[str, Any]:
    """A completion reporting usage like a provider: prompt tokens as tiktoken counts of the
    request, completion tokens of the arguments, and `cached_tokens` of the prefix."""
    from runner.llm.budget import count_request_tokens

    prompt, _ = count_request_tokens(body["messages"], body["tools"])
    return completion(
        tool=tool,
        arguments=arguments,
        prompt_tokens=prompt,
        completion_tokens=count_tokens(json.dumps(arguments)).tokens,
        cached_tokens=cached_tokens,
    )


def minimal_summary(body: dict[str, Any]) -> dict[str, Any]:
    sent = chunk_messages_of(body)
    return {
        "chunk_summary": f"{len(sent)} messages about containers.",
        "signal_quality": {"level": "low", "reason": "scripted"},
        "notable_message_ids": [sent[0].message_id] if sent else [],
    }


def grounded_summary(body: dict[str, Any]) -> dict[str, Any]:
    """A summary whose items are true to the chunk, with pointers whose offsets are wrong on
    purpose (shifted by 3) while their quotes are right, so validation must re-anchor them."""
    sent = chunk_messages_of(body)
    longest = max(sent, key=lambda m: len(m.text))
    words = longest.text.split()
    quote = " ".join(words[1:7]) if len(words) > 7 else longest.text
    start = longest.offset + max(0, longest.text.find(quote))
    topic = " ".join(words[:3]) or "x"  # a topic title in the words of the message it cites
    summary: dict[str, Any] = {
        "chunk_summary": f"Discussion over {len(sent)} messages.",
        "signal_quality": {"level": "medium", "reason": "scripted"},
        "topics": [{"title": topic, "message_ids": [longest.message_id]}],
        "decisions": [{"text": " ".join(words[:8]) or "x", "message_ids": [longest.message_id]}],
        "knowledge_items": [
            {
                "key": "K1",
                "kind": "fact",
                "title": "quoted",
                "content_pointer": {
                    "message_id": longest.message_id,
                    "char_start": start + 3,
                    "char_end": start + 3 + len(quote),
                    "quote": quote,
                },
                "message_ids": [longest.message_id],
            }
        ],
        "notable_message_ids": [m.message_id for m in sent[:2]],
    }
    return summary


def merged_digest(body: dict[str, Any], limit: int = 40) -> dict[str, Any]:
    """What a faithful reduce model returns: the union of the summaries' items, cut (latest
    items first) to what fits the request's `max_tokens`, as a real model's output would be."""
    summaries = summaries_of(body)
    decisions = [item for s in summaries for item in s.get("decisions", [])]
    topics = [item for s in summaries for item in s.get("topics", [])]
    digest: dict[str, Any] = {
        # Title and overview in the words of what the summaries cite, as a faithful model writes.
        "title": topics[0]["title"] if topics else "Scripted digest",
        "overview": [
            {"sentence": d["text"], "message_ids": d["message_ids"][:8]} for d in decisions[:12]
        ],
        "coverage": {"messages_total": 0, "messages_covered": 0},
        "signal_quality": {"level": "medium", "reason": "scripted"},
    }
    for name, cap in (("topics", 12), ("decisions", 25), ("knowledge_items", 60)):
        items = [item for s in summaries for item in s.get(name, [])]
        if name == "knowledge_items":
            seen: set[str] = set()
            unique = []
            for item in items:
                if item["key"] not in seen:
                    seen.add(item["key"])
                    unique.append(item)
            items = unique
        digest[name] = items[: min(cap, limit)]
    digest["notable_message_ids"] = list(
        dict.fromkeys(i for s in summaries for i in s.get("notable_message_ids", []))
    )[:20]
    max_tokens = body.get("max_tokens") or body.get("max_completion_tokens") or 10**9
    while count_tokens(json.dumps(digest)).tokens > max_tokens:
        longest = max(("topics", "decisions", "knowledge_items"), key=lambda n: len(digest[n]))
        if not digest[longest]:
            digest["overview"] = digest["overview"][: len(digest["overview"]) // 2]
            continue
        digest[longest].pop()
    return digest


def scripted(
    map_arguments: Callable[[dict[str, Any]], Any] = grounded_summary,
    reduce_arguments: Callable[[dict[str, Any]], Any] = merged_digest,
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A model that answers each forced tool call with the matching builder's arguments (a
    packed map request with `map_arguments` of each of its chunks)."""
    builders = {
        "emit_chunk_summary": map_arguments,
        "emit_chunk_summaries": packed(map_arguments),
    }

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        tool = tool_of(body)
        build = builders.get(tool or "", reduce_arguments)
        return completion(tool=tool, arguments=build(body))

    return respond


@dataclass
class Sleeps:
    """A stand-in for asyncio.sleep that records the delays and returns at once."""

    delays: list[float] = field(default_factory=list)

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def make_extractor(
    endpoint: FakeLLM,
    *,
    breaker: CircuitBreaker | None = None,
    sleeps: Sleeps | None = None,
    **config: Any,
) -> LLMExtractor:
    """An extractor whose client is built the production way (build_client) over the fake
    endpoint, in-process."""
    settings = LLMConfig(base_url="http://llm.test/v1", api_key=API_KEY, **config)
    return LLMExtractor(
        settings,
        client=build_client(settings, http_client=endpoint.http_client()),
        breaker=breaker or CircuitBreaker("test"),
        sleep=sleeps or Sleeps(),
    )
