"""The document job: digest one stored document for one query, served from the Postgres cache
when the same key was digested before.

Claimed by the same workers and the same claim query as channel jobs (`runner/worker.py`
dispatches on `job.kind`). The steps:
1. load the document and check eligibility under the digest policy (a safety check:
   the API already refuses ineligible triggers, but the policy may have changed since);
2. archive the canonical text when `archive_dir` is set (opt-in; private files, pruned after
   the retention period; a fresh digest is verified against the archive before it is stored);
3. compute the digest cache key (document, canonical-text hash, query, config, summarizer
   fingerprint); a stored digest with that key ends the job at once: no summarizer call, which
   also keeps cached digests readable while the LLM circuit breaker is open;
4. while that breaker is open the model is skipped up front (`digest.skipped` with reason
   `breaker_open`, nothing sent, the job not retried): the offline summarizer's digest of the
   same key is served if an earlier job stored one, else the offline summarizer writes it
   (PARTIAL, SUMMARY_EXTRACTED_OFFLINE saying `breaker_open`);
   The same holds when the job is part of a batch whose time budget (`batch_deadline` in its
   options, DIGESTD_DOC_TIMEOUT_SECONDS from when the batch was queued) has run out;
5. otherwise `digest_document` under the per-source timeout (the model's call under no more
   than what is left of the batch's budget), then the digest row and the job's end state
   commit in one transaction (a lost lease rolls both back).
A failing model (call errors after its retries, an open circuit breaker, unusable output twice,
a request too large for it, no answer within the per-source timeout) does not fail the job: the
offline summarizer writes the summary and key points from the same text and evidence, the job
ends PARTIAL with a SUMMARY_EXTRACTED_OFFLINE warning saying why (worded like a channel digest's
CHUNKS_EXTRACTED_OFFLINE, runner.core.fallback), and the digest is stored under the offline
summarizer's cache key, so a later job asks the model again.
A per-document error (inconsistent text, a locator that does not verify) FAILS the job at once
with its code and reason (`FailNow`): retrying would fail the same way, whoever summarizes. A
timeout of the offline summarizer is `RetryLater`. Nothing here logs document text: only ids,
sizes, hashes and codes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from db import documents as document_queries
from db.jobs import JobStatus
from db.models import DigestJob
from runner.core.cancel import Cancelled
from runner.core.job_options import DocumentDigestOptions
from runner.core.progress import JobPhase
from runner.core.vocabulary import PipelineWarning
from runner.documents.archive import (
    DEFAULT_RETENTION_DAYS,
    prune_archive,
    verify_archive,
    write_archive,
)
from runner.documents.cache_key import digest_cache_key, query_hash
from runner.documents.canonical import CanonicalDocument
from runner.documents.digest import DigestOutcome, digest_document, summary_fallback_warning
from runner.documents.errors import ArchiveError, DocumentError
from runner.documents.policy import (
    DigestConfig,
    document_eligibility,
    document_source_id,
    ineligible_reason,
)
from runner.documents.summarize import OfflineSummarizer, ProgressHook, Summarizer
from runner.errors import LLMError
from runner.jobs.base import JobContext, finish, report_progress
from runner.jobs.outcomes import FailNow, Finished, Outcome, RetryLater, Stored
from runner.llm.breaker import CircuitOpen
from runner.metrics import (
    DIGEST_CACHE_HITS,
    DIGEST_COMPRESSION,
    DIGEST_EVIDENCE,
    DIGEST_SECONDS,
    DIGEST_SOURCES,
)

logger = logging.getLogger(__name__)


@dataclass
class DocumentJobRunner:
    """Runs document jobs with one digest configuration and a summarizer factory (a fresh
    summarizer per job; shared state such as the LLM breaker lives in the factory)."""

    config: DigestConfig = field(default_factory=DigestConfig)
    summarizer_factory: Callable[[], Summarizer] = OfflineSummarizer
    archive_dir: Path | None = None  # opt-in: archiving writes the canonical text to disk
    archive_retention_days: float = DEFAULT_RETENTION_DAYS
    # Off (DIGESTD_SUMMARIZATION_CACHE_ENABLED=false): a stored digest is never served, the
    # document is summarized again (its key's first stored digest stays the stored one).
    cache_enabled: bool = True
    # Why archiving is off although DIGESTD_ARCHIVE_DIR is set (the worker found the directory
    # not writable when it started): each job says so in one `archive_disabled` warning.
    archive_disabled: str | None = None

    async def run(self, job: DigestJob, context: JobContext) -> Outcome:
        pool, stats = context.pool, context.stats
        begun = time.perf_counter()
        options = DocumentDigestOptions.parse(job.options)
        query, deadline = options.query, options.batch_deadline
        stats.update({"document_id": job.document_id, "summarizer_calls": 0})
        assert job.document_id is not None  # a document job's subject (digest_jobs_kind_source)
        async with pool.acquire() as connection:
            row = await document_queries.document_by_id(connection, job.document_id)
        if row is None:
            raise FailNow(None, f"document {job.document_id} no longer exists")
        document = CanonicalDocument.from_record(document_queries.document_record(row))
        source_id = document_source_id(row.id)

        eligibility = document_eligibility(document, source_id, self.config)
        if not eligibility.eligible:
            reason = ineligible_reason(document, eligibility, self.config)
            logger.info("digest.skipped source_id=%s reason=%s", source_id, eligibility.reason)
            DIGEST_SOURCES.labels("skipped").inc()
            warning = {"code": "digest_skipped", "message": reason}
            return Finished(JobStatus.SUCCEEDED, message=reason, warnings=[warning])

        archive_warnings = await self._archive(source_id, document.canonical_text, stats)
        summarizer = self.summarizer_factory()
        cache_key = digest_cache_key(
            source_id, document.source_text_hash, query, self.config, summarizer.fingerprint()
        )
        stats["summarizer"] = summarizer.name
        served = await self._serve_cached(
            context, cache_key, source_id, begun, archive_warnings, JobStatus.SUCCEEDED
        )
        if served is not None:
            return served
        fallback: PipelineWarning | None = None
        uses_model = summarizer.name != OfflineSummarizer.name
        refused = summarizer.refusal()
        skipped: tuple[str, str] | None = None  # (the `digest.skipped` reason, the warning's)
        if refused is not None:
            skipped = ("breaker_open", _failure_reason(refused, self.config))
        elif uses_model and deadline is not None and _seconds_left(deadline) <= 0:
            skipped = ("batch_deadline", _deadline_reason(deadline, "before the model was asked"))
        if skipped is not None:
            # The endpoint's breaker is open, or the batch's time is up: skip the model (nothing
            # is sent, the job is not retried); the offline summarizer's digest of the same key
            # is served if one was stored, else written now. Once the breaker closes (or for a
            # later request), the model's own key is looked up first again.
            logger.info("digest.skipped source_id=%s reason=%s", source_id, skipped[0])
            stats["model_skipped"] = skipped[0]
            fallback = summary_fallback_warning(skipped[1])
            summarizer = OfflineSummarizer()
            stats["summarizer"] = summarizer.name
            stats["summary_offline"] = True
            cache_key = digest_cache_key(
                source_id, document.source_text_hash, query, self.config, summarizer.fingerprint()
            )
            warnings = [fallback.as_json(), *archive_warnings]
            served = await self._serve_cached(
                context, cache_key, source_id, begun, warnings, JobStatus.PARTIAL
            )
            if served is not None:
                return served
        stats["cache_hit"] = False
        if context.should_stop():
            raise Cancelled()

        async with pool.acquire() as connection:
            await report_progress(connection, job.id, context.worker_id, JobPhase.MAP)
        stats["summarizer_calls"] = 1

        async def progress(phase: str, done: int, total: int) -> None:
            # A large document's map, part by part, then its reduce (runner.core.progress).
            async with pool.acquire() as connection:
                await report_progress(
                    connection, job.id, context.worker_id, JobPhase(phase), done, total
                )

        timeout = self.config.per_source_timeout
        # A document of a batch gets no more than what is left of the batch's budget.
        cut_by_deadline = summarizer.name != OfflineSummarizer.name and (
            deadline is not None and _seconds_left(deadline) < timeout
        )
        if cut_by_deadline:
            assert deadline is not None
            timeout = max(0.0, _seconds_left(deadline))
        try:
            outcome = await self._digest(
                document, query, source_id, summarizer, stats, progress, timeout=timeout
            )
        except (LLMError, TimeoutError) as error:
            if summarizer.name == OfflineSummarizer.name:  # no model to stand in for
                if isinstance(error, TimeoutError):
                    raise _timed_out(self.config) from None
                raise
            # The model failed (errors after its retries, an open breaker, unusable output
            # twice, no answer in time): the offline summarizer reads the same text instead.
            logger.warning(
                "digest.summarizer_failed source_id=%s error=%s", source_id, type(error).__name__
            )
            if isinstance(error, TimeoutError) and cut_by_deadline:
                assert deadline is not None
                reason = _deadline_reason(deadline, "while the model was writing")
            else:
                reason = _failure_reason(error, self.config)
            fallback = summary_fallback_warning(reason)
            summarizer = OfflineSummarizer()
            stats["summarizer"] = summarizer.name
            try:
                outcome = await self._digest(document, query, source_id, summarizer, stats)
            except TimeoutError:
                raise _timed_out(self.config) from None
        stats["summary_offline"] = fallback is not None
        if outcome.llm_calls:
            stats["summarizer_calls"] = outcome.llm_calls
        stats.update(outcome_stats(outcome))
        _observe_fresh_digest(self.config, outcome)
        if stats.get("archived"):
            try:  # the verification contract: hash and every locator, on the archive
                archive_dir = self.archive_dir
                assert archive_dir is not None  # `archived` is only set when archiving is on
                await asyncio.to_thread(verify_archive, archive_dir, source_id, outcome.payload)
            except ArchiveError as error:
                raise FailNow(error.code, error.reason) from None
        # The offline digest is stored under the offline summarizer's cache key (`assemble`
        # keys it by the summarizer that wrote it), so a later job asks the model again.
        # PARTIAL too when the offline rules read parts the model failed on (the digest's
        # CHUNKS_EXTRACTED_OFFLINE warning names them), as a channel digest's chunks.
        partial = fallback is not None or outcome.partial
        status = JobStatus.PARTIAL if partial else JobStatus.SUCCEEDED
        first = [] if fallback is None else [fallback.as_json()]
        await self._store(context, job, row.id, query, outcome, first + archive_warnings, status)
        return Stored(status)

    async def _serve_cached(
        self,
        context: JobContext,
        cache_key: str,
        source_id: str,
        begun: float,
        warnings: list[dict[str, Any]],
        status: JobStatus,
    ) -> Finished | None:
        """End the job with the stored digest of `cache_key`, if any: no summarizer call. An
        offline digest served for a model that was refused is PARTIAL, as when it was written
        (its SUMMARY_EXTRACTED_OFFLINE warning, first in `warnings`, says why)."""
        if not self.cache_enabled:
            return None
        async with context.pool.acquire() as connection:
            cached = await document_queries.cached_digest_id(connection, cache_key)
        if cached is None:
            return None
        context.stats["cache_hit"] = True
        logger.info("digest.cache_hit source_id=%s digest_id=%s", source_id, cached)
        DIGEST_CACHE_HITS.inc()
        DIGEST_SOURCES.labels("completed").inc()
        waited = time.perf_counter() - begun
        DIGEST_SECONDS.labels(self.config.policy.value, "true").observe(waited)
        return Finished(
            status,
            message="served from the digest cache",
            document_digest_id=cached,
            warnings=warnings,
        )

    async def _digest(
        self,
        document: CanonicalDocument,
        query: str,
        source_id: str,
        summarizer: Summarizer,
        stats: dict[str, Any],
        progress: ProgressHook | None = None,
        *,
        timeout: float | None = None,
    ) -> DigestOutcome:
        """`digest_document` under `timeout` (default: the per-source timeout). A per-document
        error (inconsistent text, a locator that does not verify) FAILS the job (`FailNow`); the
        model's failures (LLMError) and TimeoutError are the caller's to handle."""
        started = time.perf_counter()
        try:
            limit = self.config.per_source_timeout if timeout is None else timeout
            async with asyncio.timeout(limit):
                return await digest_document(
                    document,
                    query,
                    source_id=source_id,
                    config=self.config,
                    summarizer=summarizer,
                    progress=progress,
                )
        except LLMError:
            raise  # a SummarizerError is a DocumentError too, but the model failed, not the text
        except DocumentError as error:
            stats["duration_seconds"] = round(time.perf_counter() - started, 3)
            logger.warning("digest.error source_id=%s code=%s", source_id, error.code)
            DIGEST_SOURCES.labels("error").inc()
            raise FailNow(error.code, error.reason) from None

    async def _archive(
        self, source_id: str, canonical_text: str, stats: dict[str, Any]
    ) -> list[dict[str, Any]]:
        """Write the canonical text to the archive (idempotent) and prune expired texts. A
        failing disk does not fail the digest: it is a warning, and nothing claims the archive."""
        if self.archive_dir is None:
            if self.archive_disabled is None:
                return []
            message = f"archiving is off: {self.archive_disabled}"
            return [{"code": "archive_disabled", "message": message}]
        archive_dir = self.archive_dir

        def write() -> None:
            write_archive(archive_dir, source_id, canonical_text)
            prune_archive(archive_dir, self.archive_retention_days)

        try:
            await asyncio.to_thread(write)
        except (OSError, ArchiveError) as error:
            logger.warning(
                "digest.archive_failed source_id=%s error=%s", source_id, type(error).__name__
            )
            return [
                {
                    "code": "ARCHIVE_WRITE_FAILED",
                    "message": f"{type(error).__name__} while archiving",
                }
            ]
        stats["archived"] = True
        return []

    async def _store(
        self,
        context: JobContext,
        job: DigestJob,
        document_id: int,
        query: str,
        outcome: DigestOutcome,
        job_warnings: list[dict[str, Any]],
        status: JobStatus,
    ) -> None:
        """The digest row and the job's end state, in one transaction (a lost lease rolls
        both back). `job_warnings` go before the digest's own on the job: they say how the job
        went (a summary the offline rules wrote, an archive that failed)."""
        stats = context.stats
        warnings = [warning.as_json() for warning in outcome.warnings]
        job_warnings = job_warnings + warnings
        values = {
            "document_id": document_id,
            "query": query,
            "query_hash": query_hash(query),
            "cache_key": outcome.cache_key,
            "payload": json.loads(outcome.payload_json),  # exactly what the schema validated
            "summarizer": str(stats.get("summarizer", "")),
            "evidence_mode": outcome.evidence_mode,
            "original_tokens": outcome.fidelity.original_tokens,
            "final_tokens": outcome.fidelity.final_tokens,
            "tokens_estimated": outcome.fidelity.estimated,
            "warnings": warnings,
            "duration_ms": outcome.duration_ms,
            # Set by `_archive` only when the text was written; `DocumentDigest.archived`.
            "archived": bool(stats.get("archived")),
        }
        async with context.pool.acquire() as connection:
            await report_progress(connection, job.id, context.worker_id, JobPhase.STORE)
        async with context.pool.acquire() as connection, connection.transaction():
            digest_id, _created = await document_queries.insert_document_digest(
                connection, job.id, values
            )
            end = Finished(status, document_digest_id=digest_id, warnings=job_warnings)
            await finish(connection, job.id, context.worker_id, end, stats)


def _timed_out(config: DigestConfig) -> RetryLater:
    # Nothing is cached; the next attempt may be quicker (a busy worker).
    return RetryLater(
        "DigestTimeout",
        f"digest_timeout: the digest took longer than {config.per_source_timeout:g} s",
    )


def _seconds_left(deadline: datetime) -> float:
    """Seconds until a batch's deadline (negative once past); a stored time without a zone is
    UTC, as every trigger writes it."""
    if deadline.tzinfo is None:
        deadline = deadline.replace(tzinfo=UTC)
    return (deadline - datetime.now(UTC)).total_seconds()


def _deadline_reason(deadline: datetime, when: str) -> str:
    """The warning's reason when a batch's time budget cut the model off."""
    end = (deadline if deadline.tzinfo else deadline.replace(tzinfo=UTC)).astimezone(UTC)
    return (
        f"batch_deadline: the batch's time budget (DIGESTD_DOC_TIMEOUT_SECONDS) ended at "
        f"{end:%Y-%m-%dT%H:%M:%S}Z {when}"
    )


def _failure_reason(error: LLMError | TimeoutError, config: DigestConfig) -> str:
    """Why the model could not write the summary, as the job's warning says it: the LLM error's
    own message (redacted, never the model's output), or the time it was given."""
    if isinstance(error, TimeoutError):
        return f"no answer within the digest's {config.per_source_timeout:g} s"
    if isinstance(error, CircuitOpen):  # the `digest.skipped` reason of the design, first
        return f"breaker_open: {error}"
    return error.reason if isinstance(error, DocumentError) else str(error)


def _observe_fresh_digest(config: DigestConfig, outcome: DigestOutcome) -> None:
    DIGEST_SOURCES.labels("completed").inc()
    DIGEST_SECONDS.labels(config.policy.value, "false").observe(outcome.duration_ms / 1000)
    DIGEST_COMPRESSION.observe(outcome.payload.compression_ratio)
    DIGEST_EVIDENCE.observe(len(outcome.payload.evidence_snippets))


def outcome_stats(outcome: DigestOutcome) -> dict[str, Any]:
    """The job figures of a fresh digest (sizes, tokens, evidence count, the model that wrote
    the summary: a fallback model's name when the primary failed)."""
    payload = outcome.payload
    return {
        "model": outcome.model,
        "original_chars": payload.original_chars,
        "digest_chars": payload.digest_chars,
        "compression_ratio": payload.compression_ratio,
        "evidence_snippets": len(payload.evidence_snippets),
        "content_tokens": outcome.fidelity.original_tokens,
        "final_tokens": outcome.fidelity.final_tokens,
        "tokens_estimated": outcome.fidelity.estimated,
        "duration_seconds": round(outcome.duration_ms / 1000, 3),
    }
