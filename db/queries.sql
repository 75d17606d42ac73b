-- The SQL of digestd's fixed queries, each under a `-- name: <name>` header with a one-line
-- description, loaded by db/queries.py. Keyset list queries with optional filters are composed
-- in db/pages.py; bulk ingest lives in db/ingest.py.

-- name: upsert_server
-- Find or create a server (guild, workspace) by name; returns its id.
INSERT INTO servers (name, external_id) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET external_id = coalesce(servers.external_id, EXCLUDED.external_id)
RETURNING id;

-- name: upsert_channel
-- Find or create a channel by (server, name); returns the channel row.
INSERT INTO channels (server_id, name, external_id) VALUES ($1, $2, $3)
ON CONFLICT ON CONSTRAINT channels_server_name
DO UPDATE SET external_id = coalesce(channels.external_id, EXCLUDED.external_id)
RETURNING *;

-- name: channel_by_id
-- One channel with its server name.
SELECT c.*, s.name AS server_name
FROM channels c LEFT JOIN servers s ON s.id = c.server_id
WHERE c.id = $1;

-- name: channels_by_ids
-- Channels with their server names, for the DataLoader.
SELECT c.*, s.name AS server_name
FROM channels c LEFT JOIN servers s ON s.id = c.server_id
WHERE c.id = ANY($1::bigint[]);

-- name: channel_by_name
-- A channel by its name (and server name when given); used by the CLI.
SELECT c.*, s.name AS server_name
FROM channels c LEFT JOIN servers s ON s.id = c.server_id
WHERE c.name = $1 AND ($2::text IS NULL OR s.name = $2)
ORDER BY c.id
LIMIT 2;

-- name: channels_named
-- The channels with this exact name, on one server when $2 is given (at most two: one is the
-- answer, two say the name is ambiguous without a server), for `channel(name:)`.
SELECT c.*, s.name AS server_name
FROM channels c LEFT JOIN servers s ON s.id = c.server_id
WHERE c.name = $1 AND ($2::bigint IS NULL OR c.server_id = $2)
ORDER BY c.id
LIMIT 2;

-- name: channel_overviews
-- Every channel as `digestd channels` lists it, by name: its server, message count, newest
-- digest's time, and its open questions, open action items and decisions in force (each count
-- one index range: messages_channel_ts, digests_channel_created, channel_items by kind).
SELECT c.*, s.name AS server_name,
    (SELECT count(*) FROM messages m WHERE m.channel_id = c.id) AS message_count,
    (SELECT d.created_at FROM digests d WHERE d.channel_id = c.id
     ORDER BY d.created_at DESC, d.id DESC LIMIT 1) AS last_digest_at,
    (SELECT count(*) FROM channel_items i
     WHERE i.channel_id = c.id AND i.kind = 'question' AND i.status = 'open') AS open_questions,
    (SELECT count(*) FROM channel_items i
     WHERE i.channel_id = c.id AND i.kind = 'action_item' AND i.status = 'open')
        AS open_action_items,
    (SELECT count(*) FROM channel_items i
     WHERE i.channel_id = c.id AND i.kind = 'decision' AND i.status = 'in_force')
        AS decisions_in_force
FROM channels c LEFT JOIN servers s ON s.id = c.server_id
ORDER BY c.name, s.name NULLS FIRST, c.id;

-- name: channel_message_counts
-- How many messages each channel holds, for the DataLoader.
SELECT channel_id, count(*) AS message_count
FROM messages WHERE channel_id = ANY($1::bigint[])
GROUP BY channel_id;

-- name: messages_by_ids
-- Messages by internal id, for pointer resolution in the API.
SELECT * FROM messages WHERE id = ANY($1::bigint[]);

-- name: message_fields_by_ids
-- Messages by internal id without their texts, for the API's DataLoader (columns of MessageFields).
SELECT id, channel_id, external_id, author, ts, reply_to, attachments, created_at, revision,
       revised_at, covered_revision, covered_by_digest_id, parent_id, conversation_id
FROM messages WHERE id = ANY($1::bigint[]);

-- name: message_raw_texts
-- The texts as imported of messages by internal id: only the texts a query asks for are read.
SELECT id, raw_text AS text FROM messages WHERE id = ANY($1::bigint[]);

-- name: message_normalized_texts
-- The current normalized texts of messages by internal id.
SELECT id, normalized_text AS text FROM messages WHERE id = ANY($1::bigint[]);

-- name: message_states
-- The revision and conversation of messages by internal id, without their texts: what the
-- store step's channel memory needs of a window it already holds.
SELECT id, revision, conversation_id FROM messages WHERE id = ANY($1::bigint[]);

-- name: messages_by_external_ids
-- Messages of one channel by external id.
SELECT * FROM messages WHERE channel_id = $1 AND external_id = ANY($2::text[]);

-- name: window_messages
-- The digest window: a channel's messages no digest covers at their current revision, in
-- conversation order, at most $2 (the predicate is the partial index messages_uncovered's).
SELECT m.id, m.external_id, m.author, m.ts, m.reply_to, m.normalized_text, m.revision
FROM messages m
WHERE m.channel_id = $1 AND m.covered_revision IS DISTINCT FROM m.revision
ORDER BY m.ts, m.id
LIMIT $2;

-- name: uncovered_after
-- What a capped window left for the next digest: count and bounds of the channel's uncovered
-- messages after (ts, id) ($2, $3); no row when there are none. Bounds by index, not by sort.
WITH rest AS NOT MATERIALIZED (
    SELECT m.external_id, m.ts, m.id FROM messages m
    WHERE m.channel_id = $1 AND m.covered_revision IS DISTINCT FROM m.revision
      AND (m.ts, m.id) > ($2::timestamptz, $3::bigint)
)
SELECT (SELECT count(*) FROM rest) AS message_count,
       f.external_id AS first_message_id, f.ts AS first_at,
       l.external_id AS last_message_id, l.ts AS last_at
FROM (SELECT * FROM rest ORDER BY ts, id LIMIT 1) f,
     (SELECT * FROM rest ORDER BY ts DESC, id DESC LIMIT 1) l;

-- name: count_uncovered
-- How many messages of channel $1 no digest covers, counted up to $2 (enough to know whether a
-- coverage digest's backlog exceeds its cap without counting a million).
SELECT count(*) FROM (
    SELECT 1 FROM messages m
    WHERE m.channel_id = $1 AND m.covered_revision IS DISTINCT FROM m.revision
    LIMIT $2
) capped;

-- name: uncovered_slice_bounds
-- The bounds of a channel's uncovered messages cut into contiguous slices of $2 in (ts, id)
-- order: the messages at 0-based positions n that open a slice (n % $2 = 0) or close one
-- (n % $2 = $2 - 1, or the last message), with n and the total; one index scan plus a count.
WITH uncovered AS NOT MATERIALIZED (
    SELECT m.ts, m.id FROM messages m
    WHERE m.channel_id = $1 AND m.covered_revision IS DISTINCT FROM m.revision
), total AS (
    SELECT count(*) AS total FROM uncovered
), numbered AS (
    SELECT ts, id, row_number() OVER (ORDER BY ts, id) - 1 AS n FROM uncovered
)
SELECT numbered.ts, numbered.id, numbered.n, total.total
FROM numbered, total
WHERE numbered.n % $2 = 0 OR numbered.n % $2 = $2 - 1 OR numbered.n = total.total - 1
ORDER BY numbered.n;

-- name: slice_messages
-- A coverage slice's window: channel $1's uncovered messages from ($2, $3) through ($4, $5)
-- in (ts, id) order, both bounds included, at most $6.
SELECT m.id, m.external_id, m.author, m.ts, m.reply_to, m.normalized_text, m.revision
FROM messages m
WHERE m.channel_id = $1 AND m.covered_revision IS DISTINCT FROM m.revision
  AND (m.ts, m.id) >= ($2::timestamptz, $3::bigint)
  AND (m.ts, m.id) <= ($4::timestamptz, $5::bigint)
ORDER BY m.ts, m.id
LIMIT $6;

-- name: uncovered_in_slice_after
-- What a capped slice left: like uncovered_after, bounded by the slice's last message ($4, $5).
WITH rest AS NOT MATERIALIZED (
    SELECT m.external_id, m.ts, m.id FROM messages m
    WHERE m.channel_id = $1 AND m.covered_revision IS DISTINCT FROM m.revision
      AND (m.ts, m.id) > ($2::timestamptz, $3::bigint)
      AND (m.ts, m.id) <= ($4::timestamptz, $5::bigint)
)
SELECT (SELECT count(*) FROM rest) AS message_count,
       f.external_id AS first_message_id, f.ts AS first_at,
       l.external_id AS last_message_id, l.ts AS last_at
FROM (SELECT * FROM rest ORDER BY ts, id LIMIT 1) f,
     (SELECT * FROM rest ORDER BY ts DESC, id DESC LIMIT 1) l;

-- name: catch_up_messages
-- An explicit (catch-up) window: the channel's messages with $2 <= ts < $3 (either bound may
-- be NULL), current revisions, in conversation order, at most $4.
SELECT m.id, m.external_id, m.author, m.ts, m.reply_to, m.normalized_text, m.revision
FROM messages m
WHERE m.channel_id = $1
  AND ($2::timestamptz IS NULL OR m.ts >= $2::timestamptz)
  AND ($3::timestamptz IS NULL OR m.ts < $3::timestamptz)
ORDER BY m.ts, m.id
LIMIT $4;

-- name: catch_up_after
-- What a capped catch-up window left out: count and bounds of the channel's messages after
-- (ts, id) ($2, $3) and before $4 (NULL: no end); no row when there are none.
WITH rest AS NOT MATERIALIZED (
    SELECT m.external_id, m.ts, m.id FROM messages m
    WHERE m.channel_id = $1 AND (m.ts, m.id) > ($2::timestamptz, $3::bigint)
      AND ($4::timestamptz IS NULL OR m.ts < $4::timestamptz)
)
SELECT (SELECT count(*) FROM rest) AS message_count,
       f.external_id AS first_message_id, f.ts AS first_at,
       l.external_id AS last_message_id, l.ts AS last_at
FROM (SELECT * FROM rest ORDER BY ts, id LIMIT 1) f,
     (SELECT * FROM rest ORDER BY ts DESC, id DESC LIMIT 1) l;

-- name: digest_by_window_key
-- A stored digest of exactly the same messages, revisions and extraction settings, if any.
SELECT id FROM digests WHERE window_key = $1 ORDER BY id LIMIT 1;

-- name: channel_uncovered_counts
-- How many messages of each channel no digest covers yet, for the DataLoader.
SELECT channel_id, count(*) AS uncovered
FROM messages
WHERE channel_id = ANY($1::bigint[]) AND covered_revision IS DISTINCT FROM revision
GROUP BY channel_id;

-- name: revision_texts
-- Texts of (message, revision) pairs: the current text while the message is at that revision,
-- else the archived one; for pointers, which slice the revision they were made from.
SELECT w.message_id, w.revision,
       CASE WHEN m.revision = w.revision THEN m.normalized_text ELSE r.normalized_text END
           AS normalized_text
FROM unnest($1::bigint[], $2::integer[]) AS w(message_id, revision)
JOIN messages m ON m.id = w.message_id
LEFT JOIN message_revisions r
    ON r.message_id = w.message_id AND r.revision = w.revision AND m.revision <> w.revision;

-- name: authors_of_cited_messages
-- The author of each (digest, external message id) pair of arrays $1, $2: who wrote a message
-- a digest's item cites (Link.sharedBy). A message that no longer exists has no row.
SELECT k.digest_id, k.external_id, m.author
FROM unnest($1::bigint[], $2::text[]) AS k(digest_id, external_id)
JOIN digests d ON d.id = k.digest_id
JOIN messages m ON m.channel_id = d.channel_id AND m.external_id = k.external_id;

-- name: edited_messages_of_digests
-- External ids of the messages each digest read whose current revision differs from the one it
-- read (edited since), for `source_edited` flags.
-- (`m.revision > 1` lets the planner start from the few edited messages, messages_revised.)
SELECT dm.digest_id, m.external_id
FROM digest_messages dm JOIN messages m ON m.id = dm.message_id
WHERE dm.digest_id = ANY($1::bigint[]) AND m.revision > 1 AND m.revision <> dm.revision;

-- name: insert_channel_job
-- Queue a channel digest unless one for the same window (coverage, one since/until catch-up
-- window, or one coverage slice) is queued or running (the partial unique index of 0018
-- decides). A coverage digest ($2 without since/until/slice) is not queued while slices of the
-- channel are active: they are digesting its backlog (active_channel_job returns their batch).
INSERT INTO digest_jobs (kind, channel_id, options, max_attempts)
SELECT 'channel', $1, $2, $3
WHERE $2::jsonb ?| array['since', 'until', 'slice']
   OR NOT EXISTS (
       SELECT 1 FROM digest_jobs s
       WHERE s.channel_id = $1 AND s.kind = 'channel' AND s.status IN ('queued', 'running')
         AND s.options ? 'slice')
ON CONFLICT (channel_id, (coalesce(options ->> 'since', '') || '/' || coalesce(options ->> 'until', '')
                          || '/' || coalesce(options ->> 'slice', '')))
    WHERE status IN ('queued', 'running') AND kind = 'channel'
DO NOTHING
RETURNING *;

-- name: active_channel_job
-- The queued or running digest job of a channel for the window of options $2, if any; for a
-- coverage digest held back by active slices, the job that split the backlog into them.
SELECT * FROM digest_jobs
WHERE channel_id = $1 AND kind = 'channel' AND status IN ('queued', 'running')
  AND coalesce(options ->> 'since', '') = coalesce($2::jsonb ->> 'since', '')
  AND coalesce(options ->> 'until', '') = coalesce($2::jsonb ->> 'until', '')
  AND coalesce(options ->> 'slice', '') = coalesce($2::jsonb ->> 'slice', '')
UNION ALL
(SELECT b.* FROM digest_jobs b
 WHERE NOT ($2::jsonb ?| array['since', 'until', 'slice'])
   AND b.id = (SELECT (s.options #>> '{slice,batch}')::bigint FROM digest_jobs s
               WHERE s.channel_id = $1 AND s.kind = 'channel'
                 AND s.status IN ('queued', 'running') AND s.options ? 'slice'
               ORDER BY s.id LIMIT 1))
LIMIT 1;

-- name: active_slice_batch
-- The batch (the job that split the backlog) of a channel's active coverage slices, if any.
SELECT (options #>> '{slice,batch}')::bigint AS batch FROM digest_jobs
WHERE channel_id = $1 AND kind = 'channel' AND status IN ('queued', 'running')
  AND options ? 'slice'
ORDER BY id LIMIT 1;

-- name: slices_of_batch
-- The slice jobs a coverage job split its backlog into, in slice order.
SELECT * FROM digest_jobs
WHERE channel_id = $1 AND kind = 'channel' AND options #>> '{slice,batch}' = $2::bigint::text
ORDER BY (options #>> '{slice,index}')::integer;

-- name: notify_jobs
-- Wake workers waiting on LISTEN digestd_jobs.
SELECT pg_notify('digestd_jobs', $1::text);

-- Every statement below that changes a job a subscriber watches (claim, progress, finish, fail
-- or retry, cancel, release, lease expiry) also sends `pg_notify('digestd_job_events', id)`
-- for each job it changed: in the same statement, so it is delivered exactly when the change
-- commits (with the digest, for finish_job) and never for a job the statement left alone.
-- The payload is the id only; subscribers re-read the row (server/job_events.py).

-- name: expire_exhausted_leases
-- End the running jobs whose lease expired (their worker died) with no attempt left: a lost
-- lease counts as an attempt, so a job that kills its workers cannot loop forever.
WITH expired AS (
    UPDATE digest_jobs
    SET status = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'failed' END,
        error = 'lease_expired: the worker stopped renewing its lease (attempt ' || attempts
                || ' of ' || max_attempts || ')',
        worker_id = NULL, lease_expires_at = NULL, finished_at = now(), updated_at = now()
    WHERE status = 'running' AND lease_expires_at < now() AND attempts >= max_attempts
    RETURNING id
)
SELECT expired.id FROM expired
CROSS JOIN LATERAL pg_notify('digestd_job_events', expired.id::text) AS notified;

-- name: claim_next_job
-- Claim the oldest runnable job: queued and due, or running with an expired lease (its worker
-- died) and attempts left; the claim counts the attempt either way. SKIP LOCKED lets any
-- number of workers claim concurrently without waiting or sharing.
WITH claimed AS (
    UPDATE digest_jobs j
    SET status = 'running',
        worker_id = $1,
        attempts = j.attempts + 1,
        lease_expires_at = now() + make_interval(secs => $2),
        phase = 'reading',
        started_at = coalesce(j.started_at, now()),
        updated_at = now()
    FROM (
        SELECT id FROM digest_jobs
        WHERE (status = 'queued' AND run_after <= now())
           OR (status = 'running' AND lease_expires_at < now() AND attempts < max_attempts)
        ORDER BY run_after, id
        FOR UPDATE SKIP LOCKED
        LIMIT 1
    ) next_job
    WHERE j.id = next_job.id
    RETURNING j.*
)
SELECT claimed.* FROM claimed
CROSS JOIN LATERAL pg_notify('digestd_job_events', claimed.id::text) AS notified;

-- name: heartbeat_job
-- Renew the lease of a job this worker holds; returns cancel_requested, or no row if lost.
UPDATE digest_jobs
SET lease_expires_at = now() + make_interval(secs => $3), updated_at = now()
WHERE id = $1 AND worker_id = $2 AND status = 'running'
RETURNING cancel_requested;

-- name: release_job
-- Give back a job this worker holds (graceful shutdown): queued and due at once, the attempt
-- not counted; finished chunks stay in the chunk cache for whoever claims it next.
WITH released AS (
    UPDATE digest_jobs
    SET status = 'queued', phase = 'queued', worker_id = NULL, lease_expires_at = NULL,
        run_after = now(), attempts = greatest(attempts - 1, 0), updated_at = now()
    WHERE id = $1 AND worker_id = $2 AND status = 'running'
    RETURNING *
)
SELECT released.* FROM released
CROSS JOIN LATERAL pg_notify('digestd_job_events', released.id::text) AS notified;

-- name: update_job_progress
-- Record the phase ($3), chunk progress ($4 of $5) and overall fraction ($6) of a job this
-- worker holds. What a client sees never goes back: the fraction only grows; the chunk total
-- is stored once, by the first report that knows it (a later attempt's plan, e.g. of a window
-- that grew meanwhile, is scaled onto it); chunks done only grow and never pass the total.
WITH progressed AS (
    UPDATE digest_jobs
    SET phase = $3,
        chunks_total = CASE WHEN chunks_total > 0 THEN chunks_total ELSE $5::integer END,
        chunks_done = greatest(chunks_done, CASE
            WHEN $5::integer <= 0 THEN 0
            WHEN chunks_total > 0
                THEN least(chunks_total, ($4::bigint * chunks_total / $5::integer)::integer)
            ELSE least($4::integer, $5::integer) END),
        progress_fraction = greatest(progress_fraction, least(greatest($6::float8, 0), 1)),
        updated_at = now()
    WHERE id = $1 AND worker_id = $2 AND status = 'running'
    RETURNING id
)
SELECT progressed.id FROM progressed
CROSS JOIN LATERAL pg_notify('digestd_job_events', progressed.id::text) AS notified;

-- name: finish_job
-- End a job this worker holds (succeeded, partial, failed or cancelled) with its stats and what
-- it produced: a channel digest ($4), a document digest ($9) or a report ($10), or nothing.
WITH finished AS (
    UPDATE digest_jobs
    SET status = $3,
        phase = CASE WHEN $3 = 'cancelled' OR coalesce($4::bigint, $9::bigint, $10::bigint) IS NULL
                     THEN phase
                     ELSE 'store' END,
        progress_fraction = CASE WHEN $3 IN ('succeeded', 'partial') THEN 1
                                 ELSE progress_fraction END,
        digest_id = $4, document_digest_id = $9, report_id = $10, result_message = $5,
        stats = $6, warnings = $7,
        error = $8,
        lease_expires_at = NULL, finished_at = now(), updated_at = now()
    WHERE id = $1 AND worker_id = $2 AND status = 'running'
    RETURNING *
)
SELECT finished.* FROM finished
CROSS JOIN LATERAL pg_notify('digestd_job_events', finished.id::text) AS notified;

-- name: fail_job
-- A failed attempt: back to queued after a backoff while attempts remain, else failed.
WITH failed AS (
    UPDATE digest_jobs
    SET status = CASE WHEN attempts < max_attempts AND NOT cancel_requested THEN 'queued'
                      WHEN cancel_requested THEN 'cancelled'
                      ELSE 'failed' END,
        -- Queued for a retry, it waits again; ended, it stays at the phase it failed in.
        phase = CASE WHEN attempts < max_attempts AND NOT cancel_requested THEN 'queued'
                     ELSE phase END,
        run_after = now() + make_interval(secs => $4),
        error = $3, stats = $5, worker_id = NULL, lease_expires_at = NULL,
        finished_at = CASE WHEN attempts < max_attempts AND NOT cancel_requested THEN NULL
                           ELSE now() END,
        updated_at = now()
    WHERE id = $1 AND worker_id = $2 AND status = 'running'
    RETURNING *
)
SELECT failed.* FROM failed
CROSS JOIN LATERAL pg_notify('digestd_job_events', failed.id::text) AS notified;

-- name: cancel_job
-- Cancel a job: a queued one at once, a running one at its next check (cancel_requested). A job
-- that split its channel's backlog into coverage slices stands for them: the slices still queued
-- or running are cancelled with it (the batch itself has ended, so it stays as it was). Each
-- changed job is announced on digestd_job_events, as every job change is.
WITH target AS (
    SELECT id, channel_id FROM digest_jobs WHERE id = $1
),
slices AS (
    UPDATE digest_jobs
    SET cancel_requested = true,
        status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END,
        finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END,
        updated_at = now()
    FROM target
    WHERE digest_jobs.channel_id = target.channel_id AND digest_jobs.kind = 'channel'
      AND digest_jobs.status IN ('queued', 'running') AND digest_jobs.options ? 'slice'
      AND digest_jobs.options #>> '{slice,batch}' = target.id::text
    RETURNING digest_jobs.id
),
cancelled AS (
    UPDATE digest_jobs
    SET cancel_requested = status IN ('queued', 'running'),
        status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END,
        finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END,
        updated_at = now()
    WHERE id = $1
    RETURNING *
),
announced AS (
    SELECT pg_notify('digestd_job_events', changed.id::text)
    FROM (SELECT id FROM cancelled UNION ALL SELECT id FROM slices) AS changed
)
SELECT cancelled.* FROM cancelled, (SELECT count(*) FROM announced) AS notified;

-- name: job_by_id
-- One job.
SELECT * FROM digest_jobs WHERE id = $1;

-- name: jobs_by_ids
-- Jobs by id, for the DataLoader.
SELECT * FROM digest_jobs WHERE id = ANY($1::bigint[]);

-- name: lock_channel_messages
-- Serialize writes to one channel's messages: imports (db/ingest.py takes the same lock, key
-- 1835165555 = "mdgs" and the channel) and a digest's coverage, which would otherwise lock the
-- same rows in different orders and could deadlock.
SELECT pg_advisory_xact_lock(1835165555, ($1::bigint % 2147483647)::integer);

-- name: cover_messages
-- Mark messages ($2 ids at $3 revisions) covered by digest $1, only where the message is still
-- at that revision (one edited meanwhile stays uncovered); returns the ids NOT covered.
WITH covered AS (
    UPDATE messages m
    SET covered_revision = w.revision, covered_by_digest_id = $1
    FROM unnest($2::bigint[], $3::integer[]) AS w(message_id, revision)
    WHERE m.id = w.message_id AND m.revision = w.revision
    RETURNING m.id
)
SELECT w.message_id AS id FROM unnest($2::bigint[]) AS w(message_id)
WHERE NOT EXISTS (SELECT 1 FROM covered c WHERE c.id = w.message_id);

-- name: thread_and_cover_messages
-- `thread_messages` and `cover_messages` in one pass over the rows (each message row rewritten
-- once, not twice): arrays of equal length, one entry per message. A message with a
-- conversation ($4 not null) is threaded unless a digest already threaded it; one with a
-- revision ($5 not null) is covered by digest $1 only where it is still at that revision.
-- Returns the ids to cover that were NOT covered (edited meanwhile).
WITH w AS (
    SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::bigint[], $5::integer[])
        AS w(id, parent_id, conversation_id, revision)
), changed AS (
    UPDATE messages m
    SET parent_id = CASE WHEN w.conversation_id IS NOT NULL AND m.conversation_id IS NULL
                         THEN w.parent_id ELSE m.parent_id END,
        conversation_id = coalesce(m.conversation_id, w.conversation_id),
        covered_revision = CASE WHEN m.revision = w.revision
                                THEN w.revision ELSE m.covered_revision END,
        covered_by_digest_id = CASE WHEN m.revision = w.revision
                                    THEN $1 ELSE m.covered_by_digest_id END
    FROM w
    WHERE m.id = w.id
      AND ((w.conversation_id IS NOT NULL AND m.conversation_id IS NULL)
           OR m.revision = w.revision)
    RETURNING m.id, m.revision = w.revision AS covered
)
SELECT w.id FROM w
WHERE w.revision IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM changed c WHERE c.id = w.id AND c.covered);

-- name: insert_digest_messages
-- Record which messages at which revisions a digest read.
INSERT INTO digest_messages (digest_id, message_id, revision)
SELECT $1, w.message_id, w.revision
FROM unnest($2::bigint[], $3::integer[]) AS w(message_id, revision);

-- name: set_digest_left_out
-- The ranges a digest left out, known once coverage is written.
UPDATE digests SET left_out = $2 WHERE id = $1;

-- name: set_digest_prose
-- The cited overview and highlight sentences of a digest and its citation audit (0004).
UPDATE digests SET overview_sentences = $2, highlight_sentences = $3, citation_audit = $4
WHERE id = $1;

-- name: set_digest_periods
-- The cited overview of each period of a multi-day window (0012).
UPDATE digests SET periods = $2 WHERE id = $1;

-- name: insert_digest
-- Store a validated digest; returns its id and created_at.
INSERT INTO digests (
    channel_id, job_id, title, overview, highlights, coverage, search_keywords,
    signal_quality, signal_reason, first_message_id, last_message_id, window_start, window_end,
    message_count, notable_message_ids, extractor, flags, rejections, catch_up, window_since,
    window_until, window_key)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19,
        $20, $21, $22)
RETURNING id, created_at;

-- name: digest_by_id
-- One digest.
SELECT * FROM digests WHERE id = $1;

-- name: digests_by_ids
-- Digests by id, for the DataLoader.
SELECT * FROM digests WHERE id = ANY($1::bigint[]);

-- name: digest_item_counts
-- Item counts per digest, for the light DigestSummary.
SELECT d.id AS digest_id,
    (SELECT count(*) FROM topics t WHERE t.digest_id = d.id) AS topics,
    (SELECT count(*) FROM decisions x WHERE x.digest_id = d.id) AS decisions,
    (SELECT count(*) FROM action_items x WHERE x.digest_id = d.id) AS action_items,
    (SELECT count(*) FROM open_questions x WHERE x.digest_id = d.id) AS open_questions,
    (SELECT count(*) FROM links x WHERE x.digest_id = d.id) AS links,
    (SELECT count(*) FROM artifacts x WHERE x.digest_id = d.id) AS artifacts,
    (SELECT count(*) FROM knowledge_items x WHERE x.digest_id = d.id) AS knowledge_items
FROM digests d WHERE d.id = ANY($1::bigint[]);

-- name: topics_of_digests
-- Topics of several digests, for the DataLoader.
SELECT * FROM topics WHERE digest_id = ANY($1::bigint[]) ORDER BY digest_id, position;

-- name: decisions_of_digests
-- Decisions of several digests, for the DataLoader.
SELECT * FROM decisions WHERE digest_id = ANY($1::bigint[]) ORDER BY digest_id, position;

-- name: action_items_of_digests
-- Action items of several digests, for the DataLoader.
SELECT * FROM action_items WHERE digest_id = ANY($1::bigint[]) ORDER BY digest_id, position;

-- name: open_questions_of_digests
-- Open questions of several digests, for the DataLoader.
SELECT * FROM open_questions WHERE digest_id = ANY($1::bigint[]) ORDER BY digest_id, position;

-- name: links_of_digests
-- Links of several digests, for the DataLoader.
SELECT * FROM links WHERE digest_id = ANY($1::bigint[]) ORDER BY digest_id, position;

-- name: artifacts_of_digests
-- Artifacts of several digests, with the cited message's external id.
SELECT a.*, m.external_id AS message_external_id
FROM artifacts a JOIN messages m ON m.id = a.message_id
WHERE a.digest_id = ANY($1::bigint[]) ORDER BY a.digest_id, a.position;

-- name: knowledge_items_of_digests
-- Knowledge items of several digests, with the pointed message's external id.
SELECT k.*, m.external_id AS message_external_id
FROM knowledge_items k LEFT JOIN messages m ON m.id = k.message_id
WHERE k.digest_id = ANY($1::bigint[]) ORDER BY k.digest_id, k.position;

-- name: knowledge_items_by_ids
-- Knowledge items by id (for node lookups), with the pointed message's external id.
SELECT k.*, m.external_id AS message_external_id
FROM knowledge_items k LEFT JOIN messages m ON m.id = k.message_id
WHERE k.id = ANY($1::bigint[]);

-- name: load_chunk_result
-- A cached map result by cache key, touching its last use.
UPDATE chunk_results SET last_used_at = now() WHERE cache_key = $1 RETURNING summary;

-- name: save_chunk_result
-- Cache a validated map result.
INSERT INTO chunk_results (cache_key, extractor, summary) VALUES ($1, $2, $3)
ON CONFLICT (cache_key) DO UPDATE SET summary = EXCLUDED.summary, last_used_at = now();

-- name: prune_chunk_results
-- Delete up to $2 cached map results unused for more than $1 days, oldest use first (a digest
-- that needs one again maps its chunk again). Returns how many were deleted.
WITH old AS (
    SELECT cache_key FROM chunk_results
    WHERE last_used_at < now() - make_interval(secs => $1::float8 * 86400)
    ORDER BY last_used_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM chunk_results WHERE cache_key IN (SELECT cache_key FROM old) RETURNING 1
)
SELECT count(*) FROM gone;

-- name: database_ready
-- Readiness: the database answers and is migrated.
SELECT max(version) AS version FROM schema_migrations;

-- name: insert_topic
-- One topic of a digest.
INSERT INTO topics (digest_id, position, title, summary, message_ids) VALUES ($1, $2, $3, $4, $5);

-- name: insert_decision
-- One decision of a digest.
INSERT INTO decisions (digest_id, position, text, message_ids, flags) VALUES ($1, $2, $3, $4, $5);

-- name: insert_action_item
-- One action item of a digest.
INSERT INTO action_items (digest_id, position, text, owner, message_ids, flags)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: insert_open_question
-- One open question of a digest.
INSERT INTO open_questions (digest_id, position, text, asked_by, message_ids, flags)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: insert_link
-- One link of a digest.
INSERT INTO links (digest_id, position, url, description, message_ids) VALUES ($1, $2, $3, $4, $5);

-- name: insert_artifact
-- One artifact of a digest, pointing into a message.
INSERT INTO artifacts (digest_id, position, kind, title, language, message_id, char_start,
                       char_end, match_kind, message_revision)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);

-- name: insert_knowledge_item
-- One knowledge item of a digest; returns its id so links between items can be resolved.
INSERT INTO knowledge_items (digest_id, channel_id, position, item_key, kind, title, content,
                             message_id, char_start, char_end, match_kind, quote, message_ids,
                             context_version, entity_refs, flags, message_revision)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
        coalesce($17::integer, 1))
RETURNING id;

-- name: link_knowledge_item
-- Resolve a knowledge item's supersedes / conflicts-with links once all items have ids.
UPDATE knowledge_items SET supersedes_id = $2, conflicts_with_id = $3 WHERE id = $1;

-- name: lock_channel
-- Serialize the coverage writes of one channel during a digest's store transaction.
SELECT id FROM channels WHERE id = $1 FOR UPDATE;

-- name: latest_digest_of_channel
-- The newest digest of a channel.
SELECT * FROM digests WHERE channel_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1;

-- name: latest_digests_of_channels
-- The newest digest of each of several channels (the order of the `digests` list: created_at,
-- then id), for the DataLoader of `Channel.lastDigest`: one statement for a page of channels.
SELECT DISTINCT ON (channel_id) *
FROM digests
WHERE channel_id = ANY($1::bigint[])
ORDER BY channel_id, created_at DESC, id DESC;

-- Documents (0002). The `documents` keyset list is composed in db/pages.py (DOCUMENTS).

-- name: insert_document
-- Store an ingested document, or find the stored one with the same canonical text (the hash is
-- unique); returns the row and whether it was inserted now. A new document's near_duplicate_of
-- is the earliest stored one whose fingerprint ($11) agrees on at least $12 of its positions
-- (0015; a scan of the fingerprints, each 128 integers compared in place).
WITH inserted AS (
    INSERT INTO documents (source_text_hash, canonical_text, content_type, title, source_url,
                           page_spans, warnings, author, publisher, published_at, minhash,
                           near_duplicate_of)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::integer[], (
        SELECT d.id FROM documents d
        WHERE $11::integer[] IS NOT NULL AND d.minhash IS NOT NULL AND d.source_text_hash <> $1
          AND (SELECT count(*) FROM unnest(d.minhash, $11::integer[]) AS pair (a, b)
               WHERE pair.a = pair.b) >= $12
        ORDER BY d.id
        LIMIT 1))
    ON CONFLICT ON CONSTRAINT documents_source_text_hash DO NOTHING
    RETURNING *
)
SELECT inserted.*, true AS created FROM inserted
UNION ALL
SELECT d.*, false AS created FROM documents d
WHERE d.source_text_hash = $1 AND NOT EXISTS (SELECT 1 FROM inserted);

-- name: backfill_document
-- A document stored before it had a fingerprint (before 0015), ingested again: fill in what it
-- lacks (metadata only where NULL, the first ingest's values are kept), its fingerprint, and
-- the earliest EARLIER document it near-duplicates (never a later one: no two documents point
-- at each other). Returns the row, or nothing when it already had a fingerprint.
UPDATE documents SET
    author = COALESCE(author, $2),
    publisher = COALESCE(publisher, $3),
    published_at = COALESCE(published_at, $4),
    minhash = $5::integer[],
    near_duplicate_of = (
        SELECT d.id FROM documents d
        WHERE d.id < $1 AND d.minhash IS NOT NULL
          AND (SELECT count(*) FROM unnest(d.minhash, $5::integer[]) AS pair (a, b)
               WHERE pair.a = pair.b) >= $6
        ORDER BY d.id
        LIMIT 1)
WHERE id = $1 AND minhash IS NULL AND $5::integer[] IS NOT NULL
RETURNING *, false AS created;

-- name: document_by_id
-- One document, with its canonical text.
SELECT * FROM documents WHERE id = $1;

-- name: documents_by_ids
-- Documents by id, for the DataLoader.
SELECT * FROM documents WHERE id = ANY($1::bigint[]);

-- name: insert_document_job
-- Queue a digest of a document for a query unless one is queued or running (partial unique
-- index on document and query hash).
INSERT INTO digest_jobs (kind, document_id, options, max_attempts)
VALUES ('document', $1, $2, $3)
ON CONFLICT (document_id, (options ->> 'query_hash'))
    WHERE status IN ('queued', 'running') AND kind = 'document'
DO NOTHING
RETURNING *;

-- name: active_document_job
-- The queued or running job of a document for the query hash of options $2, if any.
SELECT * FROM digest_jobs
WHERE document_id = $1 AND kind = 'document' AND options ->> 'query_hash' = $2::jsonb ->> 'query_hash'
  AND status IN ('queued', 'running');

-- name: document_digest_by_cache_key
-- The cache lookup of a document job: a stored digest with this key, if any, touching its last
-- use (the retention pass prunes the digests unused longest).
UPDATE document_digests SET last_used_at = now() WHERE cache_key = $1 RETURNING id;

-- name: prune_document_digests
-- Delete up to $2 document digests unused (neither written nor served from the cache) for more
-- than $1 days, oldest use first; a job that pointed to one keeps its end state and shows no
-- digest. Rows another tick is deleting are skipped. Returns how many were deleted.
WITH old AS (
    SELECT id FROM document_digests
    WHERE last_used_at < now() - make_interval(secs => $1::float8 * 86400)
    ORDER BY last_used_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM document_digests WHERE id IN (SELECT id FROM old) RETURNING 1
)
SELECT count(*) FROM gone;

-- name: insert_document_digest
-- Store a validated digest; a concurrent job that stored the same key first wins and its id is
-- returned instead (the digest is a deterministic function of the key's inputs).
WITH inserted AS (
    INSERT INTO document_digests (document_id, job_id, query, query_hash, cache_key, payload,
                                  summarizer, evidence_mode, original_tokens, final_tokens,
                                  tokens_estimated, warnings, duration_ms, archived)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
    ON CONFLICT ON CONSTRAINT document_digests_cache_key DO NOTHING
    RETURNING id
)
SELECT id, true AS created FROM inserted
UNION ALL
SELECT id, false AS created FROM document_digests
WHERE cache_key = $5 AND NOT EXISTS (SELECT 1 FROM inserted);

-- name: document_digests_by_ids
-- Document digests by id, for the DataLoader.
SELECT * FROM document_digests WHERE id = ANY($1::bigint[]);

-- name: latest_digests_of_documents
-- The newest digests of several documents (at most $2 each), for the DataLoader.
SELECT x.* FROM unnest($1::bigint[]) AS wanted(document_id)
CROSS JOIN LATERAL (
    SELECT * FROM document_digests g
    WHERE g.document_id = wanted.document_id
    ORDER BY g.created_at DESC, g.id DESC
    LIMIT $2
) x;

-- name: job_queue_summary
-- Jobs per kind and status, with the age of the oldest due queued job, for /metrics. Counted
-- by Postgres at scrape time, so every worker on every machine is in the figures.
SELECT kind, status, count(*) AS jobs,
       coalesce(extract(epoch FROM now() - min(run_after)
                FILTER (WHERE status = 'queued' AND run_after <= now())), 0)::float8
           AS oldest_due_seconds
FROM digest_jobs
GROUP BY kind, status;

-- name: insert_report_job
-- Queue a report unless one for the same request (options ->> 'request_hash') is queued or
-- running (partial unique index of 0005).
INSERT INTO digest_jobs (kind, options, max_attempts)
VALUES ('report', $1, $2)
ON CONFLICT ((options ->> 'request_hash'))
    WHERE status IN ('queued', 'running') AND kind = 'report'
DO NOTHING
RETURNING *;

-- name: active_report_job
-- The queued or running report job for the request hash of options $1, if any.
SELECT * FROM digest_jobs
WHERE kind = 'report' AND options ->> 'request_hash' = $1::jsonb ->> 'request_hash'
  AND status IN ('queued', 'running');

-- name: report_by_cache_key
-- The cache lookup of a report job: the stored report with this key, if any.
SELECT id FROM reports WHERE cache_key = $1;

-- name: insert_report
-- Store a report; a concurrent job that stored the same key first wins and its id is returned
-- instead (the report is a deterministic function of the key's inputs).
WITH inserted AS (
    INSERT INTO reports (job_id, question, request, cache_key, title, sections, sources,
                         markdown, audit, writer, fidelity)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
    ON CONFLICT ON CONSTRAINT reports_cache_key DO NOTHING
    RETURNING id
)
SELECT id FROM inserted
UNION ALL
SELECT id FROM reports WHERE cache_key = $4
LIMIT 1;

-- name: reports_by_ids
-- Reports by id (the Report node's loader).
SELECT * FROM reports WHERE id = ANY($1::bigint[]);

-- name: report_digest_items
-- The claims of a channel's digests whose window overlaps [$2, $3) (NULL: open), as report
-- evidence: decisions, action items, open questions, topic summaries and synthesized knowledge
-- items, each with the external ids of the messages it cites; newest digest first.
WITH chosen AS (
    SELECT id, created_at FROM digests
    WHERE channel_id = $1
      AND ($2::timestamptz IS NULL OR window_end >= $2::timestamptz)
      AND ($3::timestamptz IS NULL OR window_start < $3::timestamptz)
)
SELECT c.id AS digest_id, c.created_at, i.kind, i.position, i.text, i.message_ids
FROM chosen c
JOIN LATERAL (
    SELECT 'decision' AS kind, position, text, message_ids FROM decisions WHERE digest_id = c.id
    UNION ALL
    SELECT 'action_item', position, text, message_ids FROM action_items WHERE digest_id = c.id
    UNION ALL
    SELECT 'open_question', position, text, message_ids FROM open_questions WHERE digest_id = c.id
    UNION ALL
    SELECT 'topic', position, summary, message_ids FROM topics
    WHERE digest_id = c.id AND summary <> ''
    UNION ALL
    SELECT 'knowledge', position, content, message_ids FROM knowledge_items
    WHERE digest_id = c.id AND content IS NOT NULL
) i ON true
ORDER BY c.created_at DESC, c.id DESC, i.kind, i.position;

-- name: report_window_messages
-- A report's read of one channel: its NEWEST $4 messages with $2 <= ts < $3 (either bound may
-- be NULL), current revisions, returned in conversation order. Newest, because the cap should
-- cut what a question is least likely about; walked backwards on messages_channel_ts.
SELECT n.* FROM (
    SELECT m.id, m.external_id, m.author, m.ts, m.reply_to, m.normalized_text, m.revision
    FROM messages m
    WHERE m.channel_id = $1
      AND ($2::timestamptz IS NULL OR m.ts >= $2::timestamptz)
      AND ($3::timestamptz IS NULL OR m.ts < $3::timestamptz)
    ORDER BY m.ts DESC, m.id DESC
    LIMIT $4
) n
ORDER BY n.ts, n.id;

-- name: report_window_left_out
-- What a report's capped read left out: count and bounds of the channel's messages with
-- ts >= $4 (NULL: no start) before (ts, id) ($2, $3), the oldest read; no row when none.
WITH rest AS NOT MATERIALIZED (
    SELECT m.external_id, m.ts, m.id FROM messages m
    WHERE m.channel_id = $1 AND (m.ts, m.id) < ($2::timestamptz, $3::bigint)
      AND ($4::timestamptz IS NULL OR m.ts >= $4::timestamptz)
)
SELECT (SELECT count(*) FROM rest) AS message_count,
       f.external_id AS first_message_id, f.ts AS first_at,
       l.external_id AS last_message_id, l.ts AS last_at
FROM (SELECT * FROM rest ORDER BY ts, id LIMIT 1) f,
     (SELECT * FROM rest ORDER BY ts DESC, id DESC LIMIT 1) l;

-- Conversations (0006).

-- name: messages_before
-- Up to $4 messages of channel $1 before (ts, id) ($2, $3), the latest ones, in time order:
-- the context a digest threads its messages against.
SELECT * FROM (
    SELECT m.id, m.external_id, m.author, m.ts, m.reply_to, m.normalized_text, m.revision,
           m.conversation_id
    FROM messages m
    WHERE m.channel_id = $1 AND (m.ts, m.id) < ($2::timestamptz, $3::bigint)
    ORDER BY m.ts DESC, m.id DESC
    LIMIT $4
) before ORDER BY ts, id;

-- name: message_conversations
-- The conversation of each message (NULL: not threaded yet).
SELECT id, conversation_id FROM messages WHERE id = ANY($1::bigint[]);

-- name: conversations_by_ids
-- Conversations by id, with their state (the Conversation node's loader).
SELECT * FROM conversation_states WHERE id = ANY($1::bigint[]);

-- name: insert_conversations
-- New conversations of one channel ($1), rows as JSON ($2, each with its `position`), in one
-- statement instead of a round trip each; their ids in position order (the existing one where a
-- first message already opens one). Identities are drawn in position order, as a row-by-row
-- insert would draw them.
WITH new AS (
    SELECT * FROM jsonb_to_recordset($2::jsonb) AS r(
        position integer, root_message_id bigint, title text, title_message_id bigint,
        title_revision integer, title_char_start integer, title_char_end integer,
        participants text[], message_count integer, answered boolean, first_ts timestamptz,
        last_ts timestamptz)
), inserted AS (
    INSERT INTO conversations (channel_id, root_message_id, title, title_message_id,
                               title_revision, title_char_start, title_char_end, participants,
                               message_count, answered, first_ts, last_ts)
    SELECT $1, root_message_id, title, title_message_id, title_revision, title_char_start,
           title_char_end, participants, message_count, answered, first_ts, last_ts
    FROM new ORDER BY position
    ON CONFLICT ON CONSTRAINT conversations_root DO UPDATE SET updated_at = now()
    RETURNING id, root_message_id
)
SELECT inserted.id FROM new JOIN inserted USING (root_message_id) ORDER BY new.position;

-- name: extend_conversation
-- A stored conversation after new messages joined it: its new totals.
UPDATE conversations
SET participants = $2, message_count = $3, first_ts = $4, last_ts = $5, answered = $6,
    updated_at = now()
WHERE id = $1;

-- name: thread_messages
-- Record each message's parent and conversation (arrays of equal length), once: a message a
-- digest already threaded keeps its place.
UPDATE messages m
SET parent_id = t.parent_id, conversation_id = t.conversation_id
FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS t(id, parent_id, conversation_id)
WHERE m.id = t.id AND m.conversation_id IS NULL;

-- Channel items (0008).

-- name: open_channel_items
-- The channel's items still in their first state (open, in force, current), the $2 most recent
-- of each kind: what a digest links its items against. Per kind, so a busy channel's knowledge
-- items never push its older open questions out of reach. Each probe is one index range.
SELECT i.* FROM (
    VALUES ('question', 'open'), ('action_item', 'open'), ('decision', 'in_force'),
           ('knowledge', 'current')
) AS k(kind, status)
CROSS JOIN LATERAL (
    SELECT * FROM channel_items c
    WHERE c.channel_id = $1 AND c.kind = k.kind AND c.status = k.status
    ORDER BY c.created_at DESC, c.id DESC
    LIMIT $2
) AS i
ORDER BY i.created_at DESC, i.id DESC;

-- name: digest_item_rows
-- The rows of digest $1's questions, action items, decisions and knowledge items, by kind and
-- position: what a mention of a channel item points at.
SELECT 'question' AS kind, position, id FROM open_questions WHERE digest_id = $1
UNION ALL
SELECT 'action_item', position, id FROM action_items WHERE digest_id = $1
UNION ALL
SELECT 'decision', position, id FROM decisions WHERE digest_id = $1
UNION ALL
SELECT 'knowledge', position, id FROM knowledge_items WHERE digest_id = $1;

-- name: insert_channel_item
INSERT INTO channel_items (channel_id, kind, status, text, owner, conversation_id, message_ids,
                           said_at, first_digest_id, last_digest_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
RETURNING id;

-- name: mention_channel_items
-- Digest rows that speak of items (arrays of equal length); the items' last digest moves on.
WITH mentioned AS (
    INSERT INTO channel_item_mentions (item_id, digest_id, row_id, position)
    SELECT t.item_id, $2, t.row_id, t.position
    FROM unnest($1::bigint[], $3::bigint[], $4::int[]) AS t(item_id, row_id, position)
    ON CONFLICT DO NOTHING
    RETURNING item_id
)
UPDATE channel_items SET last_digest_id = $2, updated_at = now()
WHERE id IN (SELECT item_id FROM mentioned);

-- name: change_channel_item_status
-- An item's new state, only from the state the change was derived from (a concurrent change
-- wins; the caller then records nothing). Returns the id when changed.
UPDATE channel_items SET status = $3, updated_at = now()
WHERE id = $1 AND status = $2
RETURNING id;

-- name: insert_channel_item_event
INSERT INTO channel_item_events (item_id, from_status, to_status, at, evidence_ids,
                                 pointer_message_id, pointer_revision, pointer_char_start,
                                 pointer_char_end, pointer_quote, digest_id, related_item_id,
                                 reason)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13);

-- name: open_item_counts_of_channels
-- What still waits in each of several channels (questions and action items OPEN) and the
-- decisions IN_FORCE, for the DataLoader of `Channel.openItemCounts`; a channel with none of
-- them has no row.
SELECT channel_id,
    count(*) FILTER (WHERE kind = 'question' AND status = 'open') AS open_questions,
    count(*) FILTER (WHERE kind = 'action_item' AND status = 'open') AS open_action_items,
    count(*) FILTER (WHERE kind = 'decision' AND status = 'in_force') AS decisions_in_force
FROM channel_items
WHERE channel_id = ANY($1::bigint[]) AND status IN ('open', 'in_force')
  AND kind IN ('question', 'action_item', 'decision')
GROUP BY channel_id;

-- name: channel_items_by_ids
-- Channel items by id (the TrackedItem node's loader).
SELECT * FROM channel_items WHERE id = ANY($1::bigint[]);

-- name: events_of_channel_items
-- The history of items, oldest first, with the external id of each pointer's message.
SELECT e.*, m.external_id AS pointer_external_id
FROM channel_item_events e
LEFT JOIN messages m ON m.id = e.pointer_message_id
WHERE e.item_id = ANY($1::bigint[])
ORDER BY e.item_id, e.at, e.id;

-- name: mentions_of_channel_items
-- The latest 100 digests that mention each of several items, oldest first (owner_total: how
-- many mentions the item has in all; keep 100 equal to schema/bounded_lists.py's
-- MAX_ITEM_MENTIONS).
SELECT item_id, digest_id, row_id, position, created_at, owner_total FROM (
    SELECT item_id, digest_id, row_id, position, created_at,
           count(*) OVER (PARTITION BY item_id) AS owner_total,
           row_number() OVER (PARTITION BY item_id ORDER BY digest_id DESC, position DESC) AS n
    FROM channel_item_mentions WHERE item_id = ANY($1::bigint[])
) ranked WHERE n <= 100
ORDER BY item_id, digest_id, position;
-- name: upsert_entities
-- A digest's entities of one channel ($1), digest $2, rows as JSON ($3): new keys are added,
-- known ones get the mentions added, new spellings and versions (at most 10 each, first seen
-- first), a more specific kind than `name`, and a wider first/last seen.
INSERT INTO entities AS e (channel_id, key, name, kind, aliases, versions, mention_count,
                           last_digest_id, first_seen, last_seen)
SELECT $1, r.key, r.name, r.kind, r.aliases, r.versions, r.mentions, $2, r.first_seen, r.last_seen
FROM jsonb_to_recordset($3::jsonb) AS r(key text, name text, kind text, aliases text[],
                                        versions text[], mentions integer,
                                        first_seen timestamptz, last_seen timestamptz)
ON CONFLICT ON CONSTRAINT entities_channel_key DO UPDATE SET
    mention_count = e.mention_count + EXCLUDED.mention_count,
    last_digest_id = EXCLUDED.last_digest_id,
    kind = CASE WHEN e.kind = 'name' THEN EXCLUDED.kind ELSE e.kind END,
    aliases = ARRAY(
        SELECT a FROM unnest(e.aliases || EXCLUDED.aliases) WITH ORDINALITY AS u(a, o)
        GROUP BY a ORDER BY min(o) LIMIT 10),
    versions = ARRAY(
        SELECT v FROM unnest(e.versions || EXCLUDED.versions) WITH ORDINALITY AS u(v, o)
        GROUP BY v ORDER BY min(o) LIMIT 10),
    first_seen = least(e.first_seen, EXCLUDED.first_seen),
    last_seen = greatest(e.last_seen, EXCLUDED.last_seen)
RETURNING e.id, e.key;

-- name: insert_entity_mentions
-- The messages of digest $1 mentioning each entity: JSON rows {entity_id, message_ids}.
INSERT INTO entity_mentions (entity_id, digest_id, message_ids)
SELECT r.entity_id, $1, r.message_ids
FROM jsonb_to_recordset($2::jsonb) AS r(entity_id bigint, message_ids bigint[]);

-- name: insert_entity_item_refs
-- The items of digest $1 that name each entity: (entity, item kind, position) as arrays.
INSERT INTO entity_item_refs (entity_id, digest_id, item_kind, position)
SELECT u.entity_id, $1, u.item_kind, u.position
FROM unnest($2::bigint[], $3::text[], $4::integer[]) AS u(entity_id, item_kind, position)
ON CONFLICT DO NOTHING;

-- name: upsert_topic_profiles
-- A digest's recurring topics of one channel ($1), rows as JSON ($2): new keys are added,
-- known ones get the mentions added and a wider first/last seen; the first title stays.
INSERT INTO topic_profiles AS t (channel_id, key, title, mention_count, first_seen, last_seen)
SELECT $1, r.key, r.title, r.mentions, r.first_seen, r.last_seen
FROM jsonb_to_recordset($2::jsonb) AS r(key text, title text, mentions integer,
                                        first_seen timestamptz, last_seen timestamptz)
ON CONFLICT ON CONSTRAINT topic_profiles_channel_key DO UPDATE SET
    mention_count = t.mention_count + EXCLUDED.mention_count,
    first_seen = least(t.first_seen, EXCLUDED.first_seen),
    last_seen = greatest(t.last_seen, EXCLUDED.last_seen)
RETURNING t.id, t.key;

-- name: insert_topic_profile_digests
-- Where each profile appears in digest $1: JSON rows {profile_id, topic_positions,
-- message_ids}; the conversations are those of the messages (threaded in this transaction).
INSERT INTO topic_profile_digests (profile_id, digest_id, topic_positions, message_ids,
                                   conversation_ids)
SELECT r.profile_id, $1, r.topic_positions, r.message_ids,
       ARRAY(SELECT DISTINCT m.conversation_id FROM messages m
             WHERE m.id = ANY(r.message_ids) AND m.conversation_id IS NOT NULL
             ORDER BY m.conversation_id)
FROM jsonb_to_recordset($2::jsonb) AS r(profile_id bigint, topic_positions integer[],
                                        message_ids bigint[]);

-- name: insert_topic_profile_items
-- The items of digest $1 belonging to each profile: (profile, item kind, position) as arrays.
INSERT INTO topic_profile_items (profile_id, digest_id, item_kind, position)
SELECT u.profile_id, $1, u.item_kind, u.position
FROM unnest($2::bigint[], $3::text[], $4::integer[]) AS u(profile_id, item_kind, position)
ON CONFLICT DO NOTHING;

-- name: entities_by_ids
-- Entities by id, for the DataLoader.
SELECT * FROM entities WHERE id = ANY($1::bigint[]);

-- name: topic_profiles_by_ids
-- Topic profiles by id, for the DataLoader.
SELECT * FROM topic_profiles WHERE id = ANY($1::bigint[]);

-- name: entity_item_refs_of
-- The items naming each of several entities, the 200 of the newest digests first (owner_total:
-- how many there are in all).
SELECT owner_id, digest_id, item_kind, position, owner_total FROM (
    SELECT entity_id AS owner_id, digest_id, item_kind, position,
           count(*) OVER (PARTITION BY entity_id) AS owner_total,
           row_number() OVER (PARTITION BY entity_id
                              ORDER BY digest_id DESC, item_kind, position) AS n
    FROM entity_item_refs WHERE entity_id = ANY($1::bigint[])
) ranked WHERE n <= 200 ORDER BY owner_id, digest_id DESC, item_kind, position;

-- name: topic_profile_items_of
-- The items of each of several topic profiles, the 200 of the newest digests first
-- (owner_total: how many there are in all).
SELECT owner_id, digest_id, item_kind, position, owner_total FROM (
    SELECT profile_id AS owner_id, digest_id, item_kind, position,
           count(*) OVER (PARTITION BY profile_id) AS owner_total,
           row_number() OVER (PARTITION BY profile_id
                              ORDER BY digest_id DESC, item_kind, position) AS n
    FROM topic_profile_items WHERE profile_id = ANY($1::bigint[])
) ranked WHERE n <= 200 ORDER BY owner_id, digest_id DESC, item_kind, position;

-- name: entity_digests_of
-- The 100 latest digests mentioning each of several entities (owner_total: how many in all),
-- with the first 1,000 mentioning
-- messages (message_count: how many there are in all; keep 1,000 equal to
-- schema/entity_types.py's MAX_APPEARANCE_MESSAGE_IDS).
SELECT owner_id, digest_id, message_ids, message_count, conversation_ids, created_at, owner_total FROM (
    SELECT em.entity_id AS owner_id, em.digest_id, d.created_at,
           ARRAY(SELECT m.external_id FROM messages m WHERE m.id = ANY(em.message_ids)
                 ORDER BY m.ts, m.id LIMIT 1000) AS message_ids,
           cardinality(em.message_ids) AS message_count,
           '{}'::bigint[] AS conversation_ids,
           count(*) OVER (PARTITION BY em.entity_id) AS owner_total,
           row_number() OVER (PARTITION BY em.entity_id ORDER BY d.created_at DESC, d.id DESC) AS n
    FROM entity_mentions em JOIN digests d ON d.id = em.digest_id
    WHERE em.entity_id = ANY($1::bigint[])
) ranked WHERE n <= 100 ORDER BY owner_id, created_at DESC, digest_id DESC;

-- name: topic_profile_digests_of
-- The 100 latest digests of each of several topic profiles (owner_total: how many in all),
-- with the first 1,000 of its
-- messages there (message_count: how many in all) and its conversations there.
SELECT owner_id, digest_id, message_ids, message_count, conversation_ids, created_at, owner_total FROM (
    SELECT t.profile_id AS owner_id, t.digest_id, d.created_at,
           ARRAY(SELECT m.external_id FROM messages m WHERE m.id = ANY(t.message_ids)
                 ORDER BY m.ts, m.id LIMIT 1000) AS message_ids,
           cardinality(t.message_ids) AS message_count,
           t.conversation_ids,
           count(*) OVER (PARTITION BY t.profile_id) AS owner_total,
           row_number() OVER (PARTITION BY t.profile_id ORDER BY d.created_at DESC, d.id DESC) AS n
    FROM topic_profile_digests t JOIN digests d ON d.id = t.digest_id
    WHERE t.profile_id = ANY($1::bigint[])
) ranked WHERE n <= 100 ORDER BY owner_id, created_at DESC, digest_id DESC;

-- name: topic_profile_trends
-- Distinct messages of each of several profiles per ISO week of their time, oldest week first
-- (a message read by two digests counts once).
SELECT t.profile_id AS owner_id, to_char(m.ts AT TIME ZONE 'UTC', 'IYYY-"W"IW') AS week,
       count(DISTINCT m.id)::integer AS mentions
FROM topic_profile_digests t
CROSS JOIN LATERAL unnest(t.message_ids) AS u(message_id)
JOIN messages m ON m.id = u.message_id
WHERE t.profile_id = ANY($1::bigint[])
GROUP BY 1, 2 ORDER BY 1, 2;

-- name: entity_trends
-- Distinct messages mentioning each of several entities per ISO week of their time, oldest
-- week first (a message read by two digests counts once).
SELECT e.entity_id AS owner_id, to_char(m.ts AT TIME ZONE 'UTC', 'IYYY-"W"IW') AS week,
       count(DISTINCT m.id)::integer AS mentions
FROM entity_mentions e
CROSS JOIN LATERAL unnest(e.message_ids) AS u(message_id)
JOIN messages m ON m.id = u.message_id
WHERE e.entity_id = ANY($1::bigint[])
GROUP BY 1, 2 ORDER BY 1, 2;

-- Schedules (db/schedules.py; migration 0009). The tick's statements run in one transaction:
-- due_schedules locks the due rows, then per row the job is queued (insert_channel_job) and
-- record_schedule_run moves the schedule to its next slot.

-- name: database_now
-- The database's clock: schedules are due by it, never by a process's clock.
SELECT now();

-- name: insert_schedule
-- A new schedule of a channel with its first slot.
INSERT INTO schedules (channel_id, cron, timezone, next_run_at)
VALUES ($1, $2, $3, $4)
RETURNING *;

-- name: schedules_by_ids
-- Schedules by id (the Schedule node's loader).
SELECT * FROM schedules WHERE id = ANY($1::bigint[]);

-- name: schedule_for_update
-- One schedule, locked until the transaction ends (a resume recomputes its next slot).
SELECT * FROM schedules WHERE id = $1 FOR UPDATE;

-- name: pause_schedule
-- Pause: never due until resumed.
UPDATE schedules SET paused = true WHERE id = $1 RETURNING *;

-- name: resume_schedule
-- Resume a paused schedule from the slot $2 (the first after now()); a running one is unchanged.
UPDATE schedules
SET next_run_at = CASE WHEN paused THEN $2 ELSE next_run_at END, paused = false
WHERE id = $1
RETURNING *;

-- name: delete_schedule
-- Delete a schedule (its runs go with it); the row as it was.
DELETE FROM schedules WHERE id = $1 RETURNING *;

-- name: due_schedules
-- The schedules whose slot has come by the database's clock, oldest slot first, locked for
-- this transaction. SKIP LOCKED: a schedule another worker is firing right now is left to it,
-- and once that worker commits, its next_run_at is past now() and the row no longer matches
-- (READ COMMITTED re-checks the WHERE on the committed row), so each slot fires once.
SELECT id, channel_id, cron, timezone, next_run_at, now() AS database_now
FROM schedules
WHERE NOT paused AND next_run_at <= now()
ORDER BY next_run_at, id
LIMIT $1
FOR UPDATE SKIP LOCKED;

-- name: record_schedule_run
-- A firing of schedule $1 for slot $2 by process $6: its run row, and the schedule moved to its
-- next slot $3 with the job $4 it queued ($5) or joined; or, skipped ($7: the channel had no
-- new message), no job and the last job kept. The unique (schedule_id, slot) refuses a second
-- firing of the same slot whatever happens above it.
WITH run AS (
    INSERT INTO schedule_runs (schedule_id, slot, job_id, job_created, fired_by, skipped)
    VALUES ($1, $2, $4, $5, $6, $7)
    RETURNING schedule_id
)
UPDATE schedules s
SET next_run_at = $3, last_run_at = now(), last_job_id = coalesce($4, s.last_job_id)
FROM run
WHERE s.id = run.schedule_id;

-- name: channel_has_new_messages
-- Whether channel $1 has a message no digest covers at its current revision (the partial index
-- messages_uncovered answers it without reading the covered ones).
SELECT EXISTS (
    SELECT 1 FROM messages
    WHERE channel_id = $1 AND covered_revision IS DISTINCT FROM revision
);

-- name: lock_channel_for_schedules
-- Lock channel $1 for the rest of the transaction (a schedule create counts the channel's
-- schedules under it); no row when there is no such channel.
SELECT id FROM channels WHERE id = $1 FOR NO KEY UPDATE;

-- name: channel_schedule_count
-- How many schedules channel $1 has, paused ones included.
SELECT count(*) FROM schedules WHERE channel_id = $1;

-- name: prune_schedule_runs
-- Delete up to $2 runs fired more than $1 days ago that queued nothing: skipped ones, and ones
-- whose job ended without a digest (a quiet channel's "no new messages"). Rows another tick is
-- deleting are skipped, not waited for. Returns how many were deleted.
WITH old AS (
    SELECT r.id FROM schedule_runs r
    LEFT JOIN digest_jobs j ON j.id = r.job_id
    WHERE r.fired_at < now() - make_interval(days => $1::int)
      AND (r.skipped OR (j.status = 'succeeded' AND j.digest_id IS NULL))
    ORDER BY r.fired_at
    LIMIT $2
    FOR UPDATE OF r SKIP LOCKED
), gone AS (
    DELETE FROM schedule_runs WHERE id IN (SELECT id FROM old) RETURNING 1
)
SELECT count(*) FROM gone;

-- name: pause_unfireable_schedule
-- A due schedule whose next slot cannot be computed any more (its time zone vanished from the
-- system's zone data): paused rather than found due again at every tick.
UPDATE schedules SET paused = true WHERE id = $1;

-- Activity (db/activity.py): a channel's days for the console's charts.

-- name: channel_activity
-- Channel $1 per UTC day, for the $2 days ending with the day of its newest message, oldest
-- first: every day (zero counts too; no row when the channel has no messages), its messages,
-- the conversations they belong to, and the digests that read at least one of them (the
-- digests are the channel's, so digest_messages is read by its primary key).
WITH last_day AS (
    SELECT (max(ts) AT TIME ZONE 'UTC')::date AS day FROM messages WHERE channel_id = $1
), bounds AS (
    SELECT day - ($2::int - 1) AS first_day, day AS last_day,
           ((day - ($2::int - 1))::timestamp AT TIME ZONE 'UTC') AS since
    FROM last_day WHERE day IS NOT NULL
), days AS (
    SELECT g::date AS day FROM bounds,
    generate_series(bounds.first_day::timestamp, bounds.last_day::timestamp, interval '1 day') g
), message_days AS (
    SELECT (m.ts AT TIME ZONE 'UTC')::date AS day, count(*)::integer AS message_count,
           count(DISTINCT m.conversation_id)::integer AS conversation_count
    FROM messages m, bounds
    WHERE m.channel_id = $1 AND m.ts >= bounds.since
    GROUP BY 1
), digest_days AS (
    SELECT (m.ts AT TIME ZONE 'UTC')::date AS day,
           count(DISTINCT dm.digest_id)::integer AS digest_count
    FROM digests d
    JOIN digest_messages dm ON dm.digest_id = d.id
    JOIN messages m ON m.id = dm.message_id
    CROSS JOIN bounds
    WHERE d.channel_id = $1 AND m.ts >= bounds.since
    GROUP BY 1
)
SELECT days.day, coalesce(md.message_count, 0) AS message_count,
       coalesce(md.conversation_count, 0) AS conversation_count,
       coalesce(dd.digest_count, 0) AS digest_count
FROM days
LEFT JOIN message_days md ON md.day = days.day
LEFT JOIN digest_days dd ON dd.day = days.day
ORDER BY days.day;

-- name: channel_row_for_delete
-- Channel $1 (id, name, server) locked for its deletion: first, as a digest's store
-- transaction locks it first, so the two never wait for each other in a cycle. New messages,
-- digests and jobs of the channel wait for the delete to end (and then find no channel).
SELECT c.id, c.name, c.server_id FROM channels c WHERE c.id = $1 FOR UPDATE;

-- name: channel_row_for_digest_delete
-- Channel $1 locked while one of its digests is deleted: a digest's store transaction waits,
-- an import does not (its inserts only need KEY SHARE). Returns the id.
SELECT c.id FROM channels c WHERE c.id = $1 FOR NO KEY UPDATE;

-- name: digest_row_for_delete
-- Digest $1 (id, channel, catch-up or not) locked for its deletion.
SELECT d.id, d.channel_id, d.catch_up FROM digests d WHERE d.id = $1 FOR UPDATE;

-- name: digest_channel
-- The channel of digest $1 (no lock: the deletion locks the channel, then the digest).
SELECT d.channel_id FROM digests d WHERE d.id = $1;

-- name: lock_channel_active_jobs
-- The queued and running jobs of channel $1, locked: a worker's claim skips locked rows
-- (SKIP LOCKED), so none of them starts while a deletion decides. Returns id and status.
SELECT j.id, j.status FROM digest_jobs j
WHERE j.channel_id = $1 AND j.status IN ('queued', 'running')
ORDER BY j.id
FOR UPDATE;

-- name: channel_data_counts
-- What deleting channel $1 removes: its messages, digests, schedules and jobs.
SELECT (SELECT count(*) FROM messages WHERE channel_id = $1) AS messages,
       (SELECT count(*) FROM digests WHERE channel_id = $1) AS digests,
       (SELECT count(*) FROM schedules WHERE channel_id = $1) AS schedules,
       (SELECT count(*) FROM digest_jobs WHERE channel_id = $1) AS jobs;

-- name: delete_channel
-- Delete channel $1; its messages, revisions, digests and their items, conversations, channel
-- items, entities, topic profiles, schedules and jobs go with it (ON DELETE CASCADE).
DELETE FROM channels WHERE id = $1;

-- name: delete_server_if_empty
-- Delete server $1 when no channel is left in it.
DELETE FROM servers s WHERE s.id = $1 AND NOT EXISTS (SELECT 1 FROM channels c WHERE c.server_id = s.id);

-- name: uncover_digest_messages
-- The messages digest $1 (of channel $2) covered become uncovered again, so the next digest
-- of the channel reads them; returns how many.
WITH uncovered AS (
    UPDATE messages SET covered_revision = NULL, covered_by_digest_id = NULL
    WHERE channel_id = $2 AND covered_by_digest_id = $1
    RETURNING 1
)
SELECT count(*) FROM uncovered;

-- name: subtract_digest_entity_counts
-- Take the mentions a coverage digest $1 added off its entities' and topic profiles' counts
-- (a catch-up digest added none).
WITH entity_counts AS (
    UPDATE entities e SET mention_count = greatest(e.mention_count - cardinality(m.message_ids), 0)
    FROM entity_mentions m WHERE m.digest_id = $1 AND e.id = m.entity_id
    RETURNING 1
), profile_counts AS (
    UPDATE topic_profiles t SET mention_count = greatest(t.mention_count - cardinality(p.message_ids), 0)
    FROM topic_profile_digests p WHERE p.digest_id = $1 AND t.id = p.profile_id
    RETURNING 1
)
SELECT (SELECT count(*) FROM entity_counts) + (SELECT count(*) FROM profile_counts);

-- name: digest_dependents
-- The entities, topic profiles and channel items digest $1 speaks of (before it is deleted):
-- the ones no other digest speaks of are deleted with it.
SELECT
    ARRAY(SELECT entity_id FROM entity_mentions WHERE digest_id = $1
          UNION SELECT entity_id FROM entity_item_refs WHERE digest_id = $1) AS entity_ids,
    ARRAY(SELECT profile_id FROM topic_profile_digests WHERE digest_id = $1
          UNION SELECT profile_id FROM topic_profile_items WHERE digest_id = $1) AS profile_ids,
    ARRAY(SELECT DISTINCT item_id FROM channel_item_mentions WHERE digest_id = $1) AS item_ids;

-- name: delete_digest
-- Delete digest $1; its items, messages read, mentions and references go with it (ON DELETE
-- CASCADE); jobs, channel items and entities that named it keep their row (SET NULL).
DELETE FROM digests WHERE id = $1;

-- name: delete_orphans_of_digest
-- After a digest's deletion: the entities ($1), topic profiles ($2) and channel items ($3) it
-- spoke of that no remaining digest speaks of. Returns how many rows went.
WITH entities_gone AS (
    DELETE FROM entities e WHERE e.id = ANY($1::bigint[])
      AND NOT EXISTS (SELECT 1 FROM entity_mentions m WHERE m.entity_id = e.id)
      AND NOT EXISTS (SELECT 1 FROM entity_item_refs r WHERE r.entity_id = e.id)
    RETURNING 1
), profiles_gone AS (
    DELETE FROM topic_profiles t WHERE t.id = ANY($2::bigint[])
      AND NOT EXISTS (SELECT 1 FROM topic_profile_digests d WHERE d.profile_id = t.id)
      AND NOT EXISTS (SELECT 1 FROM topic_profile_items i WHERE i.profile_id = t.id)
    RETURNING 1
), items_gone AS (
    DELETE FROM channel_items c WHERE c.id = ANY($3::bigint[])
      AND NOT EXISTS (SELECT 1 FROM channel_item_mentions m WHERE m.item_id = c.id)
    RETURNING 1
)
SELECT (SELECT count(*) FROM entities_gone) + (SELECT count(*) FROM profiles_gone)
     + (SELECT count(*) FROM items_gone);

-- name: person_named
-- A person by name, case-insensitive (people_name).
SELECT * FROM people WHERE lower(name) = lower($1);

-- name: person_of_handle
-- The person a folded handle ($1) names in every channel, if any.
SELECT p.* FROM people p JOIN person_handles h ON h.person_id = p.id
WHERE h.handle_key = $1 AND h.channel_id IS NULL;

-- name: insert_person
-- Find or create a person by name (case-insensitive); returns the row and whether it is new.
WITH created AS (
    INSERT INTO people (name) VALUES ($1) ON CONFLICT ((lower(name))) DO NOTHING RETURNING *
)
SELECT * FROM created
UNION ALL
SELECT * FROM people WHERE lower(name) = lower($1) AND NOT EXISTS (SELECT 1 FROM created);

-- name: people_by_ids
-- People by id, for the DataLoader.
SELECT * FROM people WHERE id = ANY($1::bigint[]);

-- name: handles_of_people
-- The handles of people $1, oldest first per person.
SELECT * FROM person_handles WHERE person_id = ANY($1::bigint[]) ORDER BY person_id, id;

-- name: insert_person_handle
-- Give person $1 the handle $2 (folded: $3) in channel $4 (NULL: every channel), unless the
-- handle already names someone in that scope: then no row (handle_of_scope says whose it is).
INSERT INTO person_handles (person_id, handle, handle_key, channel_id) VALUES ($1, $2, $3, $4)
ON CONFLICT (handle_key, coalesce(channel_id, 0)) DO NOTHING
RETURNING *;

-- name: handle_of_scope
-- The handle row of a folded handle ($1) in a scope ($2: a channel, NULL: every channel).
SELECT * FROM person_handles WHERE handle_key = $1 AND coalesce(channel_id, 0) = coalesce($2::bigint, 0);

-- name: read_markers_of
-- A person's read markers, by channel.
SELECT * FROM read_markers WHERE person_id = $1 ORDER BY channel_id;

-- name: set_read_marker
-- Person $1 has read channel $2 up to $3 (a marker only moves forward: reading an older
-- catch-up again never makes newer messages look unread).
INSERT INTO read_markers (person_id, channel_id, read_until) VALUES ($1, $2, $3)
ON CONFLICT (person_id, channel_id) DO UPDATE
SET read_until = greatest(read_markers.read_until, EXCLUDED.read_until), updated_at = now()
RETURNING *;

-- name: catch_up_mentions
-- The newest messages (at most $6) of channels $2 (NULL: all) after the start of person $1's
-- catch-up there ($3 when given, else their read marker of the channel, else $4) whose text
-- matches the handle prefilter $5 (a case-insensitive regular expression; the exact,
-- word-bounded match is runner/catchup/handles.py's).
SELECT m.id, m.channel_id, m.external_id, m.author, m.ts, m.revision, m.normalized_text
FROM messages m
LEFT JOIN read_markers r ON r.person_id = $1 AND r.channel_id = m.channel_id
WHERE ($2::bigint[] IS NULL OR m.channel_id = ANY($2::bigint[]))
  AND m.ts > coalesce($3::timestamptz, r.read_until, $4::timestamptz)
  AND m.normalized_text ~* $5
ORDER BY m.ts DESC, m.id DESC
LIMIT $6;

-- name: catch_up_items
-- The newest (at most $5) tracked items of channels $2 (NULL: all) a catch-up of person $1
-- weighs: every open question and open action item, and the decisions said after the start of
-- the catch-up ($3, else the read marker, else $4); each with the message it was first said in
-- and the author of the message that one replies to.
SELECT i.id, i.channel_id, i.kind, i.status, i.text, i.owner, i.message_ids, i.said_at,
    m.id AS message_row_id, m.author AS message_author, m.ts AS message_ts,
    m.revision AS message_revision, m.normalized_text AS message_text,
    p.author AS replied_author
FROM channel_items i
LEFT JOIN read_markers r ON r.person_id = $1 AND r.channel_id = i.channel_id
LEFT JOIN messages m ON m.channel_id = i.channel_id AND m.external_id = i.message_ids[1]
LEFT JOIN messages p ON p.channel_id = i.channel_id AND p.external_id = m.reply_to
WHERE ($2::bigint[] IS NULL OR i.channel_id = ANY($2::bigint[]))
  AND ((i.kind IN ('question', 'action_item') AND i.status = 'open')
       OR (i.kind = 'decision'
           AND i.said_at > coalesce($3::timestamptz, r.read_until, $4::timestamptz)))
ORDER BY i.said_at DESC, i.id DESC
LIMIT $5;
-- name: catch_up_cited_messages
-- The messages (at their current revision) of the pairs ($1 channel id, $2 external id): those
-- the items of a catch-up cite, each read once.
SELECT DISTINCT m.id, m.channel_id, m.external_id, m.author, m.ts, m.revision, m.normalized_text
FROM unnest($1::bigint[], $2::text[]) AS k(channel_id, external_id)
JOIN messages m ON m.channel_id = k.channel_id AND m.external_id = k.external_id;

-- Deliveries (db/deliveries.py; migration 0016). Destinations and their secrets, the links of
-- schedules to destinations, and the outbox: enqueue_job_deliveries runs in the transaction
-- that ends a job; the workers' delivery loop claims, and records each attempt.

-- name: insert_destination
-- A new destination; $1 name, $2 kind, $3 settings, $4 events, $5 hint. No row when the name
-- is taken.
INSERT INTO destinations (name, kind, settings, events, hint)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (name) DO NOTHING
RETURNING *;

-- name: insert_destination_secrets
-- The secrets of destination $1, kept apart from its row (only the delivery loop reads them).
INSERT INTO destination_secrets (destination_id, secrets) VALUES ($1, $2);

-- name: delete_destination
-- Delete a destination (its secrets, schedule links and deliveries go with it); the row as it was.
DELETE FROM destinations WHERE id = $1 RETURNING *;

-- name: destinations_by_ids
-- Destinations by id (the Destination node's loader); never their secrets.
SELECT * FROM destinations WHERE id = ANY($1::bigint[]);

-- name: destinations_by_names
-- Destinations by name; never their secrets.
SELECT * FROM destinations WHERE name = ANY($1::text[]);

-- name: destination_secrets
-- The secrets of destination $1: the delivery loop's read, and no other.
SELECT secrets FROM destination_secrets WHERE destination_id = $1;

-- name: link_schedule_destinations
-- Deliver schedule $1's digests to the destinations $2.
INSERT INTO schedule_destinations (schedule_id, destination_id)
SELECT $1, unnest($2::bigint[])
ON CONFLICT DO NOTHING;

-- name: destinations_of_schedules
-- The destinations each of the schedules $1 delivers to (Schedule.deliverTo), by name.
SELECT sd.schedule_id, d.*
FROM schedule_destinations sd JOIN destinations d ON d.id = sd.destination_id
WHERE sd.schedule_id = ANY($1::bigint[])
ORDER BY sd.schedule_id, d.name;

-- name: enqueue_job_deliveries
-- The outbox rows of job $1, which just ended (in the same transaction): `digest.ready` of
-- its digest for each destination of a schedule that fired (or joined) the job and each
-- destination subscribed to digest.ready; `job.succeeded` (succeeded or partial) or
-- `job.failed` for the destinations subscribed to that event. A cancelled job delivers
-- nothing. The unique constraints make a repeat a no-op. How many rows were inserted.
WITH job AS (
    SELECT id, digest_id, status FROM digest_jobs WHERE id = $1
), wanted AS (
    SELECT sd.destination_id, 'digest.ready' AS event, job.digest_id
    FROM job
    JOIN schedule_runs r ON r.job_id = job.id
    JOIN schedule_destinations sd ON sd.schedule_id = r.schedule_id
    WHERE job.digest_id IS NOT NULL AND job.status IN ('succeeded', 'partial')
    UNION
    SELECT d.id, 'digest.ready', job.digest_id
    FROM job, destinations d
    WHERE job.digest_id IS NOT NULL AND job.status IN ('succeeded', 'partial')
      AND 'digest.ready' = ANY(d.events)
    UNION
    SELECT d.id, CASE WHEN job.status = 'failed' THEN 'job.failed' ELSE 'job.succeeded' END,
           job.digest_id
    FROM job, destinations d
    WHERE job.status IN ('succeeded', 'partial', 'failed')
      AND (CASE WHEN job.status = 'failed' THEN 'job.failed' ELSE 'job.succeeded' END)
          = ANY(d.events)
), inserted AS (
    INSERT INTO deliveries (destination_id, event, digest_id, job_id)
    SELECT wanted.destination_id, wanted.event, wanted.digest_id, $1
    FROM wanted
    ORDER BY wanted.destination_id, wanted.event
    ON CONFLICT DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM inserted;

-- name: notify_deliveries
-- Wake the delivery loops waiting on LISTEN digestd_deliveries: an outbox row is due now.
SELECT pg_notify('digestd_deliveries', '');

-- name: claim_deliveries
-- Claim up to $2 due deliveries for worker $1 with a lease of $3 seconds. Only the oldest
-- unfinished row of each destination may be claimed (a destination gets its deliveries in
-- creation order: a newer one never overtakes one waiting for a retry): pending and due, or
-- delivering with an expired lease (its worker died). The claim counts the attempt. SKIP
-- LOCKED lets any number of workers claim at once; a head another worker holds is skipped.
WITH heads AS (
    SELECT DISTINCT ON (destination_id) id
    FROM deliveries
    WHERE state IN ('pending', 'delivering')
    ORDER BY destination_id, id
), claimable AS (
    SELECT d.id
    FROM deliveries d
    JOIN heads ON heads.id = d.id
    WHERE (d.state = 'pending' AND d.next_attempt_at <= now())
       OR (d.state = 'delivering' AND d.lease_expires_at < now())
    ORDER BY d.next_attempt_at, d.id
    LIMIT $2
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE deliveries d
SET state = 'delivering', attempts = d.attempts + 1, leased_by = $1,
    lease_expires_at = now() + make_interval(secs => $3)
FROM claimable
WHERE d.id = claimable.id
RETURNING d.*;

-- name: delivery_target
-- What the delivery loop needs beyond the row: the destination and its secrets.
SELECT d.id, d.name, d.kind, d.settings, coalesce(s.secrets, '{}'::jsonb) AS secrets
FROM destinations d
LEFT JOIN destination_secrets s ON s.destination_id = d.id
WHERE d.id = $1;

-- name: set_delivery_content
-- Keep what the first attempt rendered, so every later attempt sends the same.
UPDATE deliveries SET content = $2 WHERE id = $1 AND content IS NULL;

-- name: mark_delivered
-- Delivery $1 (held by worker $2) reached its receiver; its content, sent, is not kept.
UPDATE deliveries
SET state = 'delivered', delivered_at = now(), last_error = NULL, leased_by = NULL,
    lease_expires_at = NULL, content = NULL
WHERE id = $1 AND leased_by = $2 AND state = 'delivering'
RETURNING *;

-- name: mark_retry
-- Delivery $1 (held by worker $2) failed for now ($3, ours): pending again after $4 seconds.
UPDATE deliveries
SET state = 'pending', last_error = $3, next_attempt_at = now() + make_interval(secs => $4),
    leased_by = NULL, lease_expires_at = NULL
WHERE id = $1 AND leased_by = $2 AND state = 'delivering'
RETURNING *;

-- name: mark_dead
-- Delivery $1 (held by worker $2) is given up ($3, ours): refused, or out of attempts.
UPDATE deliveries
SET state = 'dead', last_error = $3, leased_by = NULL, lease_expires_at = NULL
WHERE id = $1 AND leased_by = $2 AND state = 'delivering'
RETURNING *;

-- name: enqueue_catch_up_delivery
-- A catch-up for destination $1, its content ($2: title, Markdown, payload) rendered now.
INSERT INTO deliveries (destination_id, event, content)
VALUES ($1, 'catchup.ready', $2)
RETURNING id, delivery_id, destination_id, event, digest_id, job_id, state, attempts,
          next_attempt_at, lease_expires_at, leased_by, last_error, created_at, delivered_at;

-- name: retry_dead_delivery
-- A dead delivery queued again with its attempts reset (same delivery id); no row unless dead.
UPDATE deliveries
SET state = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL
WHERE id = $1 AND state = 'dead'
RETURNING id, delivery_id, destination_id, event, digest_id, job_id, state, attempts,
          next_attempt_at, lease_expires_at, leased_by, last_error, created_at, delivered_at;

-- name: deliveries_by_ids
-- Deliveries by id (the Delivery node's loader), without their content.
SELECT id, delivery_id, destination_id, event, digest_id, job_id, state, attempts,
       next_attempt_at, lease_expires_at, leased_by, last_error, created_at, delivered_at
FROM deliveries WHERE id = ANY($1::bigint[]);

-- name: prune_deliveries
-- Delete up to $2 deliveries delivered more than $1 days ago; how many.
WITH old AS (
    SELECT id FROM deliveries
    WHERE state = 'delivered' AND delivered_at < now() - make_interval(days => $1)
    ORDER BY delivered_at
    LIMIT $2
), deleted AS (
    DELETE FROM deliveries WHERE id IN (SELECT id FROM old) RETURNING 1
)
SELECT count(*) FROM deleted;

-- name: delivery_state_counts
-- How many deliveries are in each state, by destination kind (the metrics' gauge).
SELECT dst.kind, d.state, count(*) AS deliveries
FROM deliveries d JOIN destinations dst ON dst.id = d.destination_id
GROUP BY dst.kind, d.state;
