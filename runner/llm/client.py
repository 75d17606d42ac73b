"""The network edge to an OpenAI-compatible endpoint: client construction, retries, breaker.

The `openai` client is built with `max_retries=0`: retries happen here, one attempt at a time,
so the circuit breaker sees every attempt and the backoff honours `Retry-After`. Retried: timeouts,
connection errors, 408, 409, 429 and 5xx; any other status fails at once. Cancellation is never
caught: cancelling the awaiting task aborts the HTTP request in flight.

Error text from the provider can echo the API key (a proxy answering 401 with the bad key), so
every message this module creates goes through `redact`.

A response that is not a chat completion (an HTML login page of a proxy answering 200, JSON of
another shape, a body cut off) is a failed attempt like a 5xx: retried, counted by the breaker,
and described by its content type and a short sanitized prefix. A 400 that says the request
exceeds the model's context raises ContextLimitExceeded (runner.llm.limits reads the wordings); an
error that says the server could not build a grammar from the request's schema (llama.cpp,
llama-cpp-python) raises GrammarRejected at once, neither retried nor counted by the breaker: the
request's shape is at fault, not the endpoint's health (runner.llm.bounds).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import re
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import openai
from openai.types.chat import ChatCompletion

from runner.errors import LLMError
from runner.llm.bounds import is_grammar_error
from runner.llm.breaker import CircuitBreaker, CircuitOpen
from runner.llm.config import LLMConfig
from runner.llm.limits import ContextOverflow, parse_context_overflow
from runner.llm.redaction import (
    RedactionSession,
    current_session,
    redact_request_off_loop,
    restore_completion,
)
from runner.metrics import LLM_CALLS, LLM_ERRORS, LLM_TOKENS, REDACTIONS, endpoint_label

logger = logging.getLogger(__name__)

_RETRIED_STATUSES = frozenset({408, 409, 429})
# Bearer-like tokens that look like API keys, masked even when they are not the configured key.
_KEY_LIKE = re.compile(r"\b(sk|rk)-[A-Za-z0-9_\-]{6,}")


def redact(text: str, secrets: list[str]) -> str:
    """`text` with every secret and anything shaped like an API key replaced by ***."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, "***")
    return _KEY_LIKE.sub(r"\1-***", text)


def build_client(config: LLMConfig, http_client: Any = None) -> openai.AsyncOpenAI:
    """The `openai.AsyncOpenAI` client of `config`, without its own retries. `http_client` (tests
    and benchmarks: the in-process client of runner/llm/fake.py) is passed through; openai 3.x is built on httpx2, whose
    client the tests' httpx clients stand in for by duck typing."""
    return openai.AsyncOpenAI(
        base_url=config.base_url,
        # The client insists on a key; local servers (llama.cpp, Ollama, vLLM) ignore it.
        api_key=config.api_key or "not-needed",
        max_retries=0,
        timeout=openai.Timeout(config.timeout_seconds, connect=config.connect_timeout_seconds),
        default_headers=dict(config.extra_headers) or None,
        http_client=http_client,
    )


# The clients shared by everything that calls an endpoint in this process (the chat extractor and
# the document summarizer), per event loop: an httpx pool's connections belong to the loop that
# opened them, and the CLI and the tests run several loops in one process.
_ClientKey = tuple[str, str, tuple[tuple[str, str], ...], float, float]
_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_ClientKey, openai.AsyncOpenAI]]
_shared = weakref.WeakKeyDictionary()


def shared_client(config: LLMConfig) -> openai.AsyncOpenAI:
    """The one client (connection pool) of `config`'s endpoint for the running event loop;
    outside a loop, a new client (there is no loop to share it in)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return build_client(config)
    key: _ClientKey = (
        config.endpoint,
        config.api_key,
        tuple(sorted(config.extra_headers.items())),
        config.timeout_seconds,
        config.connect_timeout_seconds,
    )
    clients = _shared.setdefault(loop, {})
    client = clients.get(key)
    if client is None:
        client = clients[key] = build_client(config)
    return client


# Characters of an unexpected response body quoted in an error: enough to recognize it.
_PREFIX_CHARS = 80
_UNPRINTABLE = re.compile(r"[^\x20-\x7e\u00a0-\ud7ff\ue000-\ufffd]+")


class LLMCallError(LLMError):
    """One request failed for good (after its retries). The message is already redacted."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ContextLimitExceeded(LLMCallError):
    """The endpoint refused the request as larger than the model's context. `sent_tokens` is
    our count of the prompt (set by the tool caller), to compare with the server's count."""

    def __init__(self, message: str, overflow: ContextOverflow, *, status: int | None) -> None:
        super().__init__(message, status=status)
        self.overflow = overflow
        self.sent_tokens = 0


class GrammarRejected(LLMCallError):
    """The endpoint could not turn the request's tool schema into a grammar (llama.cpp's
    "failed to parse grammar"): the same request fails again, the same request without the
    schema's bounds may not (runner.llm.toolcall resends it so)."""


class MalformedResponse(LLMError):
    """The endpoint answered, but not with a chat completion."""


def describe_body(content_type: str, text: str, secrets: list[str]) -> str:
    """`text/html: '<!DOCTYPE html><title>Sign in…'`: the content type and a short prefix with
    control characters and whitespace runs folded and secrets masked."""
    prefix = " ".join(_UNPRINTABLE.sub(" ", text[: _PREFIX_CHARS * 4]).split())
    prefix = redact(prefix, secrets)
    cut = prefix[:_PREFIX_CHARS] + ("…" if len(prefix) > _PREFIX_CHARS else "")
    return (
        f"{content_type or 'no content type'}: {cut!r}"
        if cut
        else (f"{content_type or 'no content type'}, empty body")
    )


def checked_completion(raw: Any, secrets: list[str]) -> ChatCompletion:
    """The ChatCompletion of a raw response, or MalformedResponse saying what came back."""
    content_type = raw.headers.get("content-type", "").split(";")[0].strip()
    try:
        response = raw.parse()
    except ValueError:  # a body announced as JSON that is not
        response = None
    choices = getattr(response, "choices", None) if isinstance(response, ChatCompletion) else None
    if (
        isinstance(choices, list)
        and choices
        and all(getattr(choice, "message", None) is not None for choice in choices)
    ):
        assert isinstance(response, ChatCompletion)
        return response
    what = "without choices" if isinstance(response, ChatCompletion) else "not a chat completion"
    body = describe_body(content_type, raw.http_response.text, secrets)
    raise MalformedResponse(f"HTTP {raw.status_code} {what} ({body})")


class _HasHeaders(Protocol):
    @property
    def headers(self) -> Mapping[str, str]: ...


def _retry_after_seconds(response: _HasHeaders | None) -> float | None:
    """The server's requested wait, from `retry-after-ms` or `retry-after` (seconds or date)."""
    if response is None:
        return None
    headers = response.headers
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


def _classify(error: Exception) -> tuple[bool, bool, float | None, str, int | None]:
    """(retryable, counts against the endpoint, retry-after, description, status)."""
    if isinstance(error, (openai.APITimeoutError, TimeoutError)):
        return True, True, None, "timed out", None
    if isinstance(error, openai.APIConnectionError):
        return (
            True,
            True,
            None,
            f"connection error ({type(error.__cause__ or error).__name__})",
            None,
        )
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        description = f"HTTP {status}: {str(error.message)[:300]}"
        retryable = status in _RETRIED_STATUSES or status >= 500
        # A bad request says nothing about the endpoint's health; auth and routing errors do.
        counts = status not in {400, 413, 422}
        return retryable, counts, _retry_after_seconds(error.response), description, status
    if isinstance(error, MalformedResponse):
        return True, True, None, f"malformed response: {error}", None
    if isinstance(error, openai.APIResponseValidationError):
        return True, True, None, "the endpoint's response is not a chat completion", None
    return False, True, None, f"{type(error).__name__}: {str(error)[:300]}", None


def _grammar_refused(error: Exception) -> bool:
    """Whether a refusal's message or body says the request's grammar could not be built."""
    if not isinstance(error, openai.APIStatusError):
        return False
    return is_grammar_error(f"{error.message} {error.body}")


def _overflow(error: Exception, status: int | None) -> ContextOverflow | None:
    """The context overflow a refused request reports (400/413/422), else None."""
    if not isinstance(error, openai.APIStatusError) or status not in {400, 413, 422}:
        return None
    return parse_context_overflow(str(error.message), error.body)


def _count_success(endpoint: str, model: str, response: ChatCompletion) -> None:
    LLM_CALLS.labels(endpoint, model, "ok").inc()
    usage = response.usage
    if usage is None:  # some local servers report none; the job's stats estimate it instead
        return
    LLM_TOKENS.labels(endpoint, model, "prompt").inc(usage.prompt_tokens or 0)
    LLM_TOKENS.labels(endpoint, model, "completion").inc(usage.completion_tokens or 0)
    details = usage.prompt_tokens_details
    if details is not None and details.cached_tokens:
        LLM_TOKENS.labels(endpoint, model, "cached").inc(details.cached_tokens)


def _count_redaction(kind: str) -> None:
    REDACTIONS.labels(kind).inc()


def _redaction_session(config: LLMConfig) -> RedactionSession | None:
    """The job's redaction session (a fresh one for a call outside any job), or None when
    requests to this endpoint are not redacted."""
    if not config.redacts:
        return None
    session = current_session() or RedactionSession()
    # Every endpoint of a process has the same region (one setting); the job's session is
    # created before any endpoint is known, so the first call gives it.
    session.phone_region = config.redact_phone_region
    if session.on_new is None:
        session.on_new = _count_redaction
    return session


class ResilientCaller:
    """Sends chat-completion requests with bounded concurrency, retries and the breaker."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        config: LLMConfig,
        breaker: CircuitBreaker,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.breaker = breaker
        self.retries = 0
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._semaphore = asyncio.Semaphore(config.concurrency)

    def _backoff(self, attempt: int) -> float:
        """Capped exponential backoff with equal jitter: half fixed, half random."""
        ceiling = min(
            self.config.backoff_max_seconds, self.config.backoff_base_seconds * 2**attempt
        )
        return float(ceiling / 2 + self._rng.uniform(0, ceiling / 2))

    def redaction(self) -> RedactionSession | None:
        """The redaction session this caller's requests go through, or None when they are not
        redacted: whatever else is sent to the same server (its tokenize route) uses it too."""
        return _redaction_session(self.config)

    async def create(self, **request: Any) -> ChatCompletion:
        """`client.chat.completions.create(**request)` with retries; raises LLMCallError or
        CircuitOpen (both with redacted messages). When the endpoint's requests are redacted
        (DIGESTD_REDACT), the model is sent placeholders for personal data and secrets, and the
        completion returned has the originals back (runner.llm.redaction)."""
        session = _redaction_session(self.config)
        if session is not None:
            request = await redact_request_off_loop(request, session)
        secrets = self.config.secrets()
        endpoint = endpoint_label(self.config.endpoint)
        model = str(request.get("model", ""))
        attempts = self.config.max_retries + 1
        for attempt in range(attempts):
            async with self._semaphore:
                self.breaker.before_call()
                try:
                    async with asyncio.timeout(self.config.timeout_seconds):
                        raw = await self.client.chat.completions.with_raw_response.create(**request)
                        response = checked_completion(raw, secrets)
                except asyncio.CancelledError:
                    self.breaker.abandon()
                    raise
                except Exception as error:  # noqa: BLE001 - classified below, never swallowed
                    retryable, counts, retry_after, description, status = _classify(error)
                    overflow = _overflow(error, status)
                    grammar = _grammar_refused(error)
                    if grammar:
                        retryable = counts = False
                    LLM_CALLS.labels(endpoint, model, "error").inc()
                    LLM_ERRORS.labels(endpoint, str(status or type(error).__name__)).inc()
                    if counts:
                        self.breaker.record_failure()
                    else:
                        self.breaker.abandon()
                    description = redact(description, secrets)
                else:
                    self.breaker.record_success()
                    _count_success(endpoint, model, response)
                    if session is not None:
                        restore_completion(response, session)
                    return response
            if grammar:
                raise GrammarRejected(f"LLM request failed: {description}", status=status)
            if overflow is not None:
                raise ContextLimitExceeded(
                    f"LLM request failed: {description}", overflow, status=status
                ) from None
            if not retryable or attempt == attempts - 1:
                tries = f" after {attempt + 1} attempts" if attempt else ""
                raise LLMCallError(f"LLM request failed{tries}: {description}", status=status)
            if retry_after is not None and retry_after > self.config.retry_after_cap_seconds:
                cap = self.config.retry_after_cap_seconds
                raise LLMCallError(
                    f"LLM request failed: {description}; the endpoint asks to wait "
                    f"{retry_after:.0f}s, longer than the {cap:.0f}s cap",
                    status=status,
                )
            delay = self._backoff(attempt)
            if retry_after is not None:
                delay = retry_after + self._rng.uniform(0, min(1.0, retry_after / 10))
            self.retries += 1
            logger.warning(
                "LLM request to %s %s; retry %d of %d in %.1fs",
                request.get("model"),
                description,
                attempt + 1,
                attempts - 1,
                delay,
            )
            await self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover


__all__ = [
    "CircuitOpen",
    "ContextLimitExceeded",
    "GrammarRejected",
    "LLMCallError",
    "MalformedResponse",
    "ResilientCaller",
    "build_client",
    "redact",
    "shared_client",
]
