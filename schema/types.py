"""GraphQL types of channels, messages and jobs, each built from its stored row (`from_row`)."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, cast

import strawberry
from strawberry.scalars import JSON
from strawberry.types import Info

from db import jobs, models
from schema.context import Context

if TYPE_CHECKING:
    from schema.digest_types import Digest
    from schema.document_types import DocumentDigest


def _optional_id(value: int | None) -> strawberry.ID | None:
    return strawberry.ID(str(value)) if value is not None else None


@strawberry.type
class Channel:
    id: strawberry.ID
    name: str
    server_id: strawberry.ID | None
    server_name: str | None
    external_id: str | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: models.ChannelWithServer) -> Channel:
        return cls(
            id=strawberry.ID(str(row.id)),
            name=row.name,
            server_id=strawberry.ID(str(row.server_id)) if row.server_id else None,
            server_name=row.server_name,
            external_id=row.external_id,
            created_at=row.created_at,
        )

    @strawberry.field(description="How many messages the channel holds.")
    async def message_count(self, info: Info[Context, None]) -> int:
        return await info.context.loaders.message_count.load(int(self.id))

    @strawberry.field(
        description="How many messages no successful digest covers yet (at their current "
        "revision): what the next triggerDigest reads."
    )
    async def uncovered_message_count(self, info: Info[Context, None]) -> int:
        return await info.context.loaders.uncovered_count.load(int(self.id))

    @strawberry.field(
        description="Always null: digests no longer follow a timestamp mark.",
        deprecation_reason="Coverage is tracked per message; use uncoveredMessageCount.",
    )
    def last_digested_message_id(self) -> str | None:
        return None


@strawberry.type
class Message:
    id: strawberry.ID
    channel_id: strawberry.ID
    message_id: str = strawberry.field(description="The external id (a string, always).")
    author: str
    ts: datetime
    reply_to: str | None
    text: str = strawberry.field(description="The text as imported.")
    normalized_text: str = strawberry.field(
        description="The current revision's text as extractors see it; pointers index the "
        "revision they were made from (Pointer.revisionText)."
    )
    attachments: JSON
    revision: int = strawberry.field(
        description="1-based number of the current text; an import that changes the text adds one."
    )

    @classmethod
    def from_row(cls, row: models.Message) -> Message:
        return cls(
            id=strawberry.ID(str(row.id)),
            channel_id=strawberry.ID(str(row.channel_id)),
            message_id=row.external_id,
            author=row.author,
            ts=row.ts,
            reply_to=row.reply_to,
            text=row.raw_text,
            normalized_text=row.normalized_text,
            attachments=cast(JSON, row.attachments),
            revision=row.revision,
        )


# The job lifecycle's own statuses (db/jobs.py), exposed as the GraphQL enum `JobStatus` (the
# decorator registers the GraphQL definition on the class itself; the names clients see stay).
JobStatus = jobs.JobStatus
strawberry.enum(JobStatus, name="JobStatus")


@strawberry.enum
class JobPhase(Enum):
    PREPROCESS = "preprocess"
    MAP = "map"
    REDUCE = "reduce"
    VALIDATE = "validate"
    STORE = "store"


@strawberry.type
class JobProgress:
    chunks_done: int
    chunks_total: int


@strawberry.type
class JobStats:
    messages: int | None = None
    chunks: int | None = None
    chunks_from_cache: int | None = None
    chunks_failed: int | None = None
    extractor: str | None = None
    llm_calls: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    content_tokens: int | None = None
    prompt_to_content_ratio: float | None = None
    items_rejected: int | None = None
    items_flagged: int | None = None
    tokens_estimated: bool | None = None
    duration_seconds: float | None = None
    cache_hit: bool | None = strawberry.field(
        default=None, description="Document jobs: the digest was served from the cache."
    )
    summarizer_calls: int | None = None
    original_chars: int | None = None
    digest_chars: int | None = None
    compression_ratio: float | None = None
    evidence_snippets: int | None = None
    final_tokens: int | None = None

    @classmethod
    def from_json(cls, stats: dict[str, Any]) -> JobStats:
        known = {name for name in cls.__annotations__}
        return cls(**{key: value for key, value in stats.items() if key in known})


@strawberry.type
class Flag:
    """A warning or validation flag: a stable code and a human message."""

    code: str
    message: str

    @classmethod
    def many(cls, values: list[dict[str, Any]]) -> list[Flag]:
        return [cls(code=str(v.get("code", "")), message=str(v.get("message", ""))) for v in values]


@strawberry.type
class DigestJob:
    id: strawberry.ID
    kind: str
    channel_id: strawberry.ID | None
    status: JobStatus
    phase: JobPhase | None
    progress: JobProgress
    attempts: int
    max_attempts: int
    error: str | None
    result_message: str | None = strawberry.field(description='E.g. "no new messages".')
    cancel_requested: bool
    stats: JobStats
    warnings: list[Flag]
    digest_id: strawberry.ID | None
    document_id: strawberry.ID | None = strawberry.field(description="Document jobs: the document.")
    document_digest_id: strawberry.ID | None = strawberry.field(
        description="Document jobs: the digest produced or served from the cache."
    )
    query: str | None = strawberry.field(description="Document jobs: the query digested for.")
    options: JSON = strawberry.field(
        description='What was asked: e.g. {"chunk_tokens": 1500}; a catch-up window stores '
        '{"since": iso, "until": iso}.'
    )
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    updated_at: datetime

    @classmethod
    def from_row(cls, row: models.DigestJob) -> DigestJob:
        return cls(
            id=strawberry.ID(str(row.id)),
            kind=row.kind,
            channel_id=strawberry.ID(str(row.channel_id)) if row.channel_id else None,
            status=JobStatus(row.status),
            phase=JobPhase(row.phase) if row.phase else None,
            progress=JobProgress(chunks_done=row.chunks_done, chunks_total=row.chunks_total),
            attempts=row.attempts,
            max_attempts=row.max_attempts,
            error=row.error,
            result_message=row.result_message,
            cancel_requested=row.cancel_requested,
            stats=JobStats.from_json(row.stats or {}),
            warnings=Flag.many(row.warnings or []),
            digest_id=strawberry.ID(str(row.digest_id)) if row.digest_id else None,
            document_id=_optional_id(row.document_id),
            document_digest_id=_optional_id(row.document_digest_id),
            query=(row.options or {}).get("query") if row.kind == jobs.JobKind.DOCUMENT else None,
            options=cast(JSON, row.options or {}),
            created_at=row.created_at,
            started_at=row.started_at,
            finished_at=row.finished_at,
            updated_at=row.updated_at,
        )

    @strawberry.field
    async def channel(self, info: Info[Context, None]) -> Channel | None:
        if self.channel_id is None:
            return None
        row = await info.context.loaders.channel.load(int(self.channel_id))
        return Channel.from_row(row) if row else None

    @strawberry.field(description="Document jobs: the digest, once there is one.")
    async def document_digest(
        self, info: Info[Context, None]
    ) -> Annotated["DocumentDigest", strawberry.lazy("schema.document_types")] | None:
        from schema.document_types import DocumentDigest

        if self.document_digest_id is None:
            return None
        row = await info.context.loaders.document_digest.load(int(self.document_digest_id))
        return DocumentDigest.from_row(row) if row else None

    @strawberry.field(description="The digest this job produced, once it has.")
    async def digest(
        self, info: Info[Context, None]
    ) -> Annotated["Digest", strawberry.lazy("schema.digest_types")] | None:
        from schema.digest_types import Digest

        if self.digest_id is None:
            return None
        row = await info.context.loaders.digest.load(int(self.digest_id))
        return Digest.from_row(row) if row else None


@strawberry.type
class RecordError:
    location: str
    reason: str


@strawberry.type
class NotFoundError:
    message: str


@strawberry.type
class InvalidInputError:
    message: str
    code: str | None = strawberry.field(
        default=None, description="A stable code to branch on (encrypted, blocked_address, ...)."
    )
