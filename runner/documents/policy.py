"""When a document is digested: the digest configuration, eligibility per policy, and the choice of
which documents of a batch to digest.

Policies: `off` never digests; `always` digests any document with content; `auto` (default)
digests documents of at least `min_chars` characters whose quality is HIGH or MEDIUM. In every
policy a source that already is a digest is not digested again.

A batch is ranked on the raw (canonical) content BEFORE digesting, by quality, then relevance to
the query, then length (longer first: more to gain), then source id, and the first
`max_sources` eligible documents are digested.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from runner.core.vocabulary import PipelineWarning
from runner.documents.evidence import relevance

if TYPE_CHECKING:
    from runner.documents.canonical import CanonicalDocument


class DigestPolicy(str, Enum):
    OFF = "off"
    AUTO = "auto"
    ALWAYS = "always"


class SourceQuality(str, Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    UNKNOWN = "unknown"


_QUALITY_RANK = {
    SourceQuality.HIGH: 3,
    SourceQuality.MEDIUM: 2,
    SourceQuality.LOW: 1,
    SourceQuality.UNKNOWN: 0,
}
# Extraction warnings that mean the text is a degraded view of the document.
_DEGRADED_WARNINGS = frozenset(
    {"main_content_fallback", "pdf_sparse_text", "pdf_page_unreadable", "text_decoding"}
)


@dataclass(frozen=True)
class DigestConfig:
    """The document digest settings with their defaults."""

    policy: DigestPolicy = DigestPolicy.AUTO
    min_chars: int = 10_000
    max_sources: int = 8
    timeout: float = 120.0  # seconds for a whole batch
    max_concurrent: int = 3
    include_evidence: bool = True
    evidence_max_chars: int = 400
    max_evidence_snippets: int = 5

    def __post_init__(self) -> None:
        if not isinstance(self.policy, DigestPolicy):
            object.__setattr__(self, "policy", DigestPolicy(self.policy))
        problems = []
        if self.min_chars < 0:
            problems.append("min_chars must be >= 0")
        if self.max_sources < 1:
            problems.append("max_sources must be >= 1")
        if self.timeout <= 0:
            problems.append("timeout must be > 0")
        if self.max_concurrent < 1:
            problems.append("max_concurrent must be >= 1")
        if not 50 <= self.evidence_max_chars <= 500:  # the schema caps snippet text at 500
            problems.append("evidence_max_chars must be between 50 and 500")
        if not 0 <= self.max_evidence_snippets <= 10:  # the schema allows 10 snippets
            problems.append("max_evidence_snippets must be between 0 and 10")
        if problems:
            raise ValueError("invalid digest config: " + "; ".join(problems))

    @property
    def per_source_timeout(self) -> float:
        """The per-source budget: batch timeout / max_concurrent."""
        return self.timeout / self.max_concurrent

    def hash_inputs(self) -> tuple[object, ...]:
        """The config tuple of the cache key: the settings that change a digest's content."""
        return (
            self.policy.value,
            self.min_chars,
            self.max_sources,
            self.include_evidence,
            self.evidence_max_chars,
            self.max_evidence_snippets,
        )


@dataclass(frozen=True)
class DigestCandidate:
    source_id: str
    content_chars: int
    quality: SourceQuality = SourceQuality.MEDIUM
    is_digest: bool = False
    relevance: float = 0.0  # evidence.relevance(query, canonical_text), computed on raw content


@dataclass(frozen=True)
class Eligibility:
    eligible: bool
    reason: str  # eligible | policy_off | no_content | already_digested | too_small | low_quality


def check_eligibility(candidate: DigestCandidate, config: DigestConfig) -> Eligibility:
    if config.policy is DigestPolicy.OFF:
        return Eligibility(False, "policy_off")
    if candidate.is_digest:
        return Eligibility(False, "already_digested")
    if candidate.content_chars <= 0:
        return Eligibility(False, "no_content")
    if config.policy is DigestPolicy.ALWAYS:
        return Eligibility(True, "eligible")
    if candidate.content_chars < config.min_chars:
        return Eligibility(False, "too_small")
    if candidate.quality not in (SourceQuality.HIGH, SourceQuality.MEDIUM):
        return Eligibility(False, "low_quality")
    return Eligibility(True, "eligible")


def select_for_digest(
    candidates: list[DigestCandidate], config: DigestConfig
) -> list[DigestCandidate]:
    """The eligible candidates to digest, best first, at most `max_sources` (deterministic)."""
    ranked = sorted(
        candidates,
        key=lambda c: (-_QUALITY_RANK[c.quality], -c.relevance, -c.content_chars, c.source_id),
    )
    chosen = [c for c in ranked if check_eligibility(c, config).eligible]
    return chosen[: config.max_sources]


def estimate_quality(warnings: list[PipelineWarning]) -> SourceQuality:
    """Quality of a document someone chose to ingest: MEDIUM, or LOW when its extraction was
    degraded (no main content found, sparse PDF text, unreadable pages, bad encoding)."""
    if any(warning.code in _DEGRADED_WARNINGS for warning in warnings):
        return SourceQuality.LOW
    return SourceQuality.MEDIUM


def document_source_id(document_id: int) -> str:
    """The `source_id` of cache keys (and archive paths): stable per stored document."""
    return f"doc-{document_id}"


def document_eligibility(
    document: CanonicalDocument, source_id: str, config: DigestConfig
) -> Eligibility:
    """The eligibility of a stored document: it is not a digest, its quality is MEDIUM
    unless its extraction was degraded (then LOW), its size is its canonical text."""
    candidate = DigestCandidate(
        source_id=source_id,
        content_chars=len(document.canonical_text),
        quality=estimate_quality(document.warnings),
    )
    return check_eligibility(candidate, config)


@dataclass(frozen=True)
class BatchChoice:
    """Which documents of one request are digested (best first) and which are not, each with
    its reason (an eligibility reason, or `max_sources` for an eligible one ranked too low)."""

    chosen: list[int]
    skipped: list[tuple[int, str]]


def choose_documents(
    documents: list[tuple[int, CanonicalDocument]], query: str, config: DigestConfig
) -> BatchChoice:
    """Rank the documents on their raw canonical text for `query` and choose the first
    `max_sources` eligible ones (`select_for_digest`: quality, relevance, length, id)."""
    candidates = {
        document_id: DigestCandidate(
            source_id=document_source_id(document_id),
            content_chars=len(document.canonical_text),
            quality=estimate_quality(document.warnings),
            relevance=relevance(query, document.canonical_text),
        )
        for document_id, document in documents
    }
    by_source = {candidate.source_id: document_id for document_id, candidate in candidates.items()}
    selected = select_for_digest(list(candidates.values()), config)
    chosen = [by_source[candidate.source_id] for candidate in selected]
    skipped = []
    for document_id, candidate in candidates.items():
        if document_id not in chosen:
            eligibility = check_eligibility(candidate, config)
            skipped.append(
                (document_id, "max_sources" if eligibility.eligible else eligibility.reason)
            )
    return BatchChoice(chosen, skipped)


def ineligible_reason(
    document: CanonicalDocument, eligibility: Eligibility, config: DigestConfig
) -> str:
    """A sentence saying why a document is not digested, for jobs, the API and the CLI."""
    detail = {
        "too_small": f": {len(document.canonical_text)} characters, policy auto needs "
        f"{config.min_chars} (DIGESTD_DOC_MIN_CHARS)",
        "low_quality": ": its extraction was degraded (see the document's warnings)",
    }.get(eligibility.reason, "")
    return f"not digested under policy {config.policy.value}: {eligibility.reason}{detail}"
