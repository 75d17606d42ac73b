-- 0014: the caches shrink. Document digests and chunk results unused for longer than
-- DIGESTD_DOC_CACHE_RETENTION_DAYS are pruned by the workers' tick, oldest use first. A document
-- digest is used when it is written and each time a job is served it from the cache, like a
-- chunk result (whose last_used_at exists since 0001); digests stored before this migration
-- count as last used when they were written.

ALTER TABLE document_digests ADD COLUMN last_used_at timestamptz NOT NULL DEFAULT now();
UPDATE document_digests SET last_used_at = created_at;

-- The tick's retention passes walk both caches by last use.
CREATE INDEX document_digests_last_used ON document_digests (last_used_at);
CREATE INDEX chunk_results_last_used ON chunk_results (last_used_at);
