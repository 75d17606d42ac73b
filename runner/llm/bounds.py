"""Tool schemas that grammar-based local servers can take: the bounds left out, when asked or
when the server says its grammar failed.

llama.cpp's server and llama-cpp-python turn a tool's JSON schema into a grammar that constrains
decoding. A string's `maxLength` becomes a nested chain of optional characters, a list's
`maxItems` a chain of optional items, so the contract's bounds (titles of 200 characters, lists
of 20 ids) make a grammar the server fails to parse ("failed to parse grammar"), or so large that
it gives up. The validator enforces every one of these bounds on what comes back (the contract's
Pydantic models, `model_validate` in runner.llm.toolcall), so a request without them loses a hint
to the model and nothing of what is stored.

`DIGEST_LLM_SCHEMA_BOUNDS` (LLMConfig.schema_bounds) says what is sent:
- `auto`: before the first call through a client, its endpoint's `GET /v1/models` is read once
  (a short timeout; no answer, an error or another server changes nothing): llama.cpp's server
  and llama-cpp-python's say who they are there, and their calls go without the bounds from the
  start (llama-cpp-python's server does not refuse such a schema, it dies on it). Any other
  endpoint gets the bounds; a call it refuses with a grammar error is sent once more without
  them, and so is every later call through the same client;
- `omit`: never sent (a server known to build grammars, or one that crashes on them);
- `send`: always sent; a grammar error fails the call like any other refusal.
"""

from __future__ import annotations

import logging
import re
import weakref
from typing import Any, Literal

from runner.llm.limits import cached_listing, model_listing

logger = logging.getLogger(__name__)

SchemaBounds = Literal["auto", "send", "omit"]

# The keywords that bound a value (length, count, range, shape of a string). Everything else of a
# schema (types, required fields, enums, descriptions) is kept.
BOUND_KEYWORDS = frozenset(
    {
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    }
)
# Keywords whose value is a map of names to schemas (a property called `pattern` is a name there,
# not a keyword), a list of schemas, or one schema.
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_VALUES = frozenset(
    {
        "items",
        "additionalProperties",
        "additionalItems",
        "unevaluatedProperties",
        "unevaluatedItems",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
    }
)

# What llama.cpp (`failed to parse grammar`, `error parsing grammar`), llama-cpp-python and
# servers built on them answer when a schema's grammar cannot be built.
_GRAMMAR_ERROR = re.compile(
    r"grammar[^.\n]{0,80}?(fail|error|invalid|pars|unable|could ?n[o']t)"
    r"|(fail|error|invalid|unable|could ?n[o']t)[^.\n]{0,80}?grammar",
    re.IGNORECASE,
)


def strip_bounds(schema: Any) -> Any:
    """`schema` without its bound keywords (BOUND_KEYWORDS), at every level; a new object,
    `schema` is not changed."""
    if isinstance(schema, list):  # `items` as a list of schemas (draft 4 to 2019-09)
        return [strip_bounds(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    stripped: dict[str, Any] = {}
    for key, value in schema.items():
        if key in BOUND_KEYWORDS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            stripped[key] = {name: strip_bounds(child) for name, child in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            stripped[key] = [strip_bounds(child) for child in value]
        elif key in _SCHEMA_VALUES:
            stripped[key] = strip_bounds(value)
        else:
            stripped[key] = value
    return stripped


def tool_without_bounds(tool: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI `tools` entry whose parameters schema has no bounds."""
    function = tool.get("function")
    if not isinstance(function, dict) or "parameters" not in function:
        return tool
    return {**tool, "function": {**function, "parameters": strip_bounds(function["parameters"])}}


def has_bounds(tool: dict[str, Any]) -> bool:
    return tool_without_bounds(tool) != tool


def is_grammar_error(text: str) -> bool:
    """Whether an endpoint's error text says the request's grammar could not be built."""
    return bool(_GRAMMAR_ERROR.search(text))


# The clients (openai.AsyncOpenAI) whose endpoint refused a schema's grammar: their later calls
# leave the bounds out from the start. Held weakly: forgotten with the client.
_refusing: weakref.WeakSet[object] = weakref.WeakSet()


def remember_refusal(client: object) -> None:
    _refusing.add(client)


def refuses_bounds(client: object) -> bool:
    return client in _refusing


# --- servers that say they build grammars -------------------------------------------------

# How long the one look at `/v1/models` may take (as long as the limits discovery gives it, which
# may ask first and whose answer is shared): a hint, not worth holding the first call for.
DETECT_TIMEOUT_SECONDS = 5.0
# Fields of a model entry in llama.cpp's `/v1/models` `meta` object (tools/server: vocab_type,
# n_vocab, n_ctx_train, n_embd, n_params, size): no other server reports them.
_LLAMA_CPP_META = frozenset({"n_vocab", "n_ctx_train", "n_embd"})


def grammar_server(listing: Any) -> str | None:
    """The grammar-building server a `GET /v1/models` answer comes from, or None. What each
    says of itself, as their sources write it:
    - llama.cpp's server (tools/server): `owned_by: "llamacpp"` on every model, and in its
      single-model mode a `meta` object with the GGUF's figures (`n_vocab`, `n_ctx_train`, ...);
    - llama-cpp-python's server (llama_cpp/server/app.py): `owned_by: "me"` beside a
      `permissions` list, which no other server answers (OpenAI's old field is `permission`)."""
    data = listing.get("data") if isinstance(listing, dict) else None
    for entry in data if isinstance(data, list) else []:
        if not isinstance(entry, dict):
            continue
        owner = entry.get("owned_by")
        meta = entry.get("meta")
        if owner == "llamacpp" or (isinstance(meta, dict) and _LLAMA_CPP_META <= meta.keys()):
            return "llama.cpp"
        if owner == "me" and isinstance(entry.get("permissions"), list):
            return "llama-cpp-python"
    return None


# What each client's endpoint said it is (None: not a grammar-building server, or no answer).
# Held weakly: forgotten with the client; the shared client of an endpoint
# (runner.llm.client.shared_client) lives as long as the process's event loop, so an endpoint is
# asked once, and its model list is the one the limits discovery reads (runner.llm.limits).
_servers: weakref.WeakKeyDictionary[Any, str | None] = weakref.WeakKeyDictionary()


async def detect_server(client: Any, timeout: float = DETECT_TIMEOUT_SECONDS) -> str | None:
    """The grammar-building server behind `client` ("llama.cpp", "llama-cpp-python") or None,
    read from its `GET /v1/models` once per client. Never raises for the endpoint's sake: a
    missing route, an error or a timeout is None."""
    if client in _servers:
        return _servers[client]
    server = grammar_server(await model_listing(client, timeout))
    if client not in _servers:  # the first of concurrent callers says it
        _servers[client] = server
        if server is not None:
            logger.warning(
                "LLM endpoint %s is %s's server (its /v1/models says so): tool schemas are sent "
                "without length and count bounds; the answers are still checked against them",
                getattr(client, "base_url", "?"),
                server,
            )
    return server


def detected_server(client: object) -> str | None:
    """What `detect_server` found for `client` (None before it ran)."""
    return _servers.get(client)


def known_server(client: object) -> str | None:
    """The grammar-building server behind `client` as far as this process knows without asking:
    what `detect_server` found, else what the model list read by the limits discovery says."""
    if client in _servers:
        return _servers[client]
    return grammar_server(cached_listing(client))


def send_bounds(mode: SchemaBounds, client: object) -> bool:
    """Whether a request through `client` carries the bounds under `mode` (under `auto`, after
    `detect_server`: not to a grammar-building server, nor once the endpoint refused them)."""
    if mode == "omit":
        return False
    if mode == "send":
        return True
    return not refuses_bounds(client) and detected_server(client) is None


__all__ = [
    "BOUND_KEYWORDS",
    "DETECT_TIMEOUT_SECONDS",
    "SchemaBounds",
    "detect_server",
    "detected_server",
    "grammar_server",
    "has_bounds",
    "is_grammar_error",
    "known_server",
    "refuses_bounds",
    "remember_refusal",
    "send_bounds",
    "strip_bounds",
    "tool_without_bounds",
]
