"""Digest one stored document for one query: canonical document + query + config →
DigestPayload v1.0, its cache key and a fidelity record. Plain data in, plain data out.

Steps: check the text against its hash → evidence chunks → evidence for the query → summary and
key points from the summarizer (offline or LLM) → locators made and verified → payload validated
against the schema → fidelity (tokens before/after, level `digest`).

Sizes: the summary gets at most 15% of the document's characters (≤2000) and the key points 10%
(≤2500 in all, at most 8), so with 5 snippets of ≤400 characters a document of 10,000 characters
(the `auto` policy's threshold) digests to under 50% of its size, and longer ones to far less.
`compression_ratio = digest_chars / original_chars`, capped at 1.0 (the schema's maximum) for
tiny documents that the `always` policy digests; such digests carry a `digest_not_smaller`
warning. `digest_chars` counts the summary, key points and snippet texts: what a consumer
budgets for.

Nothing here logs or returns raw document text outside the payload's own evidence: audit lines
carry sizes, counts and hashes only (`_raw_content` never reaches logs or stored JSON).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any

from runner.core.fallback import offline_warning
from runner.core.tokens import count_tokens
from runner.core.vocabulary import PipelineWarning
from runner.documents.cache_key import digest_cache_key, query_hash
from runner.documents.canonical import CanonicalDocument, source_text_hash
from runner.documents.errors import PayloadError
from runner.documents.evidence import EvidenceMode, select_evidence
from runner.documents.evidence_chunks import chunk_document
from runner.documents.locators import make_locator
from runner.documents.payload import DigestPayload, EvidenceSnippet, serialize_payload
from runner.documents.policy import DigestConfig
from runner.documents.summarize import (
    OfflineSummarizer,
    ProgressHook,
    Summarizer,
    SummaryRequest,
    SummaryResult,
    offline_summary,
)
from runner.documents.verify import verify_payload_against_text

logger = logging.getLogger(__name__)

FIDELITY_LEVEL = "digest"
_SUMMARY_SHARE, _KEY_POINTS_SHARE = 0.15, 0.10
_MIN_BUDGET = 160


@dataclass(frozen=True)
class FidelityRecord:
    source_id: str
    original_tokens: int
    final_tokens: int
    original_chars: int
    digest_chars: int
    estimated: bool  # token counts are chars/4 estimates (tokenizer unavailable)
    level: str = FIDELITY_LEVEL
    reason: str = "digest_compression"

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class DigestOutcome:
    payload: DigestPayload
    payload_json: str  # validated; what is stored as the source's content
    cache_key: str
    fidelity: FidelityRecord
    evidence_mode: EvidenceMode
    warnings: list[PipelineWarning] = field(default_factory=list)
    duration_ms: int = 0
    # The offline rules summarized parts the model failed on (CHUNKS_EXTRACTED_OFFLINE).
    partial: bool = False
    map_chunks: int = 0  # map requests of a document too large for one (0: one request)
    llm_calls: int = 0
    model: str | None = None  # the model that wrote the summary (None offline)


def public_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata fit to store or show: keys starting with `_` (`_raw_content`, `_digest_*`
    working values) are dropped, so private metadata never reaches stored JSON or the API."""
    return {key: value for key, value in metadata.items() if not str(key).startswith("_")}


SUMMARY_OFFLINE = "SUMMARY_EXTRACTED_OFFLINE"


def summary_fallback_warning(reason: str) -> PipelineWarning:
    """The warning of a digest whose summary and key points the offline summarizer wrote because
    the model failed (`reason`: the LLM error's redacted message), worded like a channel digest's
    CHUNKS_EXTRACTED_OFFLINE (runner.core.fallback)."""
    return offline_warning(
        SUMMARY_OFFLINE,
        "the summary and key points were extracted by the offline rules",
        [("the model failed", reason)],
    )


def summary_request(
    document: CanonicalDocument, query: str, config: DigestConfig
) -> SummaryRequest:
    """Check the document, chunk it, pick the evidence, and size the summary budgets."""
    if source_text_hash(document.canonical_text) != document.source_text_hash:
        raise PayloadError("hash_mismatch", "the stored canonical text does not match its hash")
    chunks = chunk_document(document.canonical_text, document.page_spans)
    selection = select_evidence(
        chunks,
        query,
        max_snippets=config.max_evidence_snippets if config.include_evidence else 0,
        max_chars=config.evidence_max_chars,
    )
    original = len(document.canonical_text)
    return SummaryRequest(
        query=query,
        canonical_text=document.canonical_text,
        page_spans=document.page_spans,
        chunks=chunks,
        evidence=selection.snippets,
        summary_budget=min(2000, max(_MIN_BUDGET, int(original * _SUMMARY_SHARE))),
        key_points_budget=min(2500, max(_MIN_BUDGET, int(original * _KEY_POINTS_SHARE))),
        max_key_points=8,
        title=document.title,
        evidence_mode=selection.mode,
    )


def assemble(
    document: CanonicalDocument,
    query: str,
    config: DigestConfig,
    request: SummaryRequest,
    summary: SummaryResult,
    *,
    source_id: str,
    summarizer_fingerprint: str,
    started: float,
) -> DigestOutcome:
    """Payload, verification, fidelity and cache key from the parts."""
    text, spans = document.canonical_text, document.page_spans
    snippets = [
        EvidenceSnippet(
            text=item.text,
            locator=make_locator(text, item.start, item.end, item.text, item.page, spans),
            relevance_score=item.score,
        )
        for item in request.evidence
    ]
    original = len(text)
    digest_text = [summary.summary, *summary.key_points, *(s.text for s in snippets)]
    digest_chars = sum(len(part) for part in digest_text)
    payload = DigestPayload(
        query_hash=query_hash(query)[:8],
        summary=summary.summary,
        key_points=list(summary.key_points),
        evidence_snippets=snippets,
        original_chars=original,
        digest_chars=digest_chars,
        compression_ratio=round(min(1.0, digest_chars / original), 6),
        source_text_hash=document.source_text_hash,
    )
    payload_json = serialize_payload(payload)
    verify_payload_against_text(payload, text, spans)

    warnings = list(summary.warnings)
    if request.evidence and request.evidence_mode == "positional" and query.strip():
        warnings.append(
            PipelineWarning(
                "evidence_positional",
                "no evidence chunk matches the query's terms; opening, closing and section "
                "chunks were quoted instead",
            )
        )
    if digest_chars >= original:
        warnings.append(
            PipelineWarning(
                "digest_not_smaller",
                f"the digest ({digest_chars} chars) is not smaller than the document ({original})",
            )
        )
    before = count_tokens(text)
    after = count_tokens("\n".join(digest_text))
    fidelity = FidelityRecord(
        source_id=source_id,
        original_tokens=before.tokens,
        final_tokens=after.tokens,
        original_chars=original,
        digest_chars=digest_chars,
        estimated=before.estimated or after.estimated,
    )
    duration_ms = int((time.perf_counter() - started) * 1000)
    logger.info(
        "digest.completed source_id=%s original_chars=%d digest_chars=%d ratio=%.3f "
        "evidence=%d query_hash=%s duration_ms=%d",
        source_id,
        original,
        digest_chars,
        payload.compression_ratio,
        len(snippets),
        payload.query_hash,
        duration_ms,
    )
    return DigestOutcome(
        payload=payload,
        payload_json=payload_json,
        cache_key=digest_cache_key(
            source_id, document.source_text_hash, query, config, summarizer_fingerprint
        ),
        fidelity=fidelity,
        evidence_mode=request.evidence_mode,
        warnings=warnings,
        duration_ms=duration_ms,
        partial=summary.partial,
        map_chunks=summary.map_chunks,
        llm_calls=summary.usage.llm_calls if summary.usage is not None else 0,
        model=summary.model,
    )


async def digest_document(
    document: CanonicalDocument,
    query: str,
    *,
    source_id: str,
    config: DigestConfig | None = None,
    summarizer: Summarizer | None = None,
    progress: ProgressHook | None = None,
) -> DigestOutcome:
    """Digest `document` for `query` with `summarizer` (offline by default).

    Raises `PayloadError`/`LocatorError` on an inconsistent document or a bug, and whatever the
    summarizer raises (`SummarizerError`, `CircuitOpen`, `LLMCallError`): the caller keeps the
    original content and caches nothing.
    """
    config = config or DigestConfig()
    summarizer = summarizer or OfflineSummarizer()
    started = time.perf_counter()
    logger.info(
        "digest.started source_id=%s content_chars=%d policy=%s query_hash=%s",
        source_id,
        len(document.canonical_text),
        config.policy.value,
        query_hash(query)[:8],
    )
    request = replace(summary_request(document, query, config), progress=progress)
    summary = await summarizer.summarize(request)
    return assemble(
        document,
        query,
        config,
        request,
        summary,
        source_id=source_id,
        # The answering model's when a fallback model wrote it: never the primary's key.
        summarizer_fingerprint=summary.fingerprint or summarizer.fingerprint(),
        started=started,
    )


def digest_document_offline(
    document: CanonicalDocument, query: str, *, source_id: str, config: DigestConfig | None = None
) -> DigestOutcome:
    """The same digest as `digest_document` with the offline summarizer, without an event loop
    (CLI, benchmarks, thread pools)."""
    config = config or DigestConfig()
    started = time.perf_counter()
    request = summary_request(document, query, config)
    return assemble(
        document,
        query,
        config,
        request,
        offline_summary(request),
        source_id=source_id,
        summarizer_fingerprint=OfflineSummarizer().fingerprint(),
        started=started,
    )
