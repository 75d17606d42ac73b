-- 0001: channels, messages, digest jobs, digests and their items, the chunk result cache.
--
-- Job state machine (digest_jobs.status):
--   queued  → running            a worker claimed it (FOR UPDATE SKIP LOCKED), holding a lease
--   running → succeeded|partial  the digest and the new window mark committed in one transaction
--   running → queued             it failed and has attempts left (run_after = now() + backoff)
--   running → failed             it failed with no attempts left
--   queued|running → cancelled   cancelJob (a running job stops at its next check)
--   running (lease expired)      reclaimed by any worker as if queued

CREATE TABLE servers (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    external_id text,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE channels (
    id                       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    server_id                bigint REFERENCES servers (id) ON DELETE CASCADE,
    name                     text NOT NULL,
    external_id              text,
    last_digested_message_id bigint,
    created_at               timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT channels_server_name UNIQUE NULLS NOT DISTINCT (server_id, name)
);
CREATE INDEX channels_created ON channels (created_at DESC, id DESC);

CREATE TABLE messages (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_id      bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    external_id     text NOT NULL,
    author          text NOT NULL,
    ts              timestamptz NOT NULL,
    reply_to        text,
    raw_text        text NOT NULL,
    normalized_text text NOT NULL,
    attachments     jsonb NOT NULL DEFAULT '[]',
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT messages_channel_external UNIQUE (channel_id, external_id)
);
-- Chronological keyset pages and digest windows: (channel, ts, id).
CREATE INDEX messages_channel_ts ON messages (channel_id, ts, id);

ALTER TABLE channels
    ADD CONSTRAINT channels_last_digested_fk FOREIGN KEY (last_digested_message_id)
    REFERENCES messages (id) ON DELETE SET NULL;

CREATE TABLE digest_jobs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind             text NOT NULL DEFAULT 'channel' CHECK (kind IN ('channel', 'document')),
    channel_id       bigint REFERENCES channels (id) ON DELETE CASCADE,
    options          jsonb NOT NULL DEFAULT '{}',
    status           text NOT NULL DEFAULT 'queued' CHECK (
        status IN ('queued', 'running', 'succeeded', 'partial', 'failed', 'cancelled')),
    phase            text CHECK (phase IN ('preprocess', 'map', 'reduce', 'validate', 'store')),
    chunks_done      integer NOT NULL DEFAULT 0,
    chunks_total     integer NOT NULL DEFAULT 0,
    attempts         integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL DEFAULT 3,
    error            text,
    result_message   text,
    stats            jsonb NOT NULL DEFAULT '{}',
    warnings         jsonb NOT NULL DEFAULT '[]',
    digest_id        bigint,
    worker_id        text,
    lease_expires_at timestamptz,
    run_after        timestamptz NOT NULL DEFAULT now(),
    cancel_requested boolean NOT NULL DEFAULT false,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now()
);
-- At most one queued or running digest per channel, enforced here rather than by a check.
CREATE UNIQUE INDEX digest_jobs_one_active_per_channel ON digest_jobs (channel_id)
    WHERE status IN ('queued', 'running') AND kind = 'channel';
CREATE INDEX digest_jobs_claimable ON digest_jobs (run_after, id) WHERE status = 'queued';
CREATE INDEX digest_jobs_leased ON digest_jobs (lease_expires_at) WHERE status = 'running';
CREATE INDEX digest_jobs_created ON digest_jobs (created_at DESC, id DESC);
CREATE INDEX digest_jobs_channel_created ON digest_jobs (channel_id, created_at DESC, id DESC);
CREATE INDEX digest_jobs_status_created ON digest_jobs (status, created_at DESC, id DESC);

CREATE TABLE digests (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_id          bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    job_id              bigint REFERENCES digest_jobs (id) ON DELETE SET NULL,
    title               text NOT NULL,
    overview            text NOT NULL,
    highlights          jsonb NOT NULL DEFAULT '[]',
    coverage            jsonb NOT NULL DEFAULT '{}',
    search_keywords     text[] NOT NULL DEFAULT '{}',
    signal_quality      text NOT NULL CHECK (signal_quality IN ('high', 'medium', 'low', 'empty')),
    signal_reason       text NOT NULL DEFAULT '',
    first_message_id    bigint REFERENCES messages (id) ON DELETE SET NULL,
    last_message_id     bigint REFERENCES messages (id) ON DELETE SET NULL,
    window_start        timestamptz,
    window_end          timestamptz,
    message_count       integer NOT NULL,
    notable_message_ids text[] NOT NULL DEFAULT '{}',
    extractor           text NOT NULL,
    flags               jsonb NOT NULL DEFAULT '[]',
    rejections          jsonb NOT NULL DEFAULT '[]',
    created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX digests_created ON digests (created_at DESC, id DESC);
CREATE INDEX digests_channel_created ON digests (channel_id, created_at DESC, id DESC);
CREATE INDEX digests_signal_created ON digests (signal_quality, created_at DESC, id DESC);

ALTER TABLE digest_jobs
    ADD CONSTRAINT digest_jobs_digest_fk FOREIGN KEY (digest_id)
    REFERENCES digests (id) ON DELETE SET NULL;

-- Items of a digest. Every row cites external message ids of its channel; rows are written only
-- after validation, with the flags validation raised.
CREATE TABLE topics (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest_id   bigint NOT NULL REFERENCES digests (id) ON DELETE CASCADE,
    position    integer NOT NULL,
    title       text NOT NULL,
    summary     text NOT NULL DEFAULT '',
    message_ids text[] NOT NULL DEFAULT '{}'
);
CREATE INDEX topics_digest ON topics (digest_id, position);

CREATE TABLE decisions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest_id   bigint NOT NULL REFERENCES digests (id) ON DELETE CASCADE,
    position    integer NOT NULL,
    text        text NOT NULL,
    message_ids text[] NOT NULL,
    flags       jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX decisions_digest ON decisions (digest_id, position);

CREATE TABLE action_items (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest_id   bigint NOT NULL REFERENCES digests (id) ON DELETE CASCADE,
    position    integer NOT NULL,
    text        text NOT NULL,
    owner       text,
    message_ids text[] NOT NULL,
    flags       jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX action_items_digest ON action_items (digest_id, position);

CREATE TABLE open_questions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest_id   bigint NOT NULL REFERENCES digests (id) ON DELETE CASCADE,
    position    integer NOT NULL,
    text        text NOT NULL,
    asked_by    text,
    message_ids text[] NOT NULL,
    flags       jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX open_questions_digest ON open_questions (digest_id, position);

CREATE TABLE links (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest_id   bigint NOT NULL REFERENCES digests (id) ON DELETE CASCADE,
    position    integer NOT NULL,
    url         text NOT NULL,
    description text NOT NULL DEFAULT '',
    message_ids text[] NOT NULL
);
CREATE INDEX links_digest ON links (digest_id, position);

CREATE TABLE artifacts (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest_id   bigint NOT NULL REFERENCES digests (id) ON DELETE CASCADE,
    position    integer NOT NULL,
    kind        text NOT NULL,
    title       text NOT NULL,
    language    text,
    message_id  bigint NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    char_start  integer NOT NULL CHECK (char_start >= 0),
    char_end    integer NOT NULL CHECK (char_end > char_start),
    match_kind  text NOT NULL
);
CREATE INDEX artifacts_digest ON artifacts (digest_id, position);

CREATE TABLE knowledge_items (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest_id         bigint NOT NULL REFERENCES digests (id) ON DELETE CASCADE,
    channel_id        bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    position          integer NOT NULL,
    item_key          text NOT NULL,
    kind              text NOT NULL,
    title             text NOT NULL,
    content           text,
    message_id        bigint REFERENCES messages (id) ON DELETE CASCADE,
    char_start        integer CHECK (char_start >= 0),
    char_end          integer,
    match_kind        text,
    quote             text,
    message_ids       text[] NOT NULL DEFAULT '{}',
    context_version   text,
    entity_refs       text[] NOT NULL DEFAULT '{}',
    supersedes_id     bigint REFERENCES knowledge_items (id) ON DELETE SET NULL,
    conflicts_with_id bigint REFERENCES knowledge_items (id) ON DELETE SET NULL,
    flags             jsonb NOT NULL DEFAULT '[]',
    created_at        timestamptz NOT NULL DEFAULT now(),
    search            tsvector GENERATED ALWAYS AS (
        to_tsvector('simple', title || ' ' || coalesce(content, '') || ' ' || coalesce(quote, ''))
    ) STORED,
    -- Verbatim (pointer) xor synthesized (content), as in the extraction contract.
    CONSTRAINT knowledge_items_pointer_xor_content CHECK (
        (content IS NULL) = (message_id IS NOT NULL)
        AND (message_id IS NULL OR (char_start IS NOT NULL AND char_end > char_start))
    )
);
CREATE INDEX knowledge_items_created ON knowledge_items (created_at DESC, id DESC);
CREATE INDEX knowledge_items_channel_created ON knowledge_items (channel_id, created_at DESC, id DESC);
CREATE INDEX knowledge_items_digest ON knowledge_items (digest_id, position);
CREATE INDEX knowledge_items_search ON knowledge_items USING gin (search);

CREATE TABLE entities (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_id    bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    name          text NOT NULL,
    mention_count integer NOT NULL DEFAULT 0,
    last_digest_id bigint REFERENCES digests (id) ON DELETE SET NULL,
    CONSTRAINT entities_channel_name UNIQUE (channel_id, name)
);

-- Map results by (extractor fingerprint, chunk content): a retried or reclaimed job resumes
-- instead of redoing finished chunks, and re-digesting the same content costs nothing.
CREATE TABLE chunk_results (
    cache_key    text PRIMARY KEY,
    extractor    text NOT NULL,
    summary      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz NOT NULL DEFAULT now()
);
