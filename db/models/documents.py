"""Documents and their query-conditioned digests (db/migrations 0002, 0014 and 0015), and the
projections of them that db/documents.py and the `documents` keyset list return."""

from datetime import date, datetime
from typing import Any

from sqlmodel import SQLModel

from db.models.columns import bigint, int_array, jsonb, nullable_jsonb, timestamptz


class DocumentFields(SQLModel):
    """The columns of `documents` but its canonical text."""

    id: int = bigint(primary_key=True)
    source_text_hash: str
    content_type: str
    title: str | None
    source_url: str | None
    # PDFs: [[start, end], ...] of each page's text in canonical_text (page n is element n-1).
    page_spans: list[list[int]] | None = nullable_jsonb()
    warnings: list[dict[str, Any]] = jsonb()
    created_at: datetime = timestamptz()
    # What the document says about itself (0015): one line each, None when it does not say.
    author: str | None
    publisher: str | None
    published_at: date | None
    # The earliest stored document this one near-duplicates (runner.documents.fingerprint).
    near_duplicate_of: int | None = bigint()


class DocumentListing(DocumentFields):
    """A document without its canonical text: the `documents` keyset page, where a page of a
    hundred PDFs would otherwise carry megabytes. `chars` is the text's length."""

    chars: int


class DocumentColumns(DocumentFields):
    """The columns of `documents`, shared by the table and `StoredDocument`."""

    canonical_text: str
    minhash: list[int] | None = int_array()


class Document(DocumentColumns, table=True):
    __tablename__ = "documents"


class StoredDocument(DocumentColumns):
    """`insert_document`'s answer: the row, and whether this call inserted it."""

    created: bool


class DocumentDigest(SQLModel, table=True):
    """One stored DigestPayload v1.0 of a document for a query (also the digest cache)."""

    __tablename__ = "document_digests"

    id: int = bigint(primary_key=True)
    document_id: int = bigint()
    job_id: int | None = bigint()
    query: str
    query_hash: str
    cache_key: str
    payload: dict[str, Any] = jsonb()
    summarizer: str
    evidence_mode: str
    fidelity_level: str
    original_tokens: int
    final_tokens: int
    tokens_estimated: bool
    warnings: list[dict[str, Any]] = jsonb()
    duration_ms: int
    created_at: datetime = timestamptz()
    last_used_at: datetime = timestamptz()
    archived: bool  # the canonical text was written to the archive (0015)
