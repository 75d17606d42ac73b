"""Typed rows: one SQLModel class per table of db/migrations (`table=True`, the columns as the
migrations create them; tests/test_db_models.py compares the two), and small non-table models
for the queries that return a projection or a join. db/ functions return these instead of
asyncpg records; `db.models.rows` builds them.

The migrations stay the schema's source (the models never create tables): the hot paths,
claim, keyset pages and COPY ingest, are hand-written SQL in db/queries.sql, and the models
are the typed view of their results.
"""

from db.models.channels import (
    Channel,
    ChannelMessageCount,
    ChannelUncoveredCount,
    ChannelWithServer,
    Message,
    MessageId,
    MessageRange,
    MessageRevision,
    RevisionText,
    Server,
    WindowMessage,
)
from db.models.digests import (
    ActionItem,
    Artifact,
    ArtifactWithMessage,
    ChunkResult,
    Decision,
    Digest,
    DigestItemCounts,
    DigestMessage,
    EditedMessage,
    Entity,
    KnowledgeItem,
    KnowledgeItemWithMessage,
    Link,
    OpenQuestion,
    Topic,
)
from db.models.documents import Document, DocumentDigest, DocumentListing, StoredDocument
from db.models.jobs import DigestJob
from db.models.rows import row, row_or_none, rows

__all__ = [
    "ActionItem", "Artifact", "ArtifactWithMessage", "Channel", "ChannelMessageCount",
    "ChannelUncoveredCount", "ChannelWithServer", "ChunkResult", "Decision", "Digest",
    "DigestItemCounts", "DigestJob", "DigestMessage", "Document", "DocumentDigest",
    "DocumentListing", "EditedMessage", "Entity", "KnowledgeItem", "KnowledgeItemWithMessage",
    "Link", "Message", "MessageId", "MessageRange", "MessageRevision", "OpenQuestion",
    "RevisionText", "Server", "StoredDocument", "Topic", "WindowMessage", "row", "row_or_none",
    "rows",
]  # fmt: skip
