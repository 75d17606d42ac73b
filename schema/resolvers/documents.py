"""The document fields of the API: `ingestDocument`, `triggerDocumentDigest` and
`triggerDocumentDigests` (writers), and
the `documents`, `document` and `documentDigest` queries. `Query` and `Mutation` inherit them.

Expected failures are typed: an unreadable or hostile input is an `InvalidInputError` whose
`code` is the document error's code (`encrypted`, `no_text_layer`, `blocked_address`,
`bad_scheme`, `too_large`, ...) and whose `message` says why, never with document content.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from db import documents as document_queries
from db import pages
from runner.core.display_names import name_problem
from runner.documents.canonical import CanonicalDocument
from runner.documents.errors import DocumentError
from runner.documents.ingest import ingest_bytes, ingest_text, ingest_url
from runner.triggers import TriggerRefused, trigger_document_digest, trigger_document_digests
from schema.context import Context
from schema.errors import BAD_USER_INPUT
from schema.gate.permissions import IsWriter
from schema.types.connections import Connection
from schema.types.document import Document, DocumentDigest
from schema.types.ids import DOCUMENT, DOCUMENT_DIGEST, IdArgument, global_id, parse_id
from schema.types.job import DigestJob
from schema.types.paging import After, Before, First, Last, PageArgs, connection_of
from schema.types.shared import InvalidInputError, NotFoundError, parse_id_or_error, refusal

logger = logging.getLogger(__name__)

MAX_DOCUMENT_BYTES = 10 * 1024 * 1024  # the fetcher's cap, for uploads too


@strawberry.input(description="Exactly one of url, text or contentBase64.")
class DocumentInput:
    url: str | None = strawberry.field(default=None, description="http(s) URL, fetched safely.")
    text: str | None = strawberry.field(default=None, description="Plain text (not markup).")
    content_base64: str | None = strawberry.field(
        default=None, description="The bytes of an HTML page, a PDF or a text file, base64."
    )
    content_type: str | None = strawberry.field(
        default=None, description="Media type of contentBase64; magic bytes are checked too."
    )
    title: str | None = None
    password: str | None = strawberry.field(default=None, description="Of an encrypted PDF.")
    file_name: str | None = strawberry.field(
        default=None,
        description="Name of the uploaded file: the title of a document that has none itself "
        "(no `title` given, no HTML title or heading, no PDF title or heading).",
    )


@strawberry.input
class DocumentFilter:
    content_type: str | None = None
    since: datetime | None = None
    until: datetime | None = None


IngestDocumentResult = Annotated[
    Document | InvalidInputError, strawberry.union("IngestDocumentResult")
]
TriggerDocumentDigestResult = Annotated[
    DigestJob | NotFoundError | InvalidInputError, strawberry.union("TriggerDocumentDigestResult")
]


@strawberry.type(description="A document of a `triggerDocumentDigests` request left out.")
class SkippedDocument:
    document_id: strawberry.ID
    reason: str = strawberry.field(
        description="Why: `max_sources` (eligible, ranked below the first "
        "DIGESTD_DOC_MAX_SOURCES), or the digest policy's `too_small`, `low_quality`, "
        "`no_content`, `policy_off`."
    )


@strawberry.type(description="The jobs of a `triggerDocumentDigests` request, best ranked first.")
class DocumentDigestBatch:
    jobs: list[DigestJob]
    skipped: list[SkippedDocument]


TriggerDocumentDigestsResult = Annotated[
    DocumentDigestBatch | NotFoundError | InvalidInputError,
    strawberry.union("TriggerDocumentDigestsResult"),
]


async def canonical_document(source: DocumentInput, info: Info[Context, None]) -> CanonicalDocument:
    """The input as a canonical document; raises DocumentError (or ValueError for bad input)."""
    given = [name for name in ("url", "text", "content_base64") if getattr(source, name)]
    if len(given) != 1:
        raise ValueError("give exactly one of url, text or contentBase64")
    title = source.title.strip() if source.title and source.title.strip() else None
    problem = name_problem(title) if title else None
    if problem:  # typed: refused, where a title read from the document is made one line
        raise ValueError(f"title {problem}")
    file_name = source.file_name.strip() if source.file_name else None
    if file_name and (problem := name_problem(file_name)):
        raise ValueError(f"fileName {problem}")
    if source.url:
        return await ingest_url(
            source.url.strip(),
            policy=info.context.config.fetch_policy,
            title=title,
            password=source.password,
        )
    if source.text:
        if len(source.text) > MAX_DOCUMENT_BYTES:
            raise ValueError(f"text is over {MAX_DOCUMENT_BYTES} characters")
        return await asyncio.to_thread(ingest_text, source.text, title=title, file_name=file_name)
    encoded = source.content_base64 or ""
    if len(encoded) > MAX_DOCUMENT_BYTES * 4 // 3 + 4:
        raise ValueError(f"the document is over {MAX_DOCUMENT_BYTES} bytes")
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("contentBase64 is not valid base64") from None
    # CPU-bound (PDF parsing): off the event loop.
    return await asyncio.to_thread(
        ingest_bytes,
        data,
        source.content_type,
        title=title,
        password=source.password,
        file_name=file_name,
    )


@strawberry.type
class DocumentQueries:
    @strawberry.field(description="Documents, newest first (their text: `canonicalText`).")
    async def documents(
        self,
        info: Info[Context, None],
        filter: DocumentFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Document] | None:
        filter = filter or DocumentFilter()
        filters = {
            "content_type": filter.content_type,
            "since": filter.since,
            "until": filter.until,
        }
        args = PageArgs(first, after, last, before, default_size=20)
        return await connection_of(info, pages.DOCUMENTS, filters, args, Document.from_row)

    @strawberry.field(description="One document with its latest digests.")
    async def document(self, info: Info[Context, None], id: IdArgument) -> Document | None:
        row = await info.context.loaders.document.load(parse_id(id, DOCUMENT))
        return Document.from_row(row) if row else None

    @strawberry.field(description="One document digest: summary, key points, checked evidence.")
    async def document_digest(
        self, info: Info[Context, None], id: IdArgument
    ) -> DocumentDigest | None:
        row = await info.context.loaders.document_digest.load(parse_id(id, DOCUMENT_DIGEST))
        return DocumentDigest.from_row(row) if row else None


@strawberry.type
class DocumentMutations:
    @strawberry.mutation(
        permission_classes=[IsWriter],
        description="Store a document (URL, text or base64 bytes) as canonical text. The same "
        "canonical text ingested again returns the stored document.",
    )
    async def ingest_document(
        self, info: Info[Context, None], input: DocumentInput
    ) -> IngestDocumentResult:
        try:
            document = await canonical_document(input, info)
        except DocumentError as error:
            logger.info("document.refused code=%s", error.code)
            return InvalidInputError(message=error.reason, reason=error.code)
        except ValueError as error:
            return InvalidInputError(message=str(error), code=BAD_USER_INPUT)
        async with info.context.pool.acquire() as connection:
            row, created = await document_queries.store_document(connection, document.as_record())
        logger.info(
            "document.ingested id=%s created=%s chars=%d type=%s",
            row.id,
            created,
            len(document.canonical_text),
            document.content_type,
        )
        return Document.from_row(row)

    @strawberry.mutation(
        permission_classes=[IsWriter],
        description="Queue a digest of the document for a query and return the job at once. A "
        "queued or running job for the same document and query is returned instead; a finished "
        "digest with the same cache key is served without summarizing again.",
    )
    async def trigger_document_digest(
        self, info: Info[Context, None], document_id: IdArgument, query: str
    ) -> TriggerDocumentDigestResult:
        key = parse_id_or_error(document_id, DOCUMENT)
        if isinstance(key, InvalidInputError):
            return key
        try:
            async with info.context.pool.acquire() as connection:
                job, _created = await trigger_document_digest(
                    connection,
                    key,
                    query,
                    config=info.context.config.digest_config,
                    max_attempts=info.context.config.max_attempts,
                )
        except TriggerRefused as refused:
            return refusal(refused, {("document", key): document_id})
        return DigestJob.from_row(job)

    @strawberry.mutation(
        permission_classes=[IsWriter],
        description="Digest several documents for one query: they are ranked on their text "
        "(quality, relevance to the query, length) and a digest job is queued for each of the "
        "first DIGESTD_DOC_MAX_SOURCES eligible ones, best first (an active job for the same "
        "document and query is returned instead); the others are listed as skipped, with why. "
        "At most 50 documents.",
    )
    async def trigger_document_digests(
        self, info: Info[Context, None], document_ids: list[strawberry.ID], query: str
    ) -> TriggerDocumentDigestsResult:
        keys: list[int] = []
        sent: dict[tuple[str, int], str] = {}
        for value in document_ids:
            key = parse_id_or_error(value, DOCUMENT)
            if isinstance(key, InvalidInputError):
                return key
            keys.append(key)
            sent.setdefault(("document", key), value)
        try:
            async with info.context.pool.acquire() as connection:
                jobs, skipped = await trigger_document_digests(
                    connection,
                    keys,
                    query,
                    config=info.context.config.digest_config,
                    max_attempts=info.context.config.max_attempts,
                )
        except TriggerRefused as refused:
            return refusal(refused, sent)
        return DocumentDigestBatch(
            jobs=[DigestJob.from_row(job) for job in jobs],
            skipped=[
                SkippedDocument(document_id=global_id(DOCUMENT, key), reason=reason)
                for key, reason in skipped
            ],
        )
