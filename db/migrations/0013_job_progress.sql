-- 0013: progress a person can trust. A job has a phase from the moment it is queued
-- ('queued'; 'reading' once a worker claims it), the phases name what the worker does
-- ('threading' replaces 'preprocess', which covered the same steps before the map), and one
-- overall fraction that only ever grows (update_job_progress writes greatest(old, new)) and is
-- 1 once the job succeeded.

ALTER TABLE digest_jobs DROP CONSTRAINT digest_jobs_phase_check;
UPDATE digest_jobs
SET phase = CASE WHEN phase = 'preprocess' THEN 'threading'
                 WHEN started_at IS NULL THEN 'queued'
                 ELSE 'reading' END
WHERE phase IS NULL OR phase = 'preprocess';
ALTER TABLE digest_jobs
    ALTER COLUMN phase SET DEFAULT 'queued',
    ALTER COLUMN phase SET NOT NULL,
    ADD CONSTRAINT digest_jobs_phase_check CHECK (
        phase IN ('queued', 'reading', 'threading', 'map', 'reduce', 'validate', 'store')),
    ADD COLUMN progress_fraction double precision NOT NULL DEFAULT 0
        CONSTRAINT digest_jobs_progress_fraction_range
        CHECK (progress_fraction >= 0 AND progress_fraction <= 1);
UPDATE digest_jobs SET progress_fraction = 1 WHERE status IN ('succeeded', 'partial');
