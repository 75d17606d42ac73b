-- 0004: cited prose. A digest's overview and highlights are sentences, each with the messages
-- it rests on, anchored to the characters that support it; and the citation audit of the digest.
--
-- `overview` (text) and `highlights` (a JSON list of strings) stay as they were, now the
-- sentences' plain text, so existing clients and old digests read as before. The sentences are
-- JSON lists of {sentence, citations: [{message_id, external_id, revision, char_start,
-- char_end}]}: `message_id` is the messages row, `revision` the revision read, so
-- revision_text[char_start:char_end] is the exact quote forever (as with pointers).
-- `citation_audit` is NULL for digests stored before this migration.

ALTER TABLE digests
    ADD COLUMN overview_sentences  jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN highlight_sentences jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN citation_audit      jsonb;
