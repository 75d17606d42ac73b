-- 0002: documents (HTML, PDF, text) as a second kind of source, their query-conditioned digests
-- (DigestPayload v1.0, which doubles as the digest cache), and document jobs in digest_jobs.
--
-- A document's identity is its canonical text: `source_text_hash` is unique. Ingesting the same
-- text again (the same file twice, or one PDF from a path and from a URL) returns the stored
-- document, so its digests and their cache keys are reused; a page that changed at the same URL
-- has a new hash and becomes a new document, while the old one's locators stay valid for the
-- old text. Only canonical text is stored: the fetched bytes are untrusted and never needed again.

CREATE TABLE documents (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_text_hash text NOT NULL CHECK (source_text_hash ~ '^sha256:[a-f0-9]{64}$'),
    canonical_text   text NOT NULL CHECK (canonical_text <> ''),
    content_type     text NOT NULL CHECK (
        content_type IN ('text/html', 'application/pdf', 'text/plain')),
    title            text,
    source_url       text,
    -- PDFs: [[start, end], ...] of each page's text in canonical_text (page n is element n-1).
    page_spans       jsonb CHECK (page_spans IS NULL OR jsonb_typeof(page_spans) = 'array'),
    warnings         jsonb NOT NULL DEFAULT '[]',
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT documents_source_text_hash UNIQUE (source_text_hash)
);
-- The `documents` keyset list (newest first), unfiltered and by content type.
CREATE INDEX documents_created ON documents (created_at DESC, id DESC);
CREATE INDEX documents_type_created ON documents (content_type, created_at DESC, id DESC);

-- One row per (document, query, config, summarizer): `cache_key` is
-- digest:{impl}:{source_id}:{content16}:{query8}:{config8}, unique, so a job whose key exists
-- is served from here without calling a summarizer. The payload is validated against its
-- JSON schema in Python on write and on read; the checks below are a last line of defence.
CREATE TABLE document_digests (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id       bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    job_id            bigint REFERENCES digest_jobs (id) ON DELETE SET NULL,
    query             text NOT NULL,
    query_hash        text NOT NULL CHECK (query_hash ~ '^[a-f0-9]{64}$'),
    cache_key         text NOT NULL,
    payload           jsonb NOT NULL CHECK (
        payload ->> 'version' = '1.0' AND payload ->> 'content_type' = 'digest/v1'),
    summarizer        text NOT NULL,
    evidence_mode     text NOT NULL,
    fidelity_level    text NOT NULL DEFAULT 'digest' CHECK (fidelity_level = 'digest'),
    original_tokens   integer NOT NULL CHECK (original_tokens >= 0),
    final_tokens      integer NOT NULL CHECK (final_tokens >= 0),
    tokens_estimated  boolean NOT NULL,
    warnings          jsonb NOT NULL DEFAULT '[]',
    duration_ms       integer NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT document_digests_cache_key UNIQUE (cache_key)
);
-- A document's latest digests, and the `documentDigests` keyset order.
CREATE INDEX document_digests_document_created
    ON document_digests (document_id, created_at DESC, id DESC);

-- Document jobs reuse the queue: same claim query, leases, retries and cancel. The query lives in
-- options ({"query": ..., "query_hash": <64 hex>}). 0001's one-active-job index is partial on
-- kind = 'channel', so document jobs (channel_id NULL) never collide with it; documents get their
-- own: one queued or running job per (document, query), a second trigger returns that job.
ALTER TABLE digest_jobs
    ADD COLUMN document_id bigint REFERENCES documents (id) ON DELETE CASCADE,
    ADD COLUMN document_digest_id bigint REFERENCES document_digests (id) ON DELETE SET NULL,
    ADD CONSTRAINT digest_jobs_kind_source CHECK (
        (kind = 'document') = (document_id IS NOT NULL)
        AND (kind <> 'document' OR channel_id IS NULL));
CREATE UNIQUE INDEX digest_jobs_one_active_per_document_query
    ON digest_jobs (document_id, (options ->> 'query_hash'))
    WHERE status IN ('queued', 'running') AND kind = 'document';
CREATE INDEX digest_jobs_document_created
    ON digest_jobs (document_id, created_at DESC, id DESC) WHERE document_id IS NOT NULL;
