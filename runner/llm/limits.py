"""Model limits learned from the endpoint itself: a context-length 400, or `/v1/models`.

A local server's context is whatever its operator started it with (llama.cpp `-c 8192`, vLLM
`--max-model-len`), so no table can know it. When no DIGEST_*_CONTEXT_TOKENS setting gives it,
digestd learns it:
- from a refused request: every common server names its context in the 400 (the wordings are
  below), and some the prompt size it counted, which also tells how much its tokenizer differs
  from ours (cl100k_base);
- from the endpoint's model list before the first request: vLLM reports `max_model_len` on each
  model, OpenRouter and LiteLLM-style proxies `context_length`, and a llama.cpp server its
  running context in `/props` (`default_generation_settings.n_ctx`, per slot) beside
  `meta.n_ctx_train` (the trained maximum, only an upper bound) in `/v1/models`.
What is learned is kept per endpoint and model for the life of the process (a restart learns
again), and only ever lowers the limit. The model list is asked once per client
(`model_listing`), and runner.llm.bounds reads the same answer to tell what server it is.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import httpx
import openai

logger = logging.getLogger(__name__)

# The context a server states when it refuses a request, first match wins. Sources:
# - OpenAI, llama-cpp-python (its server rewrites llama.cpp's error to OpenAI's wording), older
#   vLLM: "This model's maximum context length is 8192 tokens. However, you requested 13381
#   tokens (9285 in the messages, 4096 in the completion)."
# - newer vLLM: "... maximum context length is 8192 tokens and your request has 9285 input
#   tokens (4096 > 8192 - 9285)"
# - llama.cpp server: "request (9285 tokens) exceeds the available context size (8192 tokens)"
#   or "the request exceeds the available context size, try increasing it", with `n_ctx` and
#   `n_prompt_tokens` in the error object
# - llama-cpp-python raw: "Requested tokens (9285) exceed context window of 8192"
# - TGI: "`inputs` tokens + `max_new_tokens` must be <= 8192. Given: 9285 `inputs` tokens"
# - SGLang: "The input (9285 tokens) is longer than the model's context length (8192 tokens)"
# - Anthropic-style proxies: "prompt is too long: 9285 tokens > 8192 maximum"
_CONTEXT_PATTERNS = [
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),
    re.compile(r"available context size \((\d+) tokens?\)", re.IGNORECASE),
    re.compile(r"exceeds? context window of (\d+)", re.IGNORECASE),
    re.compile(r"max_new_tokens`? must be <= (\d+)", re.IGNORECASE),
    re.compile(r"model'?s context length \((\d+)", re.IGNORECASE),
    re.compile(r"tokens? > (\d+) maximum", re.IGNORECASE),
    re.compile(r"(\d+) maximum context length", re.IGNORECASE),
]
_PROMPT_PATTERNS = [
    re.compile(r"\((\d+) in the messages", re.IGNORECASE),
    re.compile(r"request has (\d+) input tokens", re.IGNORECASE),
    re.compile(r"request \((\d+) tokens?\) exceeds", re.IGNORECASE),
    re.compile(r"requested tokens \((\d+)\)", re.IGNORECASE),
    re.compile(r"given: (\d+) `?inputs`? tokens", re.IGNORECASE),
    re.compile(r"input \((\d+) tokens?\) is longer", re.IGNORECASE),
    re.compile(r"too long: (\d+) tokens", re.IGNORECASE),
]
# Words that mark an error without a number as a context overflow all the same.
_OVERFLOW_WORDS = re.compile(
    r"context[_ ]length[_ ]exceeded|exceed_context_size|exceeds the available context|"
    r"maximum context length|context window",
    re.IGNORECASE,
)
# Below this a stated "context" is surely something else (a parse of the wrong number).
_MIN_CONTEXT = 256


@dataclass(frozen=True)
class ContextOverflow:
    """What a refused request says: the server's context and, if it said so, the prompt size
    it counted (in its own tokens)."""

    context_tokens: int | None
    prompt_tokens: int | None


def _int_field(data: Any, *names: str) -> int | None:
    if not isinstance(data, dict):
        return None
    for name in names:
        value = data.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def parse_context_overflow(message: str, body: object) -> ContextOverflow | None:
    """The context overflow an error response describes, or None when it is another error.
    `body` is the parsed JSON error (the `error` object or the whole body)."""
    error = body.get("error", body) if isinstance(body, dict) else None
    text = message
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        text = f"{error['message']} {message}"
    elif isinstance(error, str):
        text = f"{error} {message}"
    kind = json.dumps(
        {k: error.get(k) for k in ("type", "code")} if isinstance(error, dict) else {}
    )
    context = _int_field(error, "n_ctx", "max_model_len", "context_length")
    if context is None:
        for pattern in _CONTEXT_PATTERNS:
            match = pattern.search(text)
            if match:
                context = int(match.group(1))
                break
    if context is None and not _OVERFLOW_WORDS.search(f"{text} {kind}"):
        return None
    if context is not None and context < _MIN_CONTEXT:
        context = None
    prompt = _int_field(error, "n_prompt_tokens")
    if prompt is None:
        for pattern in _PROMPT_PATTERNS:
            match = pattern.search(text)
            if match:
                prompt = int(match.group(1))
                break
    return ContextOverflow(context, prompt)


# --- what the process has learned ----------------------------------------------------------


# The source of a context learned from a refused request (the others name the route).
REFUSAL = "HTTP 400"


@dataclass(frozen=True)
class LearnedLimit:
    context_tokens: int  # in our (cl100k_base) tokens, after the server's tokenizer ratio
    source: str  # what it was learned from, for the operator: REFUSAL, "/v1/models", ...

    @property
    def from_refusal(self) -> bool:
        return self.source == REFUSAL


_learned: dict[tuple[str, str], LearnedLimit] = {}
_discovered: set[tuple[str, str]] = set()
_lock = threading.Lock()


def learn(endpoint: str, model: str, context_tokens: int, source: str) -> LearnedLimit:
    """Remember `context_tokens` for `model` at `endpoint` unless a smaller one is known."""
    key = (endpoint, model)
    with _lock:
        known = _learned.get(key)
        if known is None or context_tokens < known.context_tokens:
            known = LearnedLimit(context_tokens, source)
            _learned[key] = known
            logger.warning(
                "LLM endpoint %s: model %s has a context of %d tokens (learned from %s)",
                endpoint,
                model,
                context_tokens,
                source,
            )
        return known


def learned(endpoint: str, model: str) -> LearnedLimit | None:
    with _lock:
        return _learned.get((endpoint, model))


def forget() -> None:
    """Drop everything learned (tests)."""
    with _lock:
        _learned.clear()
        _discovered.clear()


def context_from_overflow(overflow: ContextOverflow, sent_tokens: int) -> int | None:
    """The context in our tokens: the server's context scaled by how many more tokens its
    tokenizer counted for the same prompt (never scaled up)."""
    if overflow.context_tokens is None:
        return None
    context = overflow.context_tokens
    if overflow.prompt_tokens and sent_tokens and overflow.prompt_tokens > sent_tokens:
        context = context * sent_tokens // overflow.prompt_tokens
    return context


# --- discovery -----------------------------------------------------------------------------


def _model_entry(listing: Any, model: str) -> dict[str, Any] | None:
    data = listing.get("data") if isinstance(listing, dict) else None
    entries = [entry for entry in data or [] if isinstance(entry, dict)]
    for entry in entries:
        if entry.get("id") == model:
            return entry
    # A single-model server (llama.cpp, llama-cpp-python) answers to any model name.
    return entries[0] if len(entries) == 1 else None


def context_from_listing(listing: Any, model: str) -> tuple[int | None, int | None]:
    """(the context the model list states, an upper bound it implies) for `model`."""
    entry = _model_entry(listing, model)
    if entry is None:
        return None, None
    stated = _int_field(entry, "max_model_len", "context_length", "context_window")
    top = entry.get("top_provider")
    stated = stated or _int_field(top, "context_length")
    bound = _int_field(entry.get("meta"), "n_ctx_train")
    return stated, bound


def context_from_props(props: Any) -> int | None:
    """llama.cpp's `/props`: the running context of one slot."""
    if not isinstance(props, dict):
        return None
    return _int_field(props.get("default_generation_settings"), "n_ctx") or _int_field(
        props, "n_ctx"
    )


async def _get_json(client: openai.AsyncOpenAI, url: str, timeout: float) -> Any:
    """The JSON at `url` (relative to the base URL, or absolute), or None for any failure."""
    try:
        response = await client.get(url, cast_to=httpx.Response, options={"timeout": timeout})
        return response.json() if response.status_code == 200 else None
    except Exception as error:  # noqa: BLE001 - discovery is a hint, never a failure
        logger.debug("limit discovery: GET %s failed: %s", url, type(error).__name__)
        return None


# Each client's `GET /models` answer (None: no answer), and the request in flight, which
# concurrent askers share: the limits discovery and the schema bounds (runner.llm.bounds) read
# the same list. Held weakly: forgotten with the client; the shared client of an endpoint
# (runner.llm.client.shared_client) lives as long as the process's event loop.
_listings: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_listing_requests: weakref.WeakKeyDictionary[Any, asyncio.Task[Any]] = weakref.WeakKeyDictionary()


async def _fetch_listing(client: Any, timeout: float) -> Any:
    try:
        async with asyncio.timeout(timeout + 1):  # _get_json's own timeout, and a margin
            return await _get_json(client, "/models", timeout)
    except TimeoutError:
        return None


def cached_listing(client: Any) -> Any:
    """The `GET /models` answer already read for `client` (None when not asked or no answer)."""
    return _listings.get(client)


async def model_listing(client: Any, timeout: float) -> Any:
    """The endpoint's `GET /models` JSON, asked once per client (None for any failure, which is
    remembered too: the list is a hint). Never raises for the endpoint's sake."""
    if client in _listings:
        return _listings[client]
    request = _listing_requests.get(client)
    if request is None or request.get_loop() is not asyncio.get_running_loop():
        request = asyncio.ensure_future(_fetch_listing(client, timeout))
        _listing_requests[client] = request
    # Shielded: an asker cancelled while waiting does not cancel the others' request.
    listing = await asyncio.shield(request)
    _listings[client] = listing
    _listing_requests.pop(client, None)
    return listing


async def discover(
    client: openai.AsyncOpenAI,
    endpoint: str,
    model: str,
    *,
    upper_bound: int,
    timeout: float = 5.0,
) -> LearnedLimit | None:
    """Ask the endpoint once per process for `model`'s context and remember it. Never raises:
    a server without these routes just keeps the configured or assumed limits. A trained
    maximum (`n_ctx_train`) below `upper_bound` is remembered too, as a bound."""
    key = (endpoint, model)
    with _lock:
        if key in _discovered:
            return _learned.get(key)
        _discovered.add(key)
    stated, bound = context_from_listing(await model_listing(client, timeout), model)
    source = "/v1/models"
    if stated is None:
        root = str(client.base_url).rstrip("/")
        root = root[: -len("/v1")] if root.endswith("/v1") else root
        stated = context_from_props(await _get_json(client, f"{root}/props", timeout))
        source = "/props"
    if stated is not None and stated >= _MIN_CONTEXT:
        return learn(endpoint, model, stated, source)
    if bound is not None and _MIN_CONTEXT <= bound < upper_bound:
        return learn(endpoint, model, bound, "/v1/models (trained context)")
    return learned(endpoint, model)
