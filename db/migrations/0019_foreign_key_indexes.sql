-- 0019: an index on every foreign key's referencing column.
--
-- Deleting or re-keying a referenced row makes PostgreSQL find the rows that point at it (to
-- cascade, set null or refuse). Without an index on the referencing column that is a scan of
-- the whole referencing table for every deleted row: deleting a channel of 200,000 messages,
-- whose `messages.parent_id` points into `messages` itself, scanned `messages` 200,000 times.
-- The indexes are partial (the column IS NOT NULL): the lookups are by equality, which such an
-- index serves, and most of these columns are NULL on most rows, so the indexes stay small and
-- cost writes little. tests/integration/db/test_foreign_key_indexes.py keeps every foreign key
-- indexed.

CREATE INDEX artifacts_message_id_fk_idx ON artifacts (message_id) WHERE message_id IS NOT NULL;
CREATE INDEX channel_item_events_digest_id_fk_idx ON channel_item_events (digest_id) WHERE digest_id IS NOT NULL;
CREATE INDEX channel_item_events_pointer_message_id_fk_idx ON channel_item_events (pointer_message_id) WHERE pointer_message_id IS NOT NULL;
CREATE INDEX channel_item_events_related_item_id_fk_idx ON channel_item_events (related_item_id) WHERE related_item_id IS NOT NULL;
CREATE INDEX channel_items_conversation_id_fk_idx ON channel_items (conversation_id) WHERE conversation_id IS NOT NULL;
CREATE INDEX channel_items_first_digest_id_fk_idx ON channel_items (first_digest_id) WHERE first_digest_id IS NOT NULL;
CREATE INDEX channel_items_last_digest_id_fk_idx ON channel_items (last_digest_id) WHERE last_digest_id IS NOT NULL;
CREATE INDEX conversations_title_message_id_fk_idx ON conversations (title_message_id) WHERE title_message_id IS NOT NULL;
CREATE INDEX deliveries_digest_id_fk_idx ON deliveries (digest_id) WHERE digest_id IS NOT NULL;
CREATE INDEX deliveries_job_id_fk_idx ON deliveries (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX digest_jobs_digest_id_fk_idx ON digest_jobs (digest_id) WHERE digest_id IS NOT NULL;
CREATE INDEX digest_jobs_document_digest_id_fk_idx ON digest_jobs (document_digest_id) WHERE document_digest_id IS NOT NULL;
CREATE INDEX digest_jobs_report_id_fk_idx ON digest_jobs (report_id) WHERE report_id IS NOT NULL;
CREATE INDEX digests_first_message_id_fk_idx ON digests (first_message_id) WHERE first_message_id IS NOT NULL;
CREATE INDEX digests_job_id_fk_idx ON digests (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX digests_last_message_id_fk_idx ON digests (last_message_id) WHERE last_message_id IS NOT NULL;
CREATE INDEX document_digests_job_id_fk_idx ON document_digests (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX documents_near_duplicate_of_fk_idx ON documents (near_duplicate_of) WHERE near_duplicate_of IS NOT NULL;
CREATE INDEX entities_last_digest_id_fk_idx ON entities (last_digest_id) WHERE last_digest_id IS NOT NULL;
CREATE INDEX knowledge_items_conflicts_with_id_fk_idx ON knowledge_items (conflicts_with_id) WHERE conflicts_with_id IS NOT NULL;
CREATE INDEX knowledge_items_message_id_fk_idx ON knowledge_items (message_id) WHERE message_id IS NOT NULL;
CREATE INDEX knowledge_items_supersedes_id_fk_idx ON knowledge_items (supersedes_id) WHERE supersedes_id IS NOT NULL;
CREATE INDEX messages_parent_id_fk_idx ON messages (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX person_handles_channel_id_fk_idx ON person_handles (channel_id) WHERE channel_id IS NOT NULL;
CREATE INDEX read_markers_channel_id_fk_idx ON read_markers (channel_id) WHERE channel_id IS NOT NULL;
CREATE INDEX reports_job_id_fk_idx ON reports (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX schedule_runs_job_id_fk_idx ON schedule_runs (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX schedules_last_job_id_fk_idx ON schedules (last_job_id) WHERE last_job_id IS NOT NULL;
