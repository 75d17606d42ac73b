"""What the workers count for Prometheus: jobs and their phases, LLM calls and tokens, the
chunk-result cache, document digests (under the `digest_*` names dashboards query), PDF text
extraction (`pdf_extraction_*`) and the citations of stored reports.

The figures live in `prometheus_client`'s process-wide registry, beside the API's own
(server/metrics.py), so `digestd serve` shows both at /metrics and `digestd worker
--metrics-port N` serves a worker's. Labels are closed sets (a job kind, a status, a phase, an
endpoint's origin), never anything a chat or a document wrote.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from prometheus_client import REGISTRY, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:  # for its type only: the LLM client imports this module, not report code
    from runner.reports.audit import ReportAudit

JOB_SECONDS = Histogram(
    "digestd_job_duration_seconds",
    "Job runs from claim to end, by kind and how the run ended (a status, or retry, released, "
    "lease_lost).",
    ["kind", "outcome"],
    buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600),
)
PHASE_SECONDS = Histogram(
    "digestd_job_phase_seconds",
    "Time a job spent in each phase (reading, threading, map, reduce, validate, store).",
    ["kind", "phase"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800),
)
CHUNK_CACHE = Counter(
    "digestd_chunk_cache_lookups", "Chunk-result cache lookups of the map step.", ["result"]
)
LLM_CALLS = Counter(
    "digestd_llm_calls",
    "LLM requests sent, by endpoint, model and result (ok or error).",
    ["endpoint", "model", "result"],
)
LLM_ERRORS = Counter(
    "digestd_llm_errors",
    "Failed LLM requests by endpoint and reason (HTTP status or class).",
    ["endpoint", "reason"],
)
LLM_TOKENS = Counter(
    "digestd_llm_tokens",
    "Tokens the endpoints reported, by kind: prompt, cached, completion.",
    ["endpoint", "model", "kind"],
)
REDACTIONS = Counter(
    "digestd_redactions",
    "Distinct values hidden from LLM endpoints by placeholders, per job, by kind (email, phone, "
    "token, ip, card).",
    ["kind"],
)

# Document digests: dashboards query these names and labels (listed in the README), so they stay.
DIGEST_SECONDS = Histogram(
    "digest_duration_seconds",
    "Document digest duration.",
    ["policy", "cache_hit"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
DIGEST_SOURCES = Counter(
    "digest_sources_processed", "Documents a digest job processed, by outcome.", ["outcome"]
)
DIGEST_COMPRESSION = Histogram(
    "digest_compression_ratio",
    "Digest characters / original characters of fresh digests.",
    buckets=(0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0),
)
DIGEST_CACHE_HITS = Counter("digest_cache_hits", "Document digests served from the cache.")
DIGEST_EVIDENCE = Histogram(
    "digest_evidence_snippets",
    "Evidence snippets per fresh document digest.",
    buckets=(0, 1, 2, 3, 4, 5, 8, 12, 20),
)

# PDF text extraction (runner/documents/pdf.py), counted once per PDF read, in whichever process
# reads it (the API's ingest, `digestd add-doc`, a worker fetching a URL). The failure codes are
# the closed set of `ExtractionError` codes PDF extraction raises.
PDF_SECONDS = Histogram(
    "pdf_extraction_duration_seconds",
    "Time to extract a PDF's text, by outcome (ok or error).",
    ["outcome"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
PDF_PAGES = Counter(
    "pdf_extraction_pages",
    "Pages of PDFs whose text was extracted (pages past the page limit are not counted).",
)
PDF_CHARS = Counter(
    "pdf_extraction_characters", "Characters of canonical text extracted from PDFs."
)
PDF_FAILURES = Counter(
    "pdf_extraction_failures",
    "PDFs whose text could not be extracted, by code (not_pdf, encrypted, wrong_password, "
    "encryption_unsupported, malformed, no_text_layer, timeout).",
    ["code"],
)
PDF_WARNINGS = Counter(
    "pdf_extraction_warnings",
    "Warnings of extracted PDFs, by code (pages or text cut at a limit, a page read by the "
    "fallback or left empty, a repaired or decrypted file, sparse text).",
    ["code"],
)
PDF_FAILURE_CODES = (
    "not_pdf",
    "encrypted",
    "wrong_password",
    "encryption_unsupported",
    "malformed",
    "no_text_layer",
    "timeout",
)
PDF_WARNING_CODES = (
    "pdf_pages_truncated",
    "pdf_text_truncated",
    "pdf_page_fallback",
    "pdf_page_unreadable",
    "pdf_repaired",
    "pdf_decrypted",
    "pdf_sparse_text",
)
for _code in PDF_FAILURE_CODES:  # shown at 0 from the start, so rates work at once
    PDF_FAILURES.labels(_code)
for _code in PDF_WARNING_CODES:
    PDF_WARNINGS.labels(_code)


def count_pdf_extraction(
    seconds: float,
    *,
    pages: int = 0,
    characters: int = 0,
    warnings: list[str] | tuple[str, ...] = (),
    failure: str | None = None,
) -> None:
    """Count one PDF read: its time and, when it succeeded, its pages, characters and warning
    codes; when it failed, its error code (a code outside the closed set counts as `other`)."""
    PDF_SECONDS.labels("ok" if failure is None else "error").observe(seconds)
    if failure is not None:
        PDF_FAILURES.labels(failure if failure in PDF_FAILURE_CODES else "other").inc()
        return
    PDF_PAGES.inc(pages)
    PDF_CHARS.inc(characters)
    for code in warnings:
        PDF_WARNINGS.labels(code if code in PDF_WARNING_CODES else "other").inc()


# Reports: counted once per stored report (a report served from the cache is not counted again).
REPORT_CITATIONS = Counter(
    "digestd_report_citations",
    "Citations in stored reports: (sentence, cited span) pairs of the kept sentences.",
)
REPORT_SOURCES = Counter(
    "digestd_report_sources",
    "Sources stored reports cite, each message, document or URL once per report.",
)
REPORT_ORPHANS = Counter(
    "digestd_report_orphan_sources",
    "Sources listed in a stored report that none of its sentences cites (expected 0).",
)
REPORT_AUDIT_FAILURES = Counter(
    "digestd_report_audit_failures",
    "Citation audit failures of reports: sentences dropped, and problems left in the stored "
    "report, by code (no_citation, low_support, unknown_source, orphan_source, numbering_gap).",
    ["code"],
)
REPORT_SOURCES_SECONDS = Histogram(
    "digestd_report_sources_seconds",
    "Time to number a stored report's sources and write its footnotes and Sources list.",
    buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
AUDIT_CODES = ("no_citation", "low_support", "unknown_source", "orphan_source", "numbering_gap")
for _code in AUDIT_CODES:  # every code shows at 0 from the start, so rates work at once
    REPORT_AUDIT_FAILURES.labels(_code)


def count_report(audit: ReportAudit, sources_seconds: float) -> None:
    """Count a stored report's citations, sources, orphans and audit failures."""
    REPORT_CITATIONS.inc(audit.citations)
    REPORT_SOURCES.inc(audit.sources)
    REPORT_ORPHANS.inc(audit.orphan_sources)
    failures = collections.Counter[str](audit.reasons)
    failures.update(problem.code for problem in audit.problems)
    for code, count in failures.items():
        # A closed label set: a code outside it (none today) is counted under "other".
        REPORT_AUDIT_FAILURES.labels(code if code in AUDIT_CODES else "other").inc(count)
    REPORT_SOURCES_SECONDS.observe(sources_seconds)


def endpoint_label(endpoint: str) -> str:
    """An endpoint as a label: scheme, host and port only (no credentials, path or query)."""
    parts = urlsplit(endpoint)
    host = parts.hostname or "unknown"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme or 'http'}://{host}{port}"


class PhaseClock:
    """Times a job's phases from its progress reports: a phase ends when another begins or
    when the job does (`stop`)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._phase: str | None = None
        self._since = 0.0

    def enter(self, phase: str) -> None:
        if phase == self._phase:
            return
        self.stop()
        self._phase, self._since = phase, time.perf_counter()

    def stop(self) -> None:
        if self._phase is not None:
            PHASE_SECONDS.labels(self.kind, self._phase).observe(time.perf_counter() - self._since)
            self._phase = None


class BreakerCollector(Collector):
    """The state of every LLM endpoint's circuit breaker in this process: 0 closed, 1 half
    open, 2 open (read at scrape time, so it is never stale)."""

    CODES = {"closed": 0, "half_open": 1, "open": 2}

    def collect(self) -> Iterator[GaugeMetricFamily]:
        # Imported here: runner.llm's client counts its calls with this module's counters.
        from runner.llm.breaker import registered_breakers, registered_model_breakers

        family = GaugeMetricFamily(
            "digestd_llm_breaker_state",
            "Circuit breaker of each LLM endpoint: 0 closed, 1 half open, 2 open.",
            labels=["endpoint"],
        )
        for endpoint, breaker in registered_breakers():
            family.add_metric([endpoint_label(endpoint)], self.CODES[breaker.state.value])
        yield family
        models = GaugeMetricFamily(
            "digestd_llm_model_breaker_state",
            "Circuit breaker of each fallback model: 0 closed, 1 half open, 2 open.",
            labels=["endpoint", "model"],
        )
        for endpoint, model, breaker in registered_model_breakers():
            models.add_metric([endpoint_label(endpoint), model], self.CODES[breaker.state.value])
        yield models


REGISTRY.register(BreakerCollector())

# Deliveries (runner/delivery/outbox.py): each attempt's outcome, by destination kind. The
# outbox's state counts (and the dead letters) are read from Postgres at scrape time
# (server/metrics.py), since every worker shares it.
DELIVERY_ATTEMPTS = Counter(
    "digestd_delivery_attempts",
    "Delivery attempts by destination kind and outcome (delivered, retry, dead).",
    ["kind", "outcome"],
)
