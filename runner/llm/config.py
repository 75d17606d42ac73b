"""LLMConfig: everything the LLM extractor needs to know, as plain data.

The server maps environment settings into it (DIGEST_LLM_BASE_URL, DIGEST_LLM_API_KEY,
DIGEST_MAP_MODEL, ...); tests build it directly. The API key is a plain `str` here, kept out of
`repr()` so a config printed in a log line or a traceback never shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

from runner.llm.bounds import SchemaBounds
from runner.llm.redaction import (
    DEFAULT_PHONE_REGION,
    RedactMode,
    is_phone_region,
    redaction_enabled,
)

# Extra headers whose values are credentials (a proxy's own key): masked like the API key.
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key"})


@dataclass
class LLMConfig:
    """Client, models, budgets and fault handling of the LLM extractor."""

    base_url: str | None = None
    api_key: str = field(default="", repr=False)
    map_model: str = "gpt-4o-mini"
    reduce_model: str = "gpt-4o-mini"
    # The document summarizer's model (DIGEST_DOC_MODEL); None = the reduce model.
    doc_model: str | None = None
    # Models of the same endpoint tried in order when a document digest's or a report's model
    # fails after its retries (DIGEST_LLM_FALLBACK_MODELS), before the offline fallback.
    fallback_models: tuple[str, ...] = ()
    extra_headers: dict[str, str] = field(default_factory=dict)

    # Time limits. `timeout_seconds` bounds one whole request (connect, send, wait, read), not
    # just one socket read, so a server that trickles bytes cannot hold a chunk forever.
    timeout_seconds: float = 120.0
    connect_timeout_seconds: float = 10.0
    concurrency: int = 4

    # Retries: capped exponential backoff with jitter; a Retry-After longer than the cap is
    # not waited for (the chunk fails and the job can be retried later).
    max_retries: int = 4
    backoff_base_seconds: float = 1.0
    backoff_max_seconds: float = 30.0
    retry_after_cap_seconds: float = 120.0

    # Generation. `temperature=None` omits the parameter (some reasoning models reject it);
    # `max_tokens_param` is "max_completion_tokens" for OpenAI's o-series and newer models.
    temperature: float | None = 0.0
    map_max_output_tokens: int = 4096
    reduce_max_output_tokens: int = 8192
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    # Whether tool schemas carry their length and count bounds (runner.llm.bounds): `auto` sends
    # them until the endpoint says its grammar failed, `omit` never, `send` always.
    schema_bounds: SchemaBounds = "auto"
    # Personal data and secrets replaced by placeholders in what the model is sent
    # (runner.llm.redaction): `auto` for every endpoint not on loopback, `always`, `never`.
    redact: RedactMode = "auto"
    # The region national phone numbers are read in when redacting (DIGESTD_REDACT_PHONE_REGION).
    redact_phone_region: str = DEFAULT_PHONE_REGION

    # Token budgets: model name -> {context_window, max_output_tokens,
    # budgeting_mode}; effective budget = (input budget - overhead) x (1 - safety margin).
    model_limits: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The operator's word on the models' limits (DIGEST_MAP/REDUCE_CONTEXT/OUTPUT_TOKENS): it
    # wins over the table and over what the endpoint reports. Unset = table, then learned from
    # the endpoint (runner.llm.limits), then assumed.
    map_context_tokens: int | None = None
    map_output_tokens: int | None = None
    reduce_context_tokens: int | None = None
    reduce_output_tokens: int | None = None
    token_safety_margin: float = 0.15
    runtime_overhead_tokens: int = 256
    # Off: the report writer sends its evidence as ranked, unfitted (the preflight still refuses
    # a request over the budget); on: fitted, degraded by the rules of runner.reports.evidence_budget.
    token_management_enabled: bool = True
    # Off: fitting never leaves an item out for the budget; it condenses, then fails.
    allow_content_dropping: bool = True

    # Extraction shape.
    max_known_items: int = 40
    # Consecutive chunks one map request carries (DIGESTD_CHUNKS_PER_REQUEST; fewer when the map
    # model's output limit cannot give each its own room): the prompt, tool schema and known
    # items are sent once for them. 1 = one chunk per request.
    chunks_per_request: int = 1
    max_reduce_levels: int = 3

    # Circuit breaker per endpoint (and one per fallback model: runner.llm.breaker.model_breaker).
    breaker_window: int = 10
    breaker_min_samples: int = 5
    breaker_failure_ratio: float = 0.7
    breaker_cooldown_seconds: float = 60.0

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if self.chunks_per_request < 1:
            raise ValueError("chunks_per_request must be at least 1")
        if self.max_retries < 0:
            raise ValueError("max_retries must not be negative")
        if not 0 <= self.token_safety_margin < 1:
            raise ValueError("token_safety_margin must be in [0, 1)")
        if self.runtime_overhead_tokens < 0:
            raise ValueError("runtime_overhead_tokens must not be negative")
        if self.timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be positive")
        if self.schema_bounds not in ("auto", "send", "omit"):
            raise ValueError("schema_bounds must be auto, send or omit")
        if self.redact not in ("auto", "always", "never"):
            raise ValueError("redact must be auto, always or never")
        if not is_phone_region(self.redact_phone_region):
            raise ValueError("redact_phone_region must be a region libphonenumber knows (US, GB)")
        for name in (
            "map_context_tokens",
            "map_output_tokens",
            "reduce_context_tokens",
            "reduce_output_tokens",
        ):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be positive")

    def __repr__(self) -> str:
        values: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        values["api_key"] = "***" if self.api_key else ""
        values["extra_headers"] = {
            name: "***" if name.lower() in SECRET_HEADERS else value
            for name, value in self.extra_headers.items()
        }
        return f"LLMConfig({', '.join(f'{name}={value!r}' for name, value in values.items())})"

    @property
    def document_model(self) -> str:
        """The model that writes document digests: DIGEST_DOC_MODEL, else the reduce model."""
        return self.doc_model or self.reduce_model

    @property
    def redacts(self) -> bool:
        """Whether requests to this endpoint are redacted (DIGESTD_REDACT)."""
        return redaction_enabled(self.redact, self.base_url)

    @property
    def endpoint(self) -> str:
        """The key of this endpoint's circuit breaker."""
        return (self.base_url or "https://api.openai.com/v1").rstrip("/")

    def secrets(self) -> list[str]:
        """Strings that must never reach a log line or an error message."""
        secrets = [self.api_key]
        for name, value in self.extra_headers.items():
            if name.lower() in SECRET_HEADERS:
                secrets += [value, value.split()[-1] if value.split() else value]  # "Bearer x"
        return [secret for secret in secrets if secret]
