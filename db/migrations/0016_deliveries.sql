-- 0016: delivery of digests and job events to destinations (webhooks, Slack, Discord, e-mail)
-- through an outbox.
--
-- A destination is declared once: its kind, its non-secret settings (SMTP host, recipients),
-- the job events it is subscribed to (`events`), and a `hint` the API may show (a URL's host,
-- never the URL). Its secrets (webhook URLs, signing keys, SMTP passwords) live in a table of
-- their own, `destination_secrets`, which only the delivery loop's query reads: no query of
-- the API selects it, so no `SELECT *` on destinations can ever carry a secret to a client.
--
-- `deliveries` is the outbox. Its rows are inserted in the transaction that ends a job (and
-- stores its digest): `digest.ready` for each destination of a schedule that fired the job, or
-- subscribed to it; `job.succeeded` / `job.failed` for the destinations subscribed to those.
-- The unique constraints make a digest (or a job's end) delivered at most once per
-- destination; `delivery_id` is the id receivers see and drop a repeat by. A worker claims a
-- due row (state `delivering`, a lease until `lease_expires_at`) only when it is the oldest
-- unfinished row of its destination, so a destination gets its deliveries in creation order;
-- a worker that dies mid-delivery leaves a lease that runs out, and another worker retakes
-- the row. `content` is what the first attempt rendered, so every attempt sends the same; it
-- is dropped once delivered, and delivered rows are pruned after
-- DIGESTD_DELIVERY_RETENTION_DAYS (dead ones are kept until retried or their destination goes).

CREATE TABLE destinations (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$'),
    kind        text NOT NULL CHECK (kind IN ('webhook', 'slack', 'discord', 'email')),
    settings    jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object'),
    events      text[] NOT NULL DEFAULT '{}'
                CHECK (events <@ ARRAY['digest.ready', 'job.succeeded', 'job.failed']::text[]),
    hint        text NOT NULL DEFAULT '' CHECK (length(hint) <= 200),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX destinations_created ON destinations (created_at DESC, id DESC);

CREATE TABLE destination_secrets (
    destination_id  bigint PRIMARY KEY REFERENCES destinations (id) ON DELETE CASCADE,
    secrets         jsonb NOT NULL CHECK (jsonb_typeof(secrets) = 'object')
);

CREATE TABLE schedule_destinations (
    schedule_id     bigint NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    destination_id  bigint NOT NULL REFERENCES destinations (id) ON DELETE CASCADE,
    PRIMARY KEY (schedule_id, destination_id)
);
CREATE INDEX schedule_destinations_destination ON schedule_destinations (destination_id);

CREATE TABLE deliveries (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id       uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
    destination_id    bigint NOT NULL REFERENCES destinations (id) ON DELETE CASCADE,
    event             text NOT NULL
                      CHECK (event IN ('digest.ready', 'job.succeeded', 'job.failed',
                                       'catchup.ready')),
    digest_id         bigint REFERENCES digests (id) ON DELETE CASCADE,
    job_id            bigint REFERENCES digest_jobs (id) ON DELETE SET NULL,
    state             text NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'delivering', 'delivered', 'dead')),
    attempts          integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at   timestamptz NOT NULL DEFAULT now(),
    lease_expires_at  timestamptz,
    leased_by         text,
    last_error        text CHECK (length(last_error) <= 300),
    content           jsonb,
    created_at        timestamptz NOT NULL DEFAULT now(),
    delivered_at      timestamptz,
    CONSTRAINT deliveries_digest_once UNIQUE (destination_id, digest_id, event),
    CONSTRAINT deliveries_job_once UNIQUE (destination_id, job_id, event),
    CONSTRAINT deliveries_digest_ready_has_digest
        CHECK (event <> 'digest.ready' OR digest_id IS NOT NULL),
    -- A catch-up is rendered when it is queued (it is no stored row's to render later); its
    -- content goes, like every delivery's, once delivered.
    CONSTRAINT deliveries_catchup_has_content
        CHECK (event <> 'catchup.ready' OR content IS NOT NULL OR state = 'delivered'),
    CONSTRAINT deliveries_leased_while_delivering
        CHECK ((state = 'delivering') = (lease_expires_at IS NOT NULL))
);
-- The claim's scan: the unfinished rows of each destination, oldest first.
CREATE INDEX deliveries_unfinished ON deliveries (destination_id, id)
    WHERE state IN ('pending', 'delivering');
-- Keyset pages of the API, all or one destination's.
CREATE INDEX deliveries_created ON deliveries (created_at DESC, id DESC);
CREATE INDEX deliveries_destination_created ON deliveries (destination_id, created_at DESC, id DESC);
CREATE INDEX deliveries_dead ON deliveries (id) WHERE state = 'dead';
-- The retention pass walks the delivered rows by age.
CREATE INDEX deliveries_delivered ON deliveries (delivered_at) WHERE state = 'delivered';
