"""Turns settings into running parts: the database (embedded or DATABASE_URL, migrated), the
pool, the extractor factory and workers. Shared by the app, the CLI and the tests."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import asyncpg

from db import jobs as job_queries
from db.engine import (
    connect,
    create_pool,
    redact_url,
    resolve_database_url,
    revive_embedded_server,
    stop_embedded_server,
)
from db.jobs import TERMINAL
from db.migrate import migrate
from db.models import DigestJob
from runner.core import offload
from runner.core.extractor import Extractor
from runner.delivery.outbox import DeliveryConfig, DeliveryLoop, load_senders
from runner.delivery.webhook import WebhookSender
from runner.documents.fetch import FetchPolicy
from runner.documents.job import DocumentJobRunner
from runner.documents.policy import DigestConfig, DigestPolicy
from runner.documents.summarize import OfflineSummarizer, Summarizer
from runner.errors import StorageError
from runner.extract.offline import offline_map_concurrency
from runner.reports.job import ReportJobRunner
from runner.schedules.store import ScheduleLimits
from runner.schedules.tick import ScheduleTicker
from runner.supervision import Backoff, RunnerSupervisor, WorkerLoop
from runner.worker import Worker, WorkerConfig
from schema.context import ApiConfig
from server.settings import Settings

if TYPE_CHECKING:
    from runner.llm.config import LLMConfig
    from runner.llm.toolcall import ModelCall

logger = logging.getLogger(__name__)

T = TypeVar("T")


class ConfigurationError(ValueError):
    """A setting is invalid; the message names it (never its secret value)."""


class DatabaseUnavailable(StorageError, RuntimeError):
    """The database cannot be reached or refused us; the message says where (password
    redacted) and why, in one line."""


# What reaching a database can fail with (ClientConfigurationError, a malformed URL, is an
# InterfaceError too).
DATABASE_ERRORS = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError)


def unavailable(url: str, error: BaseException) -> DatabaseUnavailable:
    detail = str(error).splitlines()[0] if str(error) else ""
    return DatabaseUnavailable(
        f"cannot use the database at {redact_url(url)}: {type(error).__name__}: {detail}"
    )


# A server that is starting, or recovering after a backend was killed, refuses connections
# for a moment with SQLSTATE 57P03 (CannotConnectNowError). A process starting then waits
# for it, as it would for a server restarting under it later; any other error (a wrong URL,
# password or database) is reported at once.
STARTUP_WAIT_SECONDS = 60.0


async def while_database_starts(
    attempt: Callable[[], Awaitable[T]], *, wait_seconds: float = STARTUP_WAIT_SECONDS
) -> T:
    """`attempt()`, tried again (capped backoff) while the server says it is starting or
    recovering, for at most `wait_seconds`."""
    backoff = Backoff(0.1, 2.0)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    while True:
        try:
            return await attempt()
        except asyncpg.CannotConnectNowError:
            delay = backoff.next_delay()
            if loop.time() + delay > deadline:
                raise
            logger.warning("database is starting or recovering; retrying in %.1fs", delay)
            await asyncio.sleep(delay)


async def check_database(url: str) -> None:
    """Connect once and leave: DatabaseUnavailable (one line) when `url` cannot be used."""
    try:
        connection = await while_database_starts(lambda: connect(url, timeout=10))
    except DATABASE_ERRORS as error:
        raise unavailable(url, error) from None
    await connection.close()


def extractor_factory(settings: Settings) -> Callable[[], Extractor]:
    """A factory of fresh extractors (fresh usage figures per job). Shared state that must
    outlive a job, such as the LLM circuit breaker, is created once here."""
    if settings.extractor_name == "offline":
        from runner.extract.offline import OfflineExtractor

        return OfflineExtractor
    return _llm_factory(settings)


def llm_config(settings: Settings) -> LLMConfig:
    """The LLM endpoint settings shared by the chat extractor and the document summarizer."""
    from runner.llm.config import LLMConfig

    if not settings.digest_llm_base_url:
        raise ConfigurationError("DIGEST_EXTRACTOR=llm needs DIGEST_LLM_BASE_URL")
    headers: dict[str, str] = {}
    if settings.digest_llm_extra_headers:
        try:
            parsed: Any = json.loads(settings.digest_llm_extra_headers)
        except json.JSONDecodeError as error:
            raise ConfigurationError(f"DIGEST_LLM_EXTRA_HEADERS is not JSON: {error.msg}") from None
        if not isinstance(parsed, dict):
            raise ConfigurationError("DIGEST_LLM_EXTRA_HEADERS must be a JSON object")
        headers = {str(k): str(v) for k, v in parsed.items()}
    return LLMConfig(
        base_url=settings.digest_llm_base_url,
        api_key=settings.digest_llm_api_key.get_secret_value()
        if settings.digest_llm_api_key
        else "",
        map_model=settings.digest_map_model,
        reduce_model=settings.digest_reduce_model,
        doc_model=settings.digest_doc_model or None,
        fallback_models=settings.fallback_models,
        extra_headers=headers,
        timeout_seconds=settings.digest_llm_timeout_seconds,
        concurrency=settings.digest_llm_concurrency,
        max_retries=settings.digest_llm_max_retries,
        schema_bounds=settings.digest_llm_schema_bounds,
        redact=settings.digestd_redact,
        redact_phone_region=settings.digestd_redact_phone_region,
        map_context_tokens=settings.digest_map_context_tokens,
        map_output_tokens=settings.digest_map_output_tokens,
        reduce_context_tokens=settings.digest_reduce_context_tokens,
        reduce_output_tokens=settings.digest_reduce_output_tokens,
        token_safety_margin=settings.digestd_token_safety_margin,
        runtime_overhead_tokens=settings.digestd_runtime_overhead_tokens,
        token_management_enabled=settings.digestd_token_management_enabled,
        allow_content_dropping=settings.digestd_allow_content_dropping,
        chunks_per_request=settings.digestd_chunks_per_request,
    )


def _llm_factory(settings: Settings) -> Callable[[], Extractor]:
    from runner.extract.llm import LLMExtractor
    from runner.llm.client import shared_client

    config = llm_config(settings)
    # One HTTP client (connection pool) per endpoint for the process, shared with the document
    # summarizer (runner.llm.client.shared_client); the endpoint's circuit breaker is shared
    # through runner.llm.breaker's registry. Each job gets a fresh extractor so its usage
    # figures and warnings are its own.
    client = shared_client(config)
    min_overlap = settings.digestd_min_claim_overlap
    return lambda: LLMExtractor(config, client=client, min_overlap=min_overlap)


def schedule_limits(settings: Settings) -> ScheduleLimits:
    """What one schedule and one channel's schedules may cost."""
    return ScheduleLimits(
        min_interval=timedelta(seconds=settings.digestd_schedule_min_interval_seconds),
        per_channel=settings.digestd_schedules_per_channel,
        run_retention_days=settings.digestd_schedule_run_retention_days,
    )


def digest_config(settings: Settings) -> DigestConfig:
    """The document digest configuration, every field from its DIGESTD_DOC_* setting."""
    return DigestConfig(
        policy=DigestPolicy(settings.digestd_doc_digest_policy),
        min_chars=settings.digestd_doc_min_chars,
        max_sources=settings.digestd_doc_max_sources,
        timeout=settings.digestd_doc_timeout_seconds,
        max_concurrent=settings.digestd_doc_max_concurrent,
        include_evidence=settings.digestd_doc_include_evidence,
        evidence_max_chars=settings.digestd_doc_evidence_max_chars,
        max_evidence_snippets=settings.digestd_doc_max_evidence_snippets,
    )


def fetch_policy(settings: Settings) -> FetchPolicy:
    allow = settings.digestd_fetch_allow_private
    return FetchPolicy(allow_loopback=allow, allow_private=allow)


Call = TypeVar("Call", bound="ModelCall")


def reduce_model_call(settings: Settings, kind: type[Call], model: str | None = None) -> Call:
    """Tool calls of `kind` to `model` (by default the reduce model), over the process's client
    of the endpoint and its circuit breaker (per endpoint, so a failing endpoint opens the
    breaker for the chat extractor, the document summarizer and the report writer alike), then
    to DIGEST_LLM_FALLBACK_MODELS in order, each behind a breaker of its own."""
    from runner.llm.breaker import config_breaker, model_breaker
    from runner.llm.client import ResilientCaller, shared_client

    config = llm_config(settings)
    client = shared_client(config)
    primary = model or config.reduce_model
    fallbacks = tuple(
        (ResilientCaller(client, config, model_breaker(config, name)), name)
        for name in config.fallback_models
        if name != primary
    )
    return kind(
        ResilientCaller(client, config, config_breaker(config)),
        primary,
        max_tokens_param=config.max_tokens_param,
        temperature=config.temperature,
        fallbacks=fallbacks,
    )


def summarizer_factory(settings: Settings) -> Callable[[], Summarizer]:
    """Document summarizers of the configured extractor: offline (extractive) or the LLM behind
    the same client, retries, circuit breaker and tool-call path as the chat extractor (client
    and breaker are per endpoint, so a failing endpoint opens the breaker for both)."""
    if settings.extractor_name == "offline":
        return OfflineSummarizer
    from runner.documents.llm_summary import LLMSummarizer, SummaryCall

    call = reduce_model_call(settings, SummaryCall, llm_config(settings).document_model)
    summarizer = LLMSummarizer(
        call, call.model, excerpt_chars=settings.digestd_doc_llm_excerpt_chars
    )
    return lambda: summarizer  # stateless between calls: one instance serves every job


def report_runner(settings: Settings, *, archive: bool = True) -> ReportJobRunner:
    """The report job runner: with the LLM writer and the model's sub-questions when the
    extractor is the LLM (the reduce model, behind the same client, retries, circuit breaker and
    tool-call path as the chat extractor), else with the offline extractive writer and the
    rules' sub-questions."""
    runner = ReportJobRunner(
        min_overlap=settings.digestd_min_claim_overlap,
        max_messages=settings.digestd_max_window_messages,
    )
    if settings.extractor_name == "offline":
        return runner
    from runner.reports.llm_decompose import DecomposeCall, ModelDecomposer
    from runner.reports.llm_writer import LLMReportWriter, ReportCall

    call = reduce_model_call(settings, ReportCall)
    runner.llm_writer = LLMReportWriter(
        call,
        min_overlap=settings.digestd_min_claim_overlap,
        archive_dir=settings.digestd_archive_dir if archive else None,
    )
    runner.decomposer = ModelDecomposer(reduce_model_call(settings, DecomposeCall))
    return runner


def archive_problem(archive_dir: Path) -> str | None:
    """Why `archive_dir` cannot take the archive (created if missing, one file written and
    removed), or None when it can: probed once when the worker starts, so a read-only directory
    is one log line and one warning per job, not a failed write per job."""
    probe = archive_dir / f".digestd-probe-{os.getpid()}"
    try:
        archive_dir.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        return f"{type(error).__name__}: {error.strerror or 'not writable'}"
    return None


class Runtime:
    """The database and worker parts of one process."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.database_url: str | None = None
        self._pool: asyncpg.Pool | None = None
        self._extractor_factory: Callable[[], Extractor] | None = None
        self._documents: DocumentJobRunner | None = None
        self._reports: ReportJobRunner | None = None
        self._archive_state: tuple[Path | None, str | None] | None = None
        # Set when the process is asked to stop (SIGTERM/SIGINT): workers stop claiming,
        # checkpoint and release their job.
        self.stopping = asyncio.Event()

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("Runtime.open() has not run")
        return self._pool

    async def open(self, *, apply_migrations: bool = True) -> None:
        self.database_url = resolve_database_url(
            self.settings.database_url, self.settings.digestd_home
        )
        logger.info("database: %s", redact_url(self.database_url))
        url = self.database_url
        try:
            if apply_migrations:
                connection = await while_database_starts(lambda: connect(url))
                try:
                    applied = await migrate(connection)
                finally:
                    await connection.close()
                for name in applied:
                    logger.info("migration applied: %s", name)
            # The embedded server is started again by this process if it finds it dead.
            revive = (
                None
                if self.settings.database_url
                else functools.partial(revive_embedded_server, self.settings.digestd_home)
            )
            self._pool = await while_database_starts(
                lambda: create_pool(
                    url,
                    max_size=self.settings.digestd_db_pool_size,
                    command_timeout=self.settings.digestd_db_command_timeout_seconds,
                    revive=revive,
                )
            )
        except DATABASE_ERRORS as error:
            raise unavailable(self.database_url, error) from None
        offload.configure(self.settings.digestd_extract_processes)

    async def close(self) -> None:
        """Close the pool and leave the embedded server (stopped when no other process holds
        it), so a clean exit never leaves a PostgreSQL behind."""
        try:
            if self._pool is not None:
                pool, self._pool = self._pool, None
                try:
                    async with asyncio.timeout(10):
                        await pool.close()
                except Exception:  # noqa: BLE001 - exiting anyway: drop what is left
                    pool.terminate()
        finally:
            if self.database_url is not None and not self.settings.database_url:
                await asyncio.to_thread(stop_embedded_server, self.settings.digestd_home)

    def api_config(self) -> ApiConfig:
        return ApiConfig(
            max_attempts=self.settings.digestd_max_attempts,
            max_message_chars=self.settings.digestd_max_message_chars,
            digest_config=digest_config(self.settings),
            fetch_policy=fetch_policy(self.settings),
            max_subscriptions_per_client=self.settings.digestd_max_subscriptions_per_client,
            max_subscriptions=self.settings.digestd_max_subscriptions,
            schedule_limits=schedule_limits(self.settings),
        )

    def worker_config(self) -> WorkerConfig:
        s = self.settings
        return WorkerConfig(
            lease_seconds=s.digestd_lease_seconds,
            heartbeat_seconds=s.digestd_heartbeat_seconds,
            poll_seconds=s.digestd_poll_seconds,
            chunk_tokens=s.digestd_chunk_tokens,
            min_overlap=s.digestd_min_claim_overlap,
            map_concurrency=(
                s.digest_llm_concurrency
                if s.extractor_name == "llm"
                else offline_map_concurrency(s.digestd_extract_processes)
            ),
            retry_base_seconds=s.digestd_retry_base_seconds,
            retry_max_seconds=s.digestd_retry_max_seconds,
            max_window_messages=s.digestd_max_window_messages,
            shutdown_grace_seconds=s.digestd_shutdown_grace_seconds,
        )

    def new_worker(self) -> Worker:
        if self._extractor_factory is None:
            self._extractor_factory = extractor_factory(self.settings)
        archive_dir, disabled = self._archive()
        if self._documents is None:
            self._documents = DocumentJobRunner(
                digest_config(self.settings),
                summarizer_factory(self.settings),
                archive_dir=archive_dir,
                archive_retention_days=self.settings.digestd_archive_retention_days,
                cache_enabled=self.settings.digestd_summarization_cache_enabled,
                archive_disabled=disabled,
            )
        if self._reports is None:
            self._reports = report_runner(self.settings, archive=archive_dir is not None)
        assert self.database_url is not None
        return Worker(
            self.pool,
            self.database_url,
            self.worker_config(),
            self._extractor_factory,
            self._documents,
            self._reports,
        )

    def _archive(self) -> tuple[Path | None, str | None]:
        """The archive directory the workers use and, when DIGESTD_ARCHIVE_DIR is set but not
        writable, why archiving is off (probed once per process, logged once)."""
        if self._archive_state is None:
            configured = self.settings.digestd_archive_dir
            problem = archive_problem(configured) if configured is not None else None
            if problem is not None:
                logger.warning(
                    "archive disabled: DIGESTD_ARCHIVE_DIR is not writable (%s)", problem
                )
                self._archive_state = (None, f"DIGESTD_ARCHIVE_DIR is not writable ({problem})")
            else:
                self._archive_state = (configured, None)
        return self._archive_state

    def new_schedule_ticker(self) -> ScheduleTicker:
        return ScheduleTicker(
            self.pool,
            tick_seconds=self.settings.digestd_schedule_tick_seconds,
            max_attempts=self.settings.digestd_max_attempts,
            limits=schedule_limits(self.settings),
            cache_retention_days=self.settings.digestd_doc_cache_retention_days,
        )

    def new_delivery_loop(self) -> DeliveryLoop:
        s = self.settings
        webhook = WebhookSender(
            allow_private=s.digestd_delivery_allow_private,
            timeout_seconds=s.digestd_delivery_timeout_seconds,
        )
        return DeliveryLoop(
            self.pool,
            load_senders(
                webhook,
                allow_private=s.digestd_delivery_allow_private,
                timeout_seconds=s.digestd_delivery_timeout_seconds,
            ),
            DeliveryConfig(
                worker_id=self.worker_config().worker_id,
                max_attempts=s.digestd_delivery_max_attempts,
                lease_seconds=s.digestd_delivery_lease_seconds,
                poll_seconds=s.digestd_delivery_poll_seconds,
                retry_base_seconds=s.digestd_delivery_retry_base_seconds,
                retry_max_seconds=s.digestd_delivery_retry_max_seconds,
                retention_days=s.digestd_delivery_retention_days,
                public_url=s.digestd_public_url or "",
            ),
            self.database_url,
        )

    def runner(self, workers: int) -> RunnerSupervisor:
        """The supervised loops of a process that runs jobs: `workers` job loops and, with at
        least one, the schedule tick and the delivery loop (schedules are fired, and their
        digests delivered, where jobs are run)."""
        also: list[Callable[[], WorkerLoop]] = (
            [self.new_schedule_ticker, self.new_delivery_loop] if workers > 0 else []
        )
        return RunnerSupervisor(self.new_worker, workers, also=also)

    async def run_until_done(self, job_id: int, run_worker: bool) -> DigestJob:
        """The job once it is terminal: run here by a worker of this runtime (`run_worker`), or
        waited for while other workers run it (`--wait --no-worker`)."""
        worker = self.new_worker() if run_worker else None
        while True:
            if worker is not None:
                await worker.run_once()
            async with self.pool.acquire() as connection:
                job = await job_queries.job_by_id(connection, job_id)
            assert job is not None
            if job.status in TERMINAL:
                return job
            await asyncio.sleep(0.3)
