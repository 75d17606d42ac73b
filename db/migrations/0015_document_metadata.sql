-- 0015: what a document says about itself, which stored document it repeats, and whether a
-- digest's canonical text was archived.
--
-- author, publisher, published_at: read at ingest from PDF metadata (/Author, /CreationDate) and
-- from an HTML page's metadata (trafilatura: author, sitename, date); untrusted, so stored on one
-- line, capped, dates parsed leniently (runner.documents.metadata). NULL: the document does not say.
-- minhash: the fingerprint of the canonical text (runner.documents.fingerprint, 128 values);
-- near_duplicate_of: the earliest stored document whose fingerprint agrees on at least the
-- near-duplicate share of positions, found when the document is inserted. Documents stored
-- before this migration have neither until they are ingested again (db/documents.py fills in
-- their fingerprint, near-duplicate and missing metadata then).
ALTER TABLE documents
    ADD COLUMN author text CHECK (char_length(author) <= 200),
    ADD COLUMN publisher text CHECK (char_length(publisher) <= 200),
    ADD COLUMN published_at date,
    ADD COLUMN minhash integer[] CHECK (minhash IS NULL OR cardinality(minhash) = 128),
    ADD COLUMN near_duplicate_of bigint REFERENCES documents (id) ON DELETE SET NULL;

-- A digest's canonical text was written to DIGESTD_ARCHIVE_DIR as <source_text_hash>.txt.
-- Digests stored before this migration are not known to be archived.
ALTER TABLE document_digests ADD COLUMN archived boolean NOT NULL DEFAULT false;
