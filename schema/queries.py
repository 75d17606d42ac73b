"""Query resolvers: thin, each a keyset page or a DataLoader lookup."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from db import pages
from schema.channel_types import Channel, Message
from schema.connections import Connection
from schema.context import Context
from schema.digest_types import Digest, DigestSummary, KnowledgeItem
from schema.documents import DocumentQueries
from schema.errors import client_error
from schema.ids import parse_id, parse_optional_id
from schema.enums import JobStatus, KnowledgeKind, SignalLevel
from schema.job_types import DigestJob
from schema.paging import PAGE_SIZE_HELP, page_of


@strawberry.input
class MessageFilter:
    channel_id: strawberry.ID
    since: datetime | None = None
    until: datetime | None = None


@strawberry.input
class DigestFilter:
    server_id: strawberry.ID | None = None
    channel_id: strawberry.ID | None = None
    since: datetime | None = None
    until: datetime | None = None
    signal_quality: SignalLevel | None = None


@strawberry.input
class KnowledgeItemFilter:
    channel_id: strawberry.ID | None = None
    digest_id: strawberry.ID | None = None
    kind: KnowledgeKind | None = None
    query: str | None = strawberry.field(
        default=None, description="Full-text search (websearch syntax) over title and text."
    )


@strawberry.input
class DigestJobFilter:
    channel_id: strawberry.ID | None = None
    document_id: strawberry.ID | None = None
    status: JobStatus | None = None


@strawberry.type
class Query(DocumentQueries):
    @strawberry.field(description="Channels, newest first.")
    async def channels(
        self,
        info: Info[Context, None],
        server_id: strawberry.ID | None = None,
        first: Annotated[int, strawberry.argument(description=PAGE_SIZE_HELP)] = 20,
        after: str | None = None,
    ) -> Connection[Channel] | None:
        filters = {"server_id": parse_optional_id(server_id, "server")}
        page = await page_of(info, pages.CHANNELS, filters, first, after)
        return Connection.from_page(page, Channel.from_row)

    @strawberry.field
    async def channel(self, info: Info[Context, None], id: strawberry.ID) -> Channel | None:
        row = await info.context.loaders.channel.load(parse_id(id, "channel"))
        return Channel.from_row(row) if row else None

    @strawberry.field(description="A channel's messages, oldest first.")
    async def messages(
        self,
        info: Info[Context, None],
        filter: MessageFilter,
        first: Annotated[int, strawberry.argument(description=PAGE_SIZE_HELP)] = 50,
        after: str | None = None,
    ) -> Connection[Message] | None:
        filters = {
            "channel_id": parse_id(filter.channel_id, "channel"),
            "since": filter.since,
            "until": filter.until,
        }
        page = await page_of(info, pages.MESSAGES, filters, first, after)
        return Connection.from_page(page, Message.from_row)

    @strawberry.field(description="Digests, newest first, in their light form.")
    async def digests(
        self,
        info: Info[Context, None],
        filter: DigestFilter | None = None,
        first: Annotated[int, strawberry.argument(description=PAGE_SIZE_HELP)] = 20,
        after: str | None = None,
    ) -> Connection[DigestSummary] | None:
        filter = filter or DigestFilter()
        filters = {
            "server_id": parse_optional_id(filter.server_id, "server"),
            "channel_id": parse_optional_id(filter.channel_id, "channel"),
            "since": filter.since,
            "until": filter.until,
            "signal_quality": filter.signal_quality.value if filter.signal_quality else None,
        }
        page = await page_of(info, pages.DIGESTS, filters, first, after)
        return Connection.from_page(page, DigestSummary.from_row)

    @strawberry.field(description="One digest with every item.")
    async def digest(self, info: Info[Context, None], id: strawberry.ID) -> Digest | None:
        row = await info.context.loaders.digest.load(parse_id(id, "digest"))
        return Digest.from_row(row) if row else None

    @strawberry.field(description="Knowledge items, newest first.")
    async def knowledge_items(
        self,
        info: Info[Context, None],
        filter: KnowledgeItemFilter | None = None,
        first: Annotated[int, strawberry.argument(description=PAGE_SIZE_HELP)] = 20,
        after: str | None = None,
    ) -> Connection[KnowledgeItem] | None:
        filter = filter or KnowledgeItemFilter()
        query = filter.query.strip() if filter.query else None
        if query and len(query) > 500:
            raise client_error("filter.query is too long: at most 500 characters")
        filters = {
            "channel_id": parse_optional_id(filter.channel_id, "channel"),
            "digest_id": parse_optional_id(filter.digest_id, "digest"),
            "kind": filter.kind.value if filter.kind else None,
            "query": query or None,
        }
        page = await page_of(info, pages.KNOWLEDGE_ITEMS, filters, first, after)
        return Connection.from_page(page, KnowledgeItem.from_row)

    @strawberry.field(description="Digest jobs, newest first.")
    async def digest_jobs(
        self,
        info: Info[Context, None],
        filter: DigestJobFilter | None = None,
        first: Annotated[int, strawberry.argument(description=PAGE_SIZE_HELP)] = 20,
        after: str | None = None,
    ) -> Connection[DigestJob] | None:
        filter = filter or DigestJobFilter()
        filters = {
            "channel_id": parse_optional_id(filter.channel_id, "channel"),
            "document_id": parse_optional_id(filter.document_id, "document"),
            "status": filter.status.value if filter.status else None,
        }
        page = await page_of(info, pages.JOBS, filters, first, after)
        return Connection.from_page(page, DigestJob.from_row)

    @strawberry.field(description="One job, for polling.")
    async def job(self, info: Info[Context, None], id: strawberry.ID) -> DigestJob | None:
        row = await info.context.loaders.job.load(parse_id(id, "job"))
        return DigestJob.from_row(row) if row else None
