-- 0005: reports across channels and documents: a question answered from
-- chosen channels (a since/until range of their messages) and documents, every sentence citing
-- sources S1..Sn, and report jobs in digest_jobs.
--
-- A report is stored whole: `sections` is the JSON list of {heading, bullets, sentences:
-- [{text, source_ids: ["S1", ...]}]}; `sources` the cited sources in id order, each
-- {id, kind: "message" | "document", quote, ...}: a message source names its messages row,
-- external id, channel and revision with char_start/char_end into that revision's text, a
-- document source its document, source_text_hash and locator; `audit` the citation audit's
-- figures. `cache_key` is sha256 of (question, the exact message revisions and document texts
-- read, settings, writer version): a job whose key is stored is served from it, doing nothing.

CREATE TABLE reports (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      bigint REFERENCES digest_jobs (id) ON DELETE SET NULL,
    question    text NOT NULL CHECK (question <> ''),
    request     jsonb NOT NULL,
    cache_key   text NOT NULL CHECK (cache_key ~ '^[a-f0-9]{64}$'),
    title       text NOT NULL,
    sections    jsonb NOT NULL CHECK (jsonb_typeof(sections) = 'array'),
    sources     jsonb NOT NULL CHECK (jsonb_typeof(sources) = 'array'),
    markdown    text NOT NULL,
    audit       jsonb NOT NULL,
    writer      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT reports_cache_key UNIQUE (cache_key)
);
CREATE INDEX reports_created ON reports (created_at DESC, id DESC);

-- Report jobs reuse the queue. Their subject is the request (options: question, channel_ids,
-- document_ids, since, until, request_hash), not one channel or document, so both ids are NULL;
-- one queued or running job per request hash, a second trigger returns it.
ALTER TABLE digest_jobs
    DROP CONSTRAINT digest_jobs_kind_check,
    ADD CONSTRAINT digest_jobs_kind_check CHECK (kind IN ('channel', 'document', 'report')),
    ADD COLUMN report_id bigint REFERENCES reports (id) ON DELETE SET NULL,
    ADD CONSTRAINT digest_jobs_report_subject CHECK (
        kind <> 'report' OR (channel_id IS NULL AND document_id IS NULL));
CREATE UNIQUE INDEX digest_jobs_one_active_per_report_request
    ON digest_jobs ((options ->> 'request_hash'))
    WHERE status IN ('queued', 'running') AND kind = 'report';
