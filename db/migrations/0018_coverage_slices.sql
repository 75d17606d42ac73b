-- 0018: a backlog larger than DIGESTD_MAX_WINDOW_MESSAGES is digested as coverage slices that
-- several workers take at once.
--
-- A slice job is a channel job whose options hold `slice`: the batch (the coverage job that
-- split the backlog), its index and count, and its contiguous (ts, id) bounds, inclusive. It
-- reads and covers only the uncovered messages within its bounds, so slices never overlap. Each
-- slice is its own active-job slot: the slot key gains the slice, so the same slice queued twice
-- is one job, and the coverage slot (no since/until/slice) stays free for the next trigger, which
-- db/queries.sql's insert_channel_job holds back while any slice of the channel is active.

DROP INDEX digest_jobs_one_active_per_channel_window;
CREATE UNIQUE INDEX digest_jobs_one_active_per_channel_window
    ON digest_jobs (channel_id, (coalesce(options ->> 'since', '') || '/' || coalesce(options ->> 'until', '')
                                 || '/' || coalesce(options ->> 'slice', '')))
    WHERE status IN ('queued', 'running') AND kind = 'channel';

-- The active slices of a channel (the coverage trigger asks on every call).
CREATE INDEX digest_jobs_active_slices ON digest_jobs (channel_id)
    WHERE status IN ('queued', 'running') AND kind = 'channel' AND options ? 'slice';
