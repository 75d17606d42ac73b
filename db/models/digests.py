"""Channel digests (db/migrations 0001, 0003 and 0004): the digest, its item tables, the messages it
read, entities, the chunk-result cache; and the projections db/digests.py returns."""

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

from db.models.columns import bigint, jsonb, nullable_jsonb, text_array, timestamptz, tsvector


class Digest(SQLModel, table=True):
    __tablename__ = "digests"

    id: int = bigint(primary_key=True)
    channel_id: int = bigint()
    job_id: int | None = bigint()
    title: str
    overview: str
    highlights: list[Any] = jsonb()
    coverage: dict[str, Any] = jsonb()
    search_keywords: list[str] = text_array()
    signal_quality: str
    signal_reason: str
    first_message_id: int | None = bigint()
    last_message_id: int | None = bigint()
    window_start: datetime | None = timestamptz()
    window_end: datetime | None = timestamptz()
    message_count: int
    notable_message_ids: list[str] = text_array()
    extractor: str
    flags: list[Any] = jsonb()
    rejections: list[Any] = jsonb()
    created_at: datetime = timestamptz()
    catch_up: bool
    window_since: datetime | None = timestamptz()
    window_until: datetime | None = timestamptz()
    # [{first_message_id, last_message_id, first_at, last_at, message_count, reason}]
    left_out: list[dict[str, Any]] = jsonb()
    window_key: str | None
    # 0004: [{sentence, citations: [{message_id, external_id, revision, char_start, char_end}]}]
    overview_sentences: list[dict[str, Any]] = jsonb()
    highlight_sentences: list[dict[str, Any]] = jsonb()
    citation_audit: dict[str, Any] | None = nullable_jsonb()
    # 0012: [{granularity, start, end, message_count, conversation_count, sentences}]
    periods: list[dict[str, Any]] = jsonb()


class DigestMessage(SQLModel, table=True):
    """A message, at the revision it had, that a digest read (its window)."""

    __tablename__ = "digest_messages"

    digest_id: int = bigint(primary_key=True)
    message_id: int = bigint(primary_key=True)
    revision: int


class Topic(SQLModel, table=True):
    __tablename__ = "topics"

    id: int = bigint(primary_key=True)
    digest_id: int = bigint()
    position: int
    title: str
    summary: str
    message_ids: list[str] = text_array()


class Decision(SQLModel, table=True):
    __tablename__ = "decisions"

    id: int = bigint(primary_key=True)
    digest_id: int = bigint()
    position: int
    text: str
    message_ids: list[str] = text_array()
    flags: list[Any] = jsonb()


class ActionItem(SQLModel, table=True):
    __tablename__ = "action_items"

    id: int = bigint(primary_key=True)
    digest_id: int = bigint()
    position: int
    text: str
    owner: str | None
    message_ids: list[str] = text_array()
    flags: list[Any] = jsonb()


class OpenQuestion(SQLModel, table=True):
    __tablename__ = "open_questions"

    id: int = bigint(primary_key=True)
    digest_id: int = bigint()
    position: int
    text: str
    asked_by: str | None
    message_ids: list[str] = text_array()
    flags: list[Any] = jsonb()


class Link(SQLModel, table=True):
    __tablename__ = "links"

    id: int = bigint(primary_key=True)
    digest_id: int = bigint()
    position: int
    url: str
    description: str
    message_ids: list[str] = text_array()


class ArtifactColumns(SQLModel):
    """The columns of `artifacts`: a verbatim span [char_start, char_end) of a message at
    `message_revision`."""

    id: int = bigint(primary_key=True)
    digest_id: int = bigint()
    position: int
    kind: str
    title: str
    language: str | None
    message_id: int = bigint()
    char_start: int
    char_end: int
    match_kind: str
    message_revision: int


class Artifact(ArtifactColumns, table=True):
    __tablename__ = "artifacts"


class ArtifactWithMessage(ArtifactColumns):
    """An artifact with its message's external id (`artifacts_of_digests`)."""

    message_external_id: str


class KnowledgeItemColumns(SQLModel):
    """The columns of `knowledge_items`: a pointer (message_id, span, quote) xor synthesized
    content, as in the extraction contract."""

    id: int = bigint(primary_key=True)
    digest_id: int = bigint()
    channel_id: int = bigint()
    position: int
    item_key: str
    kind: str
    title: str
    content: str | None
    message_id: int | None = bigint()
    char_start: int | None
    char_end: int | None
    match_kind: str | None
    quote: str | None
    message_ids: list[str] = text_array()
    context_version: str | None
    entity_refs: list[str] = text_array()
    supersedes_id: int | None = bigint()
    conflicts_with_id: int | None = bigint()
    flags: list[Any] = jsonb()
    created_at: datetime = timestamptz()
    search: str | None = tsvector()
    message_revision: int


class KnowledgeItem(KnowledgeItemColumns, table=True):
    __tablename__ = "knowledge_items"


class KnowledgeItemWithMessage(KnowledgeItemColumns):
    """A knowledge item with its pointed message's external id (None for synthesized ones)."""

    message_external_id: str | None


class ChunkResult(SQLModel, table=True):
    """A cached map result, keyed by (extractor fingerprint, chunk content)."""

    __tablename__ = "chunk_results"

    cache_key: str = Field(primary_key=True)
    extractor: str
    summary: Any = jsonb()
    created_at: datetime = timestamptz()
    last_used_at: datetime = timestamptz()


class DigestItemCounts(SQLModel):
    """How many items of each section a digest has (`digest_item_counts`)."""

    digest_id: int
    topics: int
    decisions: int
    action_items: int
    open_questions: int
    links: int
    artifacts: int
    knowledge_items: int


class CitedAuthor(SQLModel):
    """Who wrote a message a digest's item cites (`authors_of_cited_messages`)."""

    digest_id: int
    external_id: str
    author: str


class EditedMessage(SQLModel):
    """A message a digest read that was edited since (`edited_messages_of_digests`)."""

    digest_id: int
    external_id: str
