"""Provider-native token counts: a request's prompt counted by a llama.cpp or llama-cpp-python
server with the model's own tokenizer, before the request is sent.

cl100k_base (runner.core.tokens) is OpenAI's tokenizer; a local model's vocabulary may count the
same text with many more tokens, so a request that fits by cl100k can still overflow the
server's context. The servers that say who they are in `GET /v1/models` (runner.llm.bounds)
also tokenize on request:
- llama.cpp's server (tools/server): `POST /tokenize` at the server root, `{"content": ...,
  "add_special": false}` → `{"tokens": [...]}`;
- llama-cpp-python's server (llama_cpp/server/app.py): `POST /extras/tokenize` at the server
  root, `{"input": ..., "model": ...}` → `{"tokens": [...]}` (it tokenizes with special tokens
  parsed, so a piece may count one BOS more: a count errs on the safe side).
The counting order is the seed's: provider-native, then the tokenizer (cl100k_base, with what a
refusal taught of the server's ratio, runner.llm.limits), then chars/4. Counts are cached by a
hash of the text and the model (bounded, per client). A failing, timing-out or missing tokenize
route is remembered for the client: its later requests are counted by the tokenizer without
asking again, and `native_failed` tells the caller to report TOKEN_COUNT_ESTIMATE_USED. Any
other endpoint (OpenAI, vLLM, ...) is never asked.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import httpx

from runner.llm.bounds import known_server
from runner.llm.budget import request_pieces
from runner.llm.redaction import RedactionSession, redact_texts_off_loop

logger = logging.getLogger(__name__)

# How long one tokenize request may take: the server answers from memory in milliseconds, so
# one that takes longer is busy or broken, and the tokenizer's count is good enough.
TOKENIZE_TIMEOUT_SECONDS = 5.0
# Texts whose counts one client keeps: the static prefixes of every kind of request and the
# chunks and evidence in flight; least recently used first out.
CACHE_SIZE = 4096

# Where each server tokenizes, relative to its root (not under /v1), and the body it reads.
ROUTES = {"llama.cpp": "/tokenize", "llama-cpp-python": "/extras/tokenize"}


def tokenize_body(server: str, model: str, text: str) -> dict[str, Any]:
    if server == "llama.cpp":
        return {"content": text, "add_special": False}
    return {"input": text, "model": model}


@dataclass
class _ServerTokenizer:
    """One client's tokenize route: its cached counts and whether it failed."""

    server: str
    cache: OrderedDict[tuple[str, str], int] = field(default_factory=OrderedDict)
    failed: bool = False
    answered: bool = False  # a first count came back: later ones need not wait in line
    first: asyncio.Lock = field(default_factory=asyncio.Lock)


_tokenizers: weakref.WeakKeyDictionary[Any, _ServerTokenizer] = weakref.WeakKeyDictionary()


def _root(client: Any) -> str:
    root = str(client.base_url).rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _key(model: str, text: str) -> tuple[str, str]:
    return model, hashlib.sha256(text.encode("utf-8")).hexdigest()


async def _tokenize(client: Any, state: _ServerTokenizer, model: str, text: str) -> int:
    """The server's token count of `text`; raises for any failure."""
    url = f"{_root(client)}{ROUTES[state.server]}"
    async with asyncio.timeout(TOKENIZE_TIMEOUT_SECONDS + 1):
        response = await client.post(
            url,
            cast_to=httpx.Response,
            body=tokenize_body(state.server, model, text),
            options={"timeout": TOKENIZE_TIMEOUT_SECONDS},
        )
    if response.status_code != 200:
        raise ValueError(f"HTTP {response.status_code}")
    tokens = response.json().get("tokens")
    if not isinstance(tokens, list):
        raise ValueError("no token list")
    return len(tokens)


async def _count_piece(client: Any, state: _ServerTokenizer, model: str, text: str) -> int | None:
    key = _key(model, text)
    if key in state.cache:
        state.cache.move_to_end(key)
        return state.cache[key]
    if state.failed:
        return None
    try:
        tokens = await _tokenize(client, state, model, text)
    except Exception as error:  # noqa: BLE001 - a missing or broken route means "use ours"
        if not state.failed:
            state.failed = True
            logger.warning(
                "LLM endpoint %s is %s's server but its tokenize route failed (%s): prompts are "
                "counted with cl100k_base instead",
                getattr(client, "base_url", "?"),
                state.server,
                type(error).__name__,
            )
        return None
    state.answered = True
    state.cache[key] = tokens
    while len(state.cache) > CACHE_SIZE:
        state.cache.popitem(last=False)
    return tokens


def _state(client: Any) -> _ServerTokenizer | None:
    server = known_server(client)
    if server not in ROUTES:
        return None
    state = _tokenizers.get(client)
    if state is None or state.server != server:
        state = _tokenizers[client] = _ServerTokenizer(server)
    return state


async def native_request_tokens(
    client: Any,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    redaction: RedactionSession | None = None,
) -> int | None:
    """The request's prompt tokens by the server's own tokenizer (the same pieces and per-message
    allowance as runner.llm.budget.count_request_tokens), or None: not a llama.cpp or
    llama-cpp-python server, or its tokenize route failed (now or before, for this client).
    With the job's `redaction` session the pieces are redacted first: the tokenize route is the
    model's server too, so it sees only what a request would show it, and that is what is counted."""
    state = _state(client)
    if state is None or state.failed:
        return None
    overhead, pieces = request_pieces(messages, tools)
    if redaction is not None:
        pieces = await redact_texts_off_loop(pieces, redaction)
    unique = list(dict.fromkeys(pieces))
    counts: dict[str, int | None] = {}
    if not state.answered:
        # The first texts go one at a time: a server without the route is asked once, not once
        # per piece and per concurrent request.
        async with state.first:
            for text in unique:
                counts[text] = await _count_piece(client, state, model, text)
                if counts[text] is None:
                    return None
    rest = [text for text in unique if text not in counts]
    found = await asyncio.gather(*(_count_piece(client, state, model, text) for text in rest))
    counts.update(zip(rest, found, strict=True))
    if any(count is None for count in counts.values()):
        return None
    return overhead + sum(counts[text] or 0 for text in pieces)


def native_failed(client: Any) -> bool:
    """Whether `client`'s endpoint is a server that counts natively but whose route failed."""
    state = _tokenizers.get(client)
    return state is not None and state.failed


def forget() -> None:
    """Drop every client's cached counts and failures (tests)."""
    _tokenizers.clear()


__all__ = [
    "CACHE_SIZE",
    "ROUTES",
    "TOKENIZE_TIMEOUT_SECONDS",
    "forget",
    "native_failed",
    "native_request_tokens",
    "tokenize_body",
]
