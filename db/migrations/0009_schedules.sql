-- 0009: digests on a schedule: a cron expression in a time zone per
-- channel, fired by the workers.
--
-- `next_run_at` is the next slot of `cron` in `timezone` (computed by runner/cron.py, UTC
-- here). A worker's schedule tick (runner/scheduler.py) locks the due rows (`next_run_at <=
-- now()`, the database's clock) FOR UPDATE SKIP LOCKED, queues an ordinary channel digest
-- for each and moves `next_run_at` to the first slot after now(), all in one transaction: a
-- slot is fired by exactly one worker, and slots missed while no worker ran are caught up
-- once, not once each. `paused` schedules are never due; resuming one recomputes its next
-- slot from now() (what was missed while paused is not caught up).
--
-- Each firing is a `schedule_runs` row: the slot it fired for, when, by which process
-- (host:pid), and the job it queued or (when a digest of the channel was already queued or
-- running) joined.

CREATE TABLE schedules (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_id   bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    cron         text NOT NULL CHECK (cron <> '' AND length(cron) <= 100),
    timezone     text NOT NULL CHECK (timezone <> '' AND length(timezone) <= 64),
    paused       boolean NOT NULL DEFAULT false,
    next_run_at  timestamptz NOT NULL,
    last_run_at  timestamptz,
    last_job_id  bigint REFERENCES digest_jobs (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
-- The tick's scan: only schedules that can be due.
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE NOT paused;
-- Keyset pages, all schedules or one channel's.
CREATE INDEX schedules_created ON schedules (created_at DESC, id DESC);
CREATE INDEX schedules_channel_created ON schedules (channel_id, created_at DESC, id DESC);

CREATE TABLE schedule_runs (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    schedule_id  bigint NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    slot         timestamptz NOT NULL,
    fired_at     timestamptz NOT NULL DEFAULT now(),
    fired_by     text NOT NULL,
    job_id       bigint REFERENCES digest_jobs (id) ON DELETE SET NULL,
    job_created  boolean NOT NULL,
    CONSTRAINT schedule_runs_one_per_slot UNIQUE (schedule_id, slot)
);
