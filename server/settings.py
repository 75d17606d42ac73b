"""Configuration from the environment: one typed place, documented in docs/configuration.md.

Every setting is read from an environment variable of the same name (case-insensitive). Secrets
(`DIGEST_LLM_API_KEY`, `DIGESTD_API_TOKENS`) are `SecretStr`, so a repr or a log line of the
settings never shows them.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_home() -> Path:
    """Where the embedded database and local state live when DIGESTD_HOME is not set."""
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "digestd"


class Settings(BaseSettings):
    """All of digestd's settings. Field names are the environment variable names."""

    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore")

    database_url: str | None = Field(
        default=None, description="PostgreSQL URL; when unset an embedded server is started."
    )
    digestd_home: Path = Field(
        default_factory=default_home, description="Directory of the embedded database and state."
    )
    digestd_api_tokens: SecretStr | None = Field(
        default=None,
        description="`role:token,...` with roles reader, writer and admin; unset = open.",
    )
    digestd_cors_origins: str | None = Field(
        default=None,
        description="Comma-separated origins (`https://dash.example`) whose pages may call the API; unset = none.",
    )
    digestd_allowed_hosts: str | None = Field(
        default=None,
        description=(
            "Comma-separated host names (`digest.example`, `*.example.com`) the server answers to "
            "besides localhost, loopback addresses and its `--host`; checked when no tokens are set, "
            "or when this is set."
        ),
    )
    digestd_db_pool_size: int = Field(
        default=10, ge=1, le=200, description="Database connections per process."
    )
    digestd_db_command_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description="How long one database statement may run, and a request wait for a pool "
        "connection; past it the database counts as unavailable (`UNAVAILABLE`).",
    )
    digestd_max_connections: int | None = Field(
        default=None,
        ge=16,
        description=(
            "Client connections `serve` holds at once (more are answered 503); unset = the "
            "descriptor limit (`ulimit -n`) less the pool and 64."
        ),
    )
    digestd_max_websockets: int | None = Field(
        default=None,
        ge=1,
        description="WebSocket connections per `serve` process; unset = half of the connection limit.",
    )
    digestd_max_websockets_per_client: int = Field(
        default=32,
        ge=1,
        description="WebSocket connections per client address (behind a proxy, all of its clients are one).",
    )
    digestd_log_format: Literal["text", "json"] = Field(
        default="text", description="Log lines as text, or one JSON object per line."
    )

    # Worker and jobs.
    digestd_lease_seconds: float = Field(default=30.0, gt=0, description="Job lease length.")
    digestd_heartbeat_seconds: float = Field(
        default=10.0, gt=0, description="How often a worker renews its lease."
    )
    digestd_poll_seconds: float = Field(
        default=5.0, gt=0, description="Fallback polling interval when no NOTIFY arrives."
    )
    digestd_max_attempts: int = Field(
        default=3, ge=1, le=20, description="Attempts of a failing job before it is FAILED."
    )
    digestd_retry_base_seconds: float = Field(
        default=5.0, ge=0, description="First retry delay of a failed job; doubles per attempt."
    )
    digestd_retry_max_seconds: float = Field(
        default=300.0, ge=0, description="Cap of the retry delay."
    )
    digestd_schedule_tick_seconds: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="How often each worker process fires the digest schedules that are due (a slot fires at most this late).",
    )
    digestd_schedule_min_interval_seconds: float = Field(
        default=300.0,
        gt=0,
        description="Shortest time between two slots of a schedule: a cron whose slots come closer is refused, and the tick never fires a schedule more often.",
    )
    # Deliveries (runner/delivery/): the outbox every worker process drains.
    digestd_delivery_max_attempts: int = Field(
        default=12,
        ge=1,
        le=50,
        description="Attempts of a delivery before it is dead (a dead-letter row the API shows and retryDelivery queues again); with the default backoff, 12 keep retrying for 1.7 to 3.4 hours.",
    )
    digestd_delivery_allow_private: bool = Field(
        default=False,
        description="Allow loopback/private addresses in destination URLs and SMTP hosts (never link-local or metadata).",
    )
    digestd_delivery_poll_seconds: float = Field(
        default=2.0,
        gt=0,
        le=3600,
        description="How often each worker process looks for due deliveries besides being woken "
        "(LISTEN/NOTIFY) when one is queued.",
    )
    digestd_delivery_lease_seconds: float = Field(
        default=120.0,
        gt=0,
        description="How long a worker holds a delivery it is sending; a dead worker's delivery is retaken after it (keep it above the send timeout).",
    )
    digestd_delivery_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="Timeout of one delivery attempt's HTTP request, or of each step of its SMTP exchange.",
    )
    digestd_delivery_retry_base_seconds: float = Field(
        default=10.0,
        ge=0,
        description="First retry delay of a failed delivery; doubles per attempt, jittered.",
    )
    digestd_delivery_retry_max_seconds: float = Field(
        default=3600.0,
        ge=0,
        description="Cap of a failed delivery's backoff (a longer Retry-After is honoured up to a day).",
    )
    digestd_delivery_retention_days: int = Field(
        default=30,
        ge=1,
        description="Delivered deliveries older than this are deleted by the workers (dead ones are kept until retried).",
    )
    digestd_public_url: str | None = Field(
        default=None,
        description="The URL readers reach this server at (`https://digestd.example`, with its path "
        "prefix if any): deliveries then link to the console's page of their digest, job or "
        "catch-up. Unset = no link.",
    )
    digestd_schedules_per_channel: int = Field(
        default=20, ge=1, description="Schedules one channel may have at most."
    )
    digestd_schedule_run_retention_days: int = Field(
        default=7,
        ge=1,
        description="Days a schedule run that queued nothing (skipped: no new messages, or its digest found none) is kept before the tick prunes it.",
    )
    digestd_shutdown_grace_seconds: float = Field(
        default=10.0,
        ge=0,
        description="On SIGTERM/SIGINT, how long a running job may take to checkpoint before its lease is released.",
    )

    # Chunking and extraction.
    digestd_chunk_tokens: int = Field(
        # 6000 measured: half the map calls of 3000 and prompt/content 1.49 instead of 1.94 on
        # a real channel (tests/unit/runner/extract/test_llm_measure.py); capped per model by its context.
        default=6000,
        ge=200,
        le=32_000,
        description="Token budget of one map chunk (cl100k_base); capped by the map model's context.",
    )
    digestd_chunks_per_request: int = Field(
        # 3 measured: prompt tokens per content token 1.32 -> under 1.15 at 6,000-token chunks
        # (bench/pipeline.py), each chunk keeping its own summary and output limits.
        default=3,
        ge=1,
        le=16,
        description="Consecutive chunks one LLM map request carries, one summary each (fewer when the map model's output limit cannot give each chunk its own room); 1 = a request per chunk.",
    )
    digestd_extract_processes: int | None = Field(
        default=None,
        ge=0,
        le=64,
        description="Processes running offline extraction off the event loop; unset = min(2, CPUs), 0 = one thread.",
    )
    digest_extractor: Literal["offline", "llm"] | None = Field(
        default=None, description="Force an extractor; default: llm when a base URL is set."
    )
    digest_llm_base_url: str | None = Field(
        default=None,
        description="OpenAI-compatible endpoint; setting it selects the llm extractor.",
    )
    digest_llm_api_key: SecretStr | None = Field(
        default=None, description="API key of the endpoint; never logged or shown."
    )
    digest_map_model: str = Field(default="gpt-4o-mini", description="Model of the map step.")
    digest_reduce_model: str = Field(
        default="gpt-4o-mini",
        description="Model of the reduce step and the report writer (and of document digests unless DIGEST_DOC_MODEL is set).",
    )
    digest_doc_model: str | None = Field(
        default=None,
        description="Model of document digests; unset = DIGEST_REDUCE_MODEL.",
    )
    digest_llm_fallback_models: str | None = Field(
        default=None,
        description=(
            "Comma-separated models of the same endpoint tried in order when the document "
            "digest's or the report's model fails after its retries (errors, its circuit "
            "breaker open, invalid output twice), before the offline fallback; each has its "
            "own circuit breaker."
        ),
    )
    digest_llm_extra_headers: str | None = Field(
        default=None, description="JSON object of extra HTTP headers sent with every LLM call."
    )
    digest_llm_timeout_seconds: float = Field(
        default=120.0, gt=0, description="Timeout of one LLM request."
    )
    digest_llm_concurrency: int = Field(
        default=4, ge=1, le=64, description="Map requests in flight per job."
    )
    digest_llm_max_retries: int = Field(
        default=4, ge=0, le=10, description="Retries of a failed LLM request (429, 5xx, timeouts)."
    )
    digest_llm_schema_bounds: Literal["auto", "send", "omit"] = Field(
        default="auto",
        description="Length and count bounds (maxLength, maxItems, ...) in the tool schemas sent: "
        "`auto` leaves them out for an endpoint whose `/v1/models` says it is llama.cpp's or "
        "llama-cpp-python's server (they build grammars from them), sends them to any other "
        "until it answers that it could not build a grammar from them, then resends without; "
        "`omit` never; `send` always. "
        "The answers are checked against them either way.",
    )
    digestd_redact: Literal["auto", "always", "never"] = Field(
        default="auto",
        description="Personal data and secrets replaced by placeholders (`«EMAIL_1»`) in what "
        "an LLM endpoint is sent, and put back in its answers before they are checked, so "
        "stored digests quote the real messages: e-mail addresses, phone numbers, API keys and "
        "tokens, IP addresses and payment card numbers. `auto` redacts for every endpoint that "
        "is not on loopback (`localhost`, `127.0.0.1`, `::1`), `always` for every endpoint, "
        "`never` for none. Each job's stats count the values hidden, by kind.",
    )
    digestd_redact_phone_region: str = Field(
        default="US",
        description="The region (ISO 3166 code: `US`, `GB`, `DE`, ...) whose national phone "
        "numbers, written without a country code, redaction recognizes; numbers with one "
        "(`+44 20 7946 0958`) are found whatever the region.",
    )
    # Model limits (cl100k_base tokens). Unset: the built-in table for known models, else what
    # the endpoint reports (/v1/models, /props, a context-length 400), else assumed (warned).
    digest_map_context_tokens: int | None = Field(
        default=None,
        ge=512,
        description="Context window of the map model; unset = known or learned.",
    )
    digest_map_output_tokens: int | None = Field(
        default=None,
        ge=64,
        description="Output tokens a map request asks for; unset = 4096 within the model's limits.",
    )
    digest_reduce_context_tokens: int | None = Field(
        default=None,
        ge=512,
        description=(
            "Context window of the reduce model (also the report writer's budget); unset = "
            "known or learned."
        ),
    )
    digest_reduce_output_tokens: int | None = Field(
        default=None,
        ge=64,
        description="Output tokens a reduce request asks for; unset = 8192 within the model's limits.",
    )

    # Token management (the report writer's evidence; the margin and overhead size every budget).
    digestd_token_management_enabled: bool = Field(
        default=True,
        description="Fit the report writer's evidence to the model's budget (condense, truncate, drop, with per-item fidelity records); off = the ranked evidence as is (a request over the budget then gets the offline report).",
    )
    digestd_token_safety_margin: float = Field(
        default=0.15,
        ge=0,
        lt=1,
        description="Share of a model's input budget kept free for counting error: effective budget = (context - output - overhead) x (1 - margin).",
    )
    digestd_runtime_overhead_tokens: int = Field(
        default=256,
        ge=0,
        description="Tokens a request costs beyond what digestd counts (a proxy's or server's own prompt), taken off every input budget.",
    )
    digestd_allow_content_dropping: bool = Field(
        default=True,
        description="Whether fitting may leave lower-ranked evidence units out of the writer's request; off = condense only, and refuse what still does not fit.",
    )
    digestd_summarization_cache_enabled: bool = Field(
        default=True,
        description="Serve a stored document digest (summary) for the same document, query and settings instead of summarizing again.",
    )

    digestd_max_window_messages: int = Field(
        default=100_000,
        ge=100,
        description="Messages one digest reads at most: a coverage digest over a larger backlog cuts it into coverage slice jobs of at most this many, which workers digest at once (a catch-up reads this many and reports the rest as `window_cap`); also the messages a report reads per channel (the newest in its range, with a `window_cap` warning counting the rest).",
    )

    # Validation.
    digestd_min_claim_overlap: float = Field(
        default=0.5, ge=0, le=1, description="Share of a claim's words found in cited messages."
    )

    # Ingest limits.
    digestd_max_message_chars: int = Field(
        default=200_000, ge=1000, description="Longer messages are rejected with their location."
    )

    # Subscriptions (jobProgress over WebSocket; at most 20 per connection).
    digestd_max_subscriptions_per_client: int = Field(
        default=100, ge=1, description="Subscriptions one client address may hold open at once."
    )
    digestd_max_subscriptions: int = Field(
        default=1000, ge=1, description="Subscriptions one server process holds open at most."
    )

    # Documents.
    digestd_doc_digest_policy: Literal["off", "auto", "always"] = Field(
        default="auto",
        description="Documents digested: off, auto (large, undegraded) or always.",
    )
    digestd_doc_min_chars: int = Field(
        default=10_000, ge=0, description="Canonical characters a document needs under `auto`."
    )
    digestd_doc_max_sources: int = Field(
        default=8,
        ge=1,
        le=50,
        description="Documents of one `triggerDocumentDigests` request digested at most: the eligible ones ranked best (quality, relevance to the query, length); the rest are returned as skipped. Part of the digest cache key.",
    )
    digestd_doc_timeout_seconds: float = Field(
        default=120.0,
        gt=0,
        description="Time budget of digesting a batch of documents (`triggerDocumentDigests`, `digestd add-doc` with several sources), counted from when the batch is queued: past it a document's model summary gives way to the offline one. One document's digest also gets at most this divided by `DIGESTD_DOC_MAX_CONCURRENT`.",
    )
    digestd_doc_max_concurrent: int = Field(
        default=3,
        ge=1,
        le=32,
        description="Documents a batch's time budget is shared by: one document's digest may take `DIGESTD_DOC_TIMEOUT_SECONDS` divided by this (how many run at once is the number of workers).",
    )
    digestd_doc_include_evidence: bool = Field(
        default=True,
        description="Whether a document digest carries evidence snippets (exact quotes with locators).",
    )
    digestd_doc_evidence_max_chars: int = Field(
        default=400,
        ge=50,
        le=500,
        description="Characters of one evidence snippet at most.",
    )
    digestd_doc_max_evidence_snippets: int = Field(
        default=5, ge=0, le=10, description="Evidence snippets of one document digest at most."
    )
    digestd_doc_llm_excerpt_chars: int = Field(
        default=32_000,
        ge=1000,
        le=400_000,
        description="Characters of a document one LLM request reads at most: a document within this and the reduce model's input budget is summarized by one request, a larger one part by part (map requests of at most this many characters, fewer when the model's budget is smaller) and merged by the reduce, so all of it is read.",
    )
    digestd_doc_cache_retention_days: float = Field(
        default=30.0,
        gt=0,
        description="Document digests and cached chunk results not used for this long are pruned by the workers' tick (digests a report or a job still points to stay).",
    )
    digestd_archive_dir: Path | None = Field(
        default=None, description="Opt-in: archive canonical texts here (private files)."
    )
    digestd_archive_retention_days: float = Field(
        default=30.0, gt=0, description="Archived texts older than this are pruned."
    )
    digestd_fetch_allow_private: bool = Field(
        default=False,
        description="Allow loopback/private hosts in document URLs (never link-local).",
    )

    @field_validator("digestd_api_tokens")
    @classmethod
    def _tokens_parse(cls, spec: SecretStr | None) -> SecretStr | None:
        """Checked here, like every other setting, so a malformed list is one line and exit 2
        before any command starts (the message names the entry, never a token)."""
        # The format's one definition; imported here as server.auth imports the schema.
        from server.auth import parse_tokens

        parse_tokens(spec.get_secret_value() if spec else None)
        return spec

    @field_validator("digest_llm_fallback_models")
    @classmethod
    def _fallback_names(cls, spec: str | None) -> str | None:
        for name in (spec or "").split(","):
            if name.strip() and any(character.isspace() for character in name.strip()):
                raise ValueError(f"a model name has no spaces: {name.strip()!r}")
        return spec

    @property
    def fallback_models(self) -> tuple[str, ...]:
        """DIGEST_LLM_FALLBACK_MODELS as names, in order, without blanks or repeats."""
        names = (name.strip() for name in (self.digest_llm_fallback_models or "").split(","))
        return tuple(dict.fromkeys(name for name in names if name))

    @field_validator("digestd_allowed_hosts")
    @classmethod
    def _hosts_are_names(cls, spec: str | None) -> str | None:
        """Each entry a host name or address as a Host header carries it, without a port, or
        `*.` and a domain. No bare `*`: it would answer a rebinding page again."""
        for name in (spec or "").split(","):
            name = name.strip()
            if name and not re.fullmatch(
                r"(\*\.)?[A-Za-z0-9][A-Za-z0-9.\-]*|\[?[0-9A-Fa-f:.]+\]?", name
            ):
                raise ValueError(
                    f"{name[:80]!r} is not a host name like digest.example or *.example.com"
                )
        return spec

    @field_validator("digestd_redact_phone_region")
    @classmethod
    def _phone_region_is_known(cls, region: str) -> str:
        """A region libphonenumber has metadata for, in upper case."""
        import phonenumbers  # loaded only when the setting is given

        region = region.strip().upper()
        if region not in phonenumbers.SUPPORTED_REGIONS:
            raise ValueError(f"{region[:10]!r} is not a region code like US, GB or DE")
        return region

    @field_validator("digestd_public_url")
    @classmethod
    def _public_url_is_http(cls, url: str | None) -> str | None:
        """An http(s) URL with a host (a link a chat or a mail client will open), without its
        trailing slash; empty is unset."""
        url = (url or "").strip()
        if url and not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", url):
            raise ValueError(f"{url[:80]!r} is not a URL like https://digestd.example")
        return url.rstrip("/") or None

    @field_validator("digestd_cors_origins")
    @classmethod
    def _origins_are_exact(cls, spec: str | None) -> str | None:
        """Each entry a scheme://host[:port] origin, as a browser sends it (compared exactly). No
        wildcard: it would let any web page its user visits read a token-less digestd."""
        for origin in (spec or "").split(","):
            origin = origin.strip()
            if origin and not re.fullmatch(r"https?://[^\s/?#*]+", origin):
                raise ValueError(
                    f"{origin!r} is not an origin like https://dash.example or http://127.0.0.1:8080"
                )
        return spec

    @property
    def cors_origins(self) -> list[str]:
        """The origins of DIGESTD_CORS_ORIGINS; empty when it is unset (no CORS headers at all)."""
        return [o.strip() for o in (self.digestd_cors_origins or "").split(",") if o.strip()]

    @property
    def extractor_name(self) -> Literal["offline", "llm"]:
        """The extractor jobs use: forced by DIGEST_EXTRACTOR, else llm iff a base URL is set."""
        if self.digest_extractor:
            return self.digest_extractor
        return "llm" if self.digest_llm_base_url else "offline"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return Settings()


def configuration_table() -> str:
    """The Markdown table of every setting, as docs/configuration.md and the README show it
    (a test keeps them equal to this)."""
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for name, info in Settings.model_fields.items():
        if name == "digestd_home":
            default = "`~/.local/share/digestd`"
        elif info.default is None:
            default = "unset"
        else:
            default = f"`{info.default}`"
        rows.append(f"| `{name.upper()}` | {default} | {info.description or ''} |")
    return "\n".join(rows)
