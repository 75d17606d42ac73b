-- 0012: a digest of a window that spans several days tells it period by period (a day, week,
-- month, quarter or year each): [{granularity, start, end, message_count, conversation_count,
-- sentences: [{sentence, citations: [...]}]}], the citations shaped as overview_sentences'.
-- Empty for a window of one day and for digests stored before periods were told.

ALTER TABLE digests ADD COLUMN periods jsonb NOT NULL DEFAULT '[]';
