-- 0011: bounds on schedules. A slot of a channel with no new message since its last digest
-- queues no job: its run is recorded `skipped` (job_id NULL), so a quiet channel costs a run
-- row per slot and nothing else. Skipped runs, and runs whose job ended without a digest ("no
-- new messages"), are pruned by the workers' tick once older than
-- DIGESTD_SCHEDULE_RUN_RETENTION_DAYS; runs that queued a digest are kept.

ALTER TABLE schedule_runs ADD COLUMN skipped boolean NOT NULL DEFAULT false;
ALTER TABLE schedule_runs ADD CONSTRAINT schedule_runs_skipped_has_no_job
    CHECK (NOT skipped OR (job_id IS NULL AND NOT job_created));

-- The tick's retention pass walks the old runs by age.
CREATE INDEX schedule_runs_fired ON schedule_runs (fired_at);
