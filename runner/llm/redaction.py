"""Redaction of personal data and secrets in what a model is sent, and their restoration in what
it answers: e-mail addresses, phone numbers, API keys and tokens, IP addresses and card numbers
become stable placeholders (`«EMAIL_1»`), the same value the same placeholder within one job.

Detectors: phone numbers by `phonenumbers` (Google's libphonenumber metadata, shipped in the
package: `PhoneNumberMatcher` with `Leniency.VALID`, national numbers read as numbers of the
session's region, North American unless DIGESTD_REDACT_PHONE_REGION says otherwise);
IP addresses by a candidate pattern confirmed by the stdlib `ipaddress`; card numbers by a
pattern, the card networks' prefixes and the Luhn check; e-mail addresses, API keys and tokens
by patterns (the providers' documented key shapes, JWTs, and long high-entropy values after
`key=`, `token=`, `secret=`, `password=`). A dotted quad that is part of a longer dotted or
hyphenated token (`linux-2.6.32.21`, `v1.2.3.4`, `1.2.3.4.5`) or follows "version", "kernel"
or "release" is a version, not an address; any other valid one is redacted, private and
loopback ones too (a false positive costs the model a few characters of context, never the
digest: the originals are restored exactly). A phone number glued to a name, path or version
(`thread-4175611950/`) is an identifier.

Every detected value is free of `"`, `\\`, `&`, `<`, `>` and control characters, so it reads
the same inside JSON strings and XML-escaped text and is restored there by plain replacement.
Text that already looks like a placeholder is itself replaced (by `«QUOTED_n»`), so restoring
is one pass that never turns a user's own `«EMAIL_1»` into somebody's address. Restoring accepts
a placeholder anywhere in a string (inside a longer quote) and in JSON's `\\u00ab` escaped form.

A `RedactionSession` holds one job's placeholders and counts; `redaction_scope` makes it the
session of every model call in the running task and the tasks it starts
(`runner.llm.client.ResilientCaller` reads it). The model client redacts with
`redact_request_off_loop`: detection, the CPU-bound part, runs in a thread
(runner.core.offload.run_light) and the placeholders are given out on the loop in request order,
so the result is what `redact_request` gives. Originals are never logged.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import ipaddress
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import phonenumbers
from openai.types.chat import ChatCompletion

from runner.core.offload import run_light

RedactMode = Literal["auto", "always", "never"]

# The kinds of value redacted, as the placeholders, job stats and the metric's label name them.
EMAIL, PHONE, TOKEN, IP, CARD = "email", "phone", "token", "ip", "card"
# A user's own placeholder-shaped text: replaced so restoring cannot misread it (not counted).
QUOTED = "quoted"
KINDS = (EMAIL, PHONE, TOKEN, IP, CARD)

# The region national numbers (written without a country code) are read in, by default: North
# American (+1). International ones (`+44 20 7946 0958`) are found in any region.
# DIGESTD_REDACT_PHONE_REGION sets it (LLMConfig.redact_phone_region).
DEFAULT_PHONE_REGION = "US"

_PLACEHOLDER = re.compile(r"«([A-Z]+)_(\d+)»")
# In JSON text a model may write the guillemets as \u00ab / \u00bb; an escaped backslash before
# them (`\\u00ab`, a literal backslash in the string) is not a placeholder.
_JSON_PLACEHOLDER = re.compile(
    r"(?<!\\)((?:\\\\)*)(?:«|\\u00[aA][bB])([A-Z]+)_(\d+)(?:»|\\u00[bB][bB])"
)
_UNSAFE = re.compile(r"[\"\\&<>\x00-\x1f\x7f]")

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]*@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9\-])"
)
# Provider key shapes (their documented prefixes) and JWTs: redacted wherever they appear.
_TOKENS = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:"
    r"(?:sk|rk|pk)-[A-Za-z0-9_\-]{16,}"  # OpenAI and compatible (sk-proj-..., sk-ant-...)
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    r"|github_pat_[A-Za-z0-9_]{22,}"
    r"|glpat-[A-Za-z0-9_\-]{20,}"  # GitLab
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"  # AWS access key ids
    r"|AIza[A-Za-z0-9_\-]{35}"  # Google API keys
    r"|hf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"  # JWT
    r")(?![A-Za-z0-9_\-])"
)
# The value after a secret-ish name: redacted when it is long and looks random.
_ASSIGNED_SECRET = re.compile(
    r"(?i)\b(?:api[_\-]?key|apikey|access[_\-]?key|secret(?:[_\-]?key)?|client[_\-]?secret"
    r"|token|auth[_\-]?token|access[_\-]?token|password|passwd|pwd|bearer)"
    r"""(?:\s*[:=]\s*|\s+)["']?([A-Za-z0-9_\-./+=~]{16,})"""
)
# A PEM private key block (RSA, EC, OPENSSH, PKCS#8 and encrypted ones), up to its END line or,
# when the message was cut, the end of the text; its base64 lines are the secret.
_PEM_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(.*?)(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)",
    re.S,
)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=]{8,}")
_MIN_SECRET_ENTROPY = 3.0  # bits per character; English words and paths fall below
_IPV4 = re.compile(r"(?<![\w.\-])(?:\d{1,3}\.){3}\d{1,3}(?![\w\-]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])")
# A run of digits and the separators phone numbers are written with, long enough to be one.
_PHONE_CANDIDATE = re.compile(r"\+?\(?\d[\d \t().\-/]{5,}\d")
_PHONE_MIN_DIGITS = 7
_GLUE_BEFORE = re.compile(r"[\w./=_\-]")
_GLUE_AFTER = re.compile(r"[\w/=_\-]|\.\w")  # a full stop ending a sentence is not glue
# A word right before a dotted quad that makes it a version number.
_VERSION_WORD = re.compile(r"(?i)\b(?:version|kernel|release|ver\.?|v)\s*$")
_PHONE_CONTEXT = 3
_CARD = re.compile(r"(?<![\d\-])\d(?:[ \-]?\d){12,18}(?![\d\-])")


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def luhn_valid(digits: str) -> bool:
    """Whether a digit string passes the Luhn check of card numbers."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        digit = int(char)
        if position % 2 == 1:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def _card_network(digits: str) -> bool:
    """Whether the number starts like a card of a major network and has its length."""
    length = len(digits)
    if digits[0] == "4":
        return length in (13, 16, 19)
    two, four = int(digits[:2]), int(digits[:4])
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return length == 16
    if two in (34, 37):
        return length == 15
    if digits.startswith(("6011", "65")) or 644 <= int(digits[:3]) <= 649:
        return 16 <= length <= 19
    if two == 35:
        return 16 <= length <= 19
    if two in (30, 36, 38, 39):
        return 14 <= length <= 19
    return False


Span = tuple[int, int, str]  # start, end, kind


def _email_spans(text: str) -> Iterator[Span]:
    for match in _EMAIL.finditer(text):
        yield match.start(), match.end(), EMAIL


def _token_spans(text: str) -> Iterator[Span]:
    # Line by line: a placeholder stands for one value without line breaks, which restores
    # verbatim inside a JSON string too (a whole block would need escaping there).
    if "PRIVATE KEY-----" in text:
        for block in _PEM_PRIVATE_KEY.finditer(text):
            for run in _BASE64_RUN.finditer(text, block.start(1), block.end(1)):
                yield run.start(), run.end(), TOKEN
    for match in _TOKENS.finditer(text):
        yield match.start(), match.end(), TOKEN
    for match in _ASSIGNED_SECRET.finditer(text):
        value = match.group(1).rstrip(".")
        has_letters = any(c.isalpha() for c in value)
        has_digits = any(c.isdigit() for c in value)
        if has_letters and has_digits and _entropy(value) >= _MIN_SECRET_ENTROPY:
            yield match.start(1), match.start(1) + len(value), TOKEN


def _card_spans(text: str) -> Iterator[Span]:
    for match in _CARD.finditer(text):
        raw = match.group()
        digits = raw.replace(" ", "").replace("-", "")
        # Unseparated, only the common 15 and 16 digit lengths: longer runs are ids (Discord's
        # snowflakes are 17 to 19 digits).
        if raw == digits and len(digits) not in (15, 16):
            continue
        if _card_network(digits) and luhn_valid(digits):
            yield match.start(), match.end(), CARD


def _ip_spans(text: str) -> Iterator[Span]:
    for match in _IPV4.finditer(text):
        if _VERSION_WORD.search(text, max(0, match.start() - 12), match.start()):
            continue  # `kernel 2.6.20.8`, `version 1.1.2.1`
        try:
            ipaddress.IPv4Address(match.group())
        except ValueError:
            continue
        yield match.start(), match.end(), IP
    for match in _IPV6.finditer(text):
        candidate = match.group()
        # A digit and at least three groups or `::`: `a::b`-like code (`std::`) is not one.
        if not any(c.isdigit() for c in candidate):
            continue
        try:
            ipaddress.IPv6Address(candidate)
        except ValueError:
            continue
        yield match.start(), match.end(), IP


def _phone_spans(text: str, region: str) -> Iterator[Span]:
    # The matcher is slow on text full of short numbers (timestamps, counts): it only reads the
    # runs that hold enough digits to be a phone number, with a little context either side.
    for candidate in _PHONE_CANDIDATE.finditer(text):
        if sum(c.isdigit() for c in candidate.group()) < _PHONE_MIN_DIGITS:
            continue
        start = max(0, candidate.start() - _PHONE_CONTEXT)
        piece = text[start : candidate.end() + _PHONE_CONTEXT]
        matcher = phonenumbers.PhoneNumberMatcher(piece, region, phonenumbers.Leniency.VALID)
        for match in matcher:
            begin, end = start + match.start, start + match.end
            # Glued to a name, a path or a version (`bits.3265636944`, `thread-4175611950/`)
            # it is an identifier, not a number.
            glued = (begin > 0 and _GLUE_BEFORE.match(text[begin - 1]) is not None) or (
                _GLUE_AFTER.match(text, end) is not None
            )
            if candidate.start() <= begin < candidate.end() and not glued:
                yield begin, end, PHONE


def _placeholder_spans(text: str) -> Iterator[Span]:
    for match in _PLACEHOLDER.finditer(text):
        yield match.start(), match.end(), QUOTED


# In priority order: where spans overlap, the earlier detector wins (a token's digits are not
# a phone number, an e-mail's host is not an IP address); phone numbers come last.
_DETECTORS: tuple[Callable[[str], Iterator[Span]], ...] = (
    _placeholder_spans,
    _token_spans,
    _email_spans,
    _card_spans,
    _ip_spans,
)


def is_phone_region(region: str) -> bool:
    """Whether libphonenumber knows `region` (an ISO 3166 two-letter code, upper case)."""
    return region in phonenumbers.SUPPORTED_REGIONS


def detect(text: str, phone_region: str = DEFAULT_PHONE_REGION) -> list[Span]:
    """The spans of `text` to redact, in order and not overlapping; national phone numbers read
    as numbers of `phone_region`."""
    taken: list[Span] = []
    phones: Callable[[str], Iterator[Span]] = functools.partial(_phone_spans, region=phone_region)
    detectors = (*_DETECTORS, phones)
    for detector in detectors:
        for start, end, kind in detector(text):
            value = text[start:end]
            if start >= end or (kind != QUOTED and _UNSAFE.search(value)):
                continue
            if any(start < t_end and t_start < end for t_start, t_end, _ in taken):
                continue
            taken.append((start, end, kind))
    return sorted(taken)


@dataclass
class RedactionSession:
    """One job's placeholders: value → placeholder and back, and how many values of each kind
    were hidden. `stats`, when given (the job's), gets the counts as `redactions`."""

    stats: dict[str, Any] | None = None
    phone_region: str = DEFAULT_PHONE_REGION
    _by_value: dict[tuple[str, str], str] = field(default_factory=dict)
    _by_placeholder: dict[str, str] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    on_new: Callable[[str], None] | None = None

    def _placeholder(self, kind: str, value: str) -> str:
        placeholder = self._by_value.get((kind, value))
        if placeholder is None:
            self.counts[kind] += 1
            placeholder = f"«{kind.upper()}_{self.counts[kind]}»"
            self._by_value[(kind, value)] = placeholder
            self._by_placeholder[placeholder] = value
            if kind != QUOTED:
                if self.on_new is not None:
                    self.on_new(kind)
                self._publish()
        return placeholder

    def _publish(self) -> None:
        if self.stats is not None:
            self.stats["redactions"] = self.redaction_counts()

    def redaction_counts(self) -> dict[str, int]:
        """Distinct values hidden from the model, by kind."""
        return {kind: self.counts[kind] for kind in KINDS if self.counts[kind]}

    def redact(self, text: str, spans: list[Span] | None = None) -> str:
        """`text` with every detected value replaced by its placeholder; unchanged (the same
        string) when nothing is found. `spans`: `detect(text)`, when already run elsewhere."""
        spans = detect(text, self.phone_region) if spans is None else spans
        if not spans:
            return text
        parts: list[str] = []
        cursor = 0
        for start, end, kind in spans:
            parts += [text[cursor:start], self._placeholder(kind, text[start:end])]
            cursor = end
        parts.append(text[cursor:])
        return "".join(parts)

    def restore(self, text: str) -> str:
        """`text` with this session's placeholders replaced by their originals (others kept)."""
        if "«" not in text:
            return text
        return _PLACEHOLDER.sub(lambda m: self._by_placeholder.get(m.group(), m.group()), text)

    def restore_json(self, text: str) -> str:
        """`restore` for JSON text, where a placeholder may be written `\\u00abEMAIL_1\\u00bb`
        (the originals need no escaping there: they hold no quote, backslash or control)."""
        if "«" not in text and "\\u00" not in text:
            return text

        def original(match: re.Match[str]) -> str:
            placeholder = f"«{match.group(2)}_{match.group(3)}»"
            value = self._by_placeholder.get(placeholder)
            return match.group() if value is None else match.group(1) + value

        return _JSON_PLACEHOLDER.sub(original, text)

    def redact_value(self, value: Any) -> Any:
        """Every string inside a JSON-like value redacted (keys too: they may be data)."""
        return _map_strings(value, self.redact)

    def restore_value(self, value: Any) -> Any:
        """Every string inside a JSON-like value restored."""
        if isinstance(value, str):
            return self.restore(value)
        if isinstance(value, list):
            return [self.restore_value(item) for item in value]
        if isinstance(value, dict):
            return {self.restore_value(k): self.restore_value(v) for k, v in value.items()}
        return value


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """`value` (JSON-like) with `change` applied to every string in it, keys too."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_map_strings(item, change) for item in value]
    if isinstance(value, dict):
        return {_map_strings(k, change): _map_strings(v, change) for k, v in value.items()}
    return value


def _map_arguments(arguments: Any, change: Callable[[str], str]) -> Any:
    """Tool-call arguments echoed back to the model (a re-ask): a JSON string changed value
    by value, so an escape sequence is never read as part of a value."""
    if not isinstance(arguments, str):
        return _map_strings(arguments, change)
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        return change(arguments)
    return json.dumps(_map_strings(parsed, change), ensure_ascii=False)


def _map_request(request: dict[str, Any], change: Callable[[str], str]) -> dict[str, Any]:
    """A chat request with `change` applied to the data in its messages. The system prompts
    (ours, the same in every request) and the tool schemas are left as they are; the input is
    not changed."""
    messages: list[Any] = []
    for message in request.get("messages", []):
        if not isinstance(message, dict) or message.get("role") == "system":
            messages.append(message)
            continue
        copied = dict(message)
        content = copied.get("content")
        if isinstance(content, str):
            copied["content"] = change(content)
        elif isinstance(content, list):
            copied["content"] = _map_strings(content, change)
        if isinstance(copied.get("tool_calls"), list):
            calls = []
            for call in copied["tool_calls"]:
                call = dict(call)
                function = dict(call.get("function") or {})
                if "arguments" in function:
                    function["arguments"] = _map_arguments(function["arguments"], change)
                call["function"] = function
                calls.append(call)
            copied["tool_calls"] = calls
        messages.append(copied)
    return {**request, "messages": messages}


def redact_request(request: dict[str, Any], session: RedactionSession) -> dict[str, Any]:
    """A chat request with the data in its messages redacted (system prompts and tool schemas
    left as they are); the input is not changed. On the calling thread: see
    `redact_request_off_loop` for the event loop."""
    return _map_request(request, session.redact)


def detect_all(texts: Sequence[str], phone_region: str) -> list[list[Span]]:
    """`detect` of each text: the CPU-bound part of redaction, pure, run off the event loop."""
    return [detect(text, phone_region) for text in texts]


async def redact_texts_off_loop(texts: Sequence[str], session: RedactionSession) -> list[str]:
    """`[session.redact(text) for text in texts]`, the detection (about 30 ms for a chunk) in a
    thread so the loop keeps serving heartbeats and the API. The placeholders are given out
    here, on the loop, in the order of `texts`: the result is the one `session.redact` gives."""
    unique = list(dict.fromkeys(texts))
    found = dict(
        zip(unique, await run_light(detect_all, unique, session.phone_region), strict=True)
    )
    return [session.redact(text, found[text]) for text in texts]


async def redact_request_off_loop(
    request: dict[str, Any], session: RedactionSession
) -> dict[str, Any]:
    """`redact_request`, the same result, with the detection off the event loop."""
    texts: list[str] = []

    def collect(text: str) -> str:
        texts.append(text)
        return text

    _map_request(request, collect)
    redacted = iter(await redact_texts_off_loop(texts, session))
    # The same walk again, in the same order: each string meets its own redaction.
    return _map_request(request, lambda _text: next(redacted))


def restore_completion(response: ChatCompletion, session: RedactionSession) -> None:
    """The originals put back, in place, into the completion's text and tool-call arguments."""
    for choice in response.choices:
        message = choice.message
        if isinstance(message.content, str):
            message.content = session.restore(message.content)
        for call in message.tool_calls or []:
            function = getattr(call, "function", None)
            if function is None:
                continue
            arguments: Any = function.arguments
            if isinstance(arguments, str):
                function.arguments = session.restore_json(arguments)
            else:  # a server that sent an object instead of a JSON string
                function.arguments = session.restore_value(arguments)


_current: contextvars.ContextVar[RedactionSession | None] = contextvars.ContextVar(
    "digestd_redaction_session", default=None
)


def current_session() -> RedactionSession | None:
    """The session of the running job, if a job scope is open."""
    return _current.get()


@contextlib.contextmanager
def redaction_scope(stats: dict[str, Any] | None = None) -> Iterator[RedactionSession]:
    """One session for every model call made inside (tasks started inside share it)."""
    session = RedactionSession(stats=stats)
    token = _current.set(session)
    try:
        yield session
    finally:
        _current.reset(token)


def is_loopback_endpoint(base_url: str | None) -> bool:
    """Whether the endpoint is on this machine (localhost, a loopback address)."""
    if not base_url:
        return False  # the default endpoint is OpenAI's
    host = (urlsplit(base_url).hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def redaction_enabled(mode: RedactMode, base_url: str | None) -> bool:
    """`always`, `never`, or under `auto` on for every endpoint that is not on loopback."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    return not is_loopback_endpoint(base_url)


__all__ = [
    "KINDS",
    "RedactMode",
    "RedactionSession",
    "current_session",
    "detect",
    "is_loopback_endpoint",
    "luhn_valid",
    "redaction_enabled",
    "redaction_scope",
    "redact_request",
    "restore_completion",
]
