"""GraphQL types of documents and their digests, built from stored rows.

A stored payload is validated against the DigestPayload v1.0 schema again when it is read, and
every evidence snippet is checked against the document's canonical text at read time: `verified`
says whether its locator slices exactly to its text, so a client never has to trust a citation
blindly. Nothing private (`_`-prefixed keys, raw fetched bytes) is stored, so nothing can leak here.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, cast

import strawberry
from strawberry import relay
from strawberry.scalars import JSON
from strawberry.types import Info

from db import models
from runner.documents.canonical import PageSpan
from runner.documents.claim_audit import document_citation_audit, document_claims
from runner.documents.errors import DocumentError
from runner.documents.locators import locator_context, parse_locator, resolve_locator
from runner.documents.payload import DigestPayload, validate_payload_dict
from schema.context import Context
from schema.errors import PAGE_SIZE, client_error
from schema.resolvers.loaders import LATEST_DIGESTS_PER_DOCUMENT
from schema.types.ids import DIGEST_JOB, DOCUMENT, global_id, optional_global_id
from schema.types.prose import CitationAudit
from schema.types.shared import Flag

CONTEXT_CHARS = 200


def page_spans_of(row: models.DocumentFields) -> list[PageSpan] | None:
    spans = row.page_spans
    return [(int(start), int(end)) for start, end in spans] if spans else None


def _listed_chars(row: models.DocumentFields) -> int:
    assert isinstance(row, models.DocumentListing), "a document row without text or length"
    return row.chars


@strawberry.type(description="A fetched or uploaded document, stored as canonical text.")
class Document(relay.Node):
    id: relay.NodeID[int]
    title: str | None
    content_type: str = strawberry.field(description="text/html, application/pdf or text/plain.")
    source_url: str | None = strawberry.field(description="Where it was fetched from (final URL).")
    source_text_hash: str = strawberry.field(description="sha256:<64 hex> of the canonical text.")
    chars: int = strawberry.field(description="Length of the canonical text in code points.")
    page_count: int | None = strawberry.field(description="PDFs: pages with a text span.")
    page_starts: list[int] | None = strawberry.field(
        description="PDFs: where each page starts in canonicalText, in code points, so a "
        "locator `page:N:char:S-E` is canonicalText[pageStarts[N-1]+S : pageStarts[N-1]+E]; "
        "null for a document without pages."
    )
    warnings: list[Flag] = strawberry.field(description="What extraction noticed.")
    created_at: datetime
    author: str | None = strawberry.field(
        description="As the document states it (PDF /Author, an HTML page's author metadata), "
        "on one line, at most 200 characters; null when it does not say. Untrusted text."
    )
    publisher: str | None = strawberry.field(
        description="The site an HTML page names itself by (its site name metadata); null for "
        "PDFs, plain text and pages that do not say. Untrusted text."
    )
    published_at: date | None = strawberry.field(
        description="The date the document states (PDF /CreationDate, an HTML page's declared "
        "publication date); null when absent or unreadable."
    )
    text: strawberry.Private[str | None]
    near_duplicate_row: strawberry.Private[int | None]

    @classmethod
    def from_row(cls, row: models.DocumentFields) -> Document:
        """From a full row (`Document`, `StoredDocument`) or a list row (`DocumentListing`,
        which has `chars` instead of the text)."""
        text = row.canonical_text if isinstance(row, models.DocumentColumns) else None
        spans = page_spans_of(row)
        return cls(
            id=row.id,
            title=row.title,
            content_type=row.content_type,
            source_url=row.source_url,
            source_text_hash=row.source_text_hash,
            chars=len(text) if text is not None else _listed_chars(row),
            page_count=len(spans) if spans is not None else None,
            page_starts=[start for start, _ in spans] if spans is not None else None,
            warnings=Flag.many(row.warnings or []),
            created_at=row.created_at,
            author=row.author,
            publisher=row.publisher,
            published_at=row.published_at,
            text=text,
            near_duplicate_row=row.near_duplicate_of,
        )

    @strawberry.field(
        description="The earliest stored document whose text this one nearly repeats (the same "
        "article from another URL, or as PDF and as HTML: estimated Jaccard similarity of their "
        "word shingles at least 0.5), found when this one was stored; null for none. A report "
        "cites near-duplicates as one source."
    )
    async def near_duplicate_of(self, info: Info[Context, None]) -> Document | None:
        if self.near_duplicate_row is None:
            return None
        row = await info.context.loaders.document.load(self.near_duplicate_row)
        return Document.from_row(row) if row else None

    @strawberry.field(description="The canonical text every locator indexes (may be large).")
    async def canonical_text(self, info: Info[Context, None]) -> str:
        if self.text is not None:
            return self.text
        row = await info.context.loaders.document.load(self.id)
        return row.canonical_text if row else ""

    @strawberry.field(description="The newest digests of this document, newest first.")
    async def latest_digests(
        self,
        info: Info[Context, None],
        first: Annotated[
            int, strawberry.argument(description=f"1 to {LATEST_DIGESTS_PER_DOCUMENT}.")
        ] = 5,
    ) -> list[DocumentDigest] | None:
        if not 1 <= first <= LATEST_DIGESTS_PER_DOCUMENT:
            raise client_error(
                f"first must be between 1 and {LATEST_DIGESTS_PER_DOCUMENT}",
                PAGE_SIZE,
                argument="first",
            )
        rows = await info.context.loaders.latest_document_digests.load(self.id)
        return [DocumentDigest.from_row(row) for row in rows[:first]]


@strawberry.type(description="One evidence snippet: an exact quote of the canonical text.")
class EvidenceSnippet:
    text: str
    locator: str = strawberry.field(
        description="char:S-E, or page:N:char:S-E for PDFs (0-based, end-exclusive; page 1-based)."
    )
    relevance_score: float
    page: int | None
    document_row: strawberry.Private[int]

    async def _located(self, info: Info[Context, None]) -> tuple[str, list[PageSpan] | None] | None:
        row = await info.context.loaders.document.load(self.document_row)
        return (row.canonical_text, page_spans_of(row)) if row else None

    @strawberry.field(description="Absolute [start, end) of the snippet in the canonical text.")
    async def char_range(self, info: Info[Context, None]) -> list[int] | None:
        located = await self._located(info)
        if located is None:
            return None
        try:
            start, end = resolve_locator(self.locator, *located)
        except DocumentError:
            return None
        return [start, end]

    @strawberry.field(description="True when the locator slices the stored text to exactly `text`.")
    async def verified(self, info: Info[Context, None]) -> bool:
        located = await self._located(info)
        if located is None:
            return False
        try:
            start, end = resolve_locator(self.locator, *located)
        except DocumentError:
            return False
        return located[0][start:end] == self.text

    @strawberry.field(description="Up to 200 characters before the snippet (within its page).")
    async def context_before(self, info: Info[Context, None]) -> str | None:
        located = await self._located(info)
        return locator_context(self.locator, *located, chars=CONTEXT_CHARS)[0] if located else None

    @strawberry.field(description="Up to 200 characters after the snippet (within its page).")
    async def context_after(self, info: Info[Context, None]) -> str | None:
        located = await self._located(info)
        return locator_context(self.locator, *located, chars=CONTEXT_CHARS)[1] if located else None


@strawberry.type
class Fidelity:
    level: str = strawberry.field(description='Always "digest".')
    original_tokens: int
    final_tokens: int
    estimated: bool = strawberry.field(description="Token counts are chars/4 estimates.")


def _payload(row: models.DocumentDigest) -> DigestPayload:
    data: dict[str, Any] = row.payload
    try:
        validate_payload_dict(data)
    except DocumentError as error:
        # Stored data that fails its own schema is a server fault, not the client's: logged with
        # the request id, shown as an internal error.
        raise RuntimeError(
            f"stored digest {row.id} fails the DigestPayload v1.0 schema: {error.reason}"
        ) from None
    return DigestPayload.from_dict(data)


@strawberry.type(
    description="A summary sentence or key point of a document digest, and the "
    "evidence snippets that support it."
)
class DocumentClaim:
    field: str = strawberry.field(description='"summary" (one of its sentences) or "key_points".')
    text: str
    evidence: list[int] = strawberry.field(
        description="Indexes (0-based) into evidenceSnippets of the snippets holding at least "
        "half of its content words; empty when no snippet supports it."
    )
    support: float | None = strawberry.field(
        description="The largest share of its content words one snippet holds (null: no "
        "content word to check)."
    )


@strawberry.type(description="A query-conditioned digest of a document (DigestPayload v1.0).")
class DocumentDigest(relay.Node):
    id: relay.NodeID[int]
    document_id: strawberry.ID
    document_row: strawberry.Private[int]
    job_id: strawberry.ID | None
    query: str
    query_hash: str = strawberry.field(description="The payload's 8 hex of sha256(query).")
    cache_key: str
    summary: str
    key_points: list[str]
    evidence_snippets: list[EvidenceSnippet]
    original_chars: int
    digest_chars: int
    compression_ratio: float
    source_text_hash: str
    version: str
    content_type: str = strawberry.field(description='Always "digest/v1".')
    payload: JSON = strawberry.field(description="The whole DigestPayload v1.0, as stored.")
    fidelity: Fidelity
    summarizer: str
    evidence_mode: str = strawberry.field(description="query, or positional for short queries.")
    warnings: list[Flag]
    created_at: datetime
    claims: list[DocumentClaim] = strawberry.field(
        description="The summary's sentences, then the key points, each with the evidence "
        "snippets that support it."
    )
    citation_audit: CitationAudit = strawberry.field(
        description="Summary sentences and key points kept, dropped (and why) and citing "
        "evidence; computed from the stored digest and its warnings."
    )
    archived: bool = strawberry.field(
        description="The canonical text was written to the archive (DIGESTD_ARCHIVE_DIR, as "
        "<sourceTextHash>.txt) by the job that stored this digest, so its locators can be "
        "checked against the file; false when archiving is off or failed."
    )

    @classmethod
    def from_row(cls, row: models.DocumentDigest) -> DocumentDigest:
        payload = _payload(row)
        document_row = int(row.document_id)
        claims = document_claims(
            payload.summary, payload.key_points, [s.text for s in payload.evidence_snippets]
        )
        return cls(
            id=row.id,
            document_id=global_id(DOCUMENT, document_row),
            document_row=document_row,
            job_id=optional_global_id(DIGEST_JOB, row.job_id),
            query=row.query,
            query_hash=payload.query_hash,
            cache_key=row.cache_key,
            summary=payload.summary,
            key_points=list(payload.key_points),
            evidence_snippets=[
                EvidenceSnippet(
                    text=snippet.text,
                    locator=snippet.locator,
                    relevance_score=snippet.relevance_score,
                    page=parse_locator(snippet.locator).page,
                    document_row=document_row,
                )
                for snippet in payload.evidence_snippets
            ],
            original_chars=payload.original_chars,
            digest_chars=payload.digest_chars,
            compression_ratio=payload.compression_ratio,
            source_text_hash=payload.source_text_hash,
            version=payload.version,
            content_type=payload.content_type,
            payload=cast(JSON, payload.to_dict()),
            fidelity=Fidelity(
                level=row.fidelity_level,
                original_tokens=row.original_tokens,
                final_tokens=row.final_tokens,
                estimated=row.tokens_estimated,
            ),
            summarizer=row.summarizer,
            evidence_mode=row.evidence_mode,
            warnings=Flag.many(row.warnings or []),
            created_at=row.created_at,
            claims=[
                DocumentClaim(
                    field=c.field, text=c.text, evidence=list(c.evidence), support=c.support
                )
                for c in claims
            ],
            citation_audit=CitationAudit.from_json(
                document_citation_audit(claims, row.warnings or [])
            ),
            archived=row.archived,
        )

    @strawberry.field
    async def document(self, info: Info[Context, None]) -> Document | None:
        row = await info.context.loaders.document.load(self.document_row)
        return Document.from_row(row) if row else None
