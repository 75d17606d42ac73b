"""Documents: safe fetch, HTML/PDF → canonical text, evidence, query-conditioned DigestPayload.

The two entry points a worker needs:
- ingest: `ingest_url` (async, hardened fetch) / `ingest_bytes` / `ingest_text` →
  `CanonicalDocument` (store `as_record()`: canonical_text, source_text_hash, content_type,
  title, page_spans, warnings, source_url);
- digest: `digest_document` (async, any summarizer) / `digest_document_offline` →
  `DigestOutcome` (payload, validated payload_json, cache_key, fidelity record, warnings).
"""

from runner.documents.cache_key import DIGEST_IMPL_VERSION, digest_cache_key
from runner.documents.canonical import CanonicalDocument
from runner.documents.digest import (
    DigestOutcome,
    FidelityRecord,
    digest_document,
    digest_document_offline,
    public_metadata,
)
from runner.documents.errors import (
    ArchiveError,
    DocumentError,
    ExtractionError,
    FetchError,
    LocatorError,
    PayloadError,
)
from runner.documents.fetch import FetchPolicy
from runner.documents.ingest import ingest_bytes, ingest_text, ingest_url
from runner.documents.payload import DigestPayload, deserialize_payload, serialize_payload
from runner.documents.policy import DigestConfig, DigestPolicy, check_eligibility, select_for_digest

__all__ = [
    "DIGEST_IMPL_VERSION",
    "ArchiveError",
    "CanonicalDocument",
    "DigestConfig",
    "DigestOutcome",
    "DigestPayload",
    "DigestPolicy",
    "DocumentError",
    "ExtractionError",
    "FetchError",
    "FetchPolicy",
    "FidelityRecord",
    "LocatorError",
    "PayloadError",
    "check_eligibility",
    "deserialize_payload",
    "digest_cache_key",
    "digest_document",
    "digest_document_offline",
    "ingest_bytes",
    "ingest_text",
    "ingest_url",
    "public_metadata",
    "select_for_digest",
    "serialize_payload",
]
