"""Documents: safe fetch, HTML/PDF → canonical text, evidence, query-conditioned DigestPayload.

The two entry points a worker needs:
- ingest (`runner.documents.ingest`): `ingest_url` (async, hardened fetch) / `ingest_bytes` /
  `ingest_text` → `CanonicalDocument` (runner.documents.canonical; store `as_record()`:
  canonical_text, source_text_hash, content_type, title, page_spans, warnings, source_url);
- digest (`runner.documents.digest`): `digest_document` (async, any summarizer) /
  `digest_document_offline` → `DigestOutcome` (payload, validated payload_json, cache_key,
  fidelity record, warnings).

The package itself imports nothing: importing one of its pure modules (canonical text, locators,
evidence, payload) must not pull in the network through fetch.py (tests/repo/test_layers.py).
"""
