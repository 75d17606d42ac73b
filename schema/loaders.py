"""DataLoaders, created per request in the context getter: each batches the keys one GraphQL
request asks for into a single query, so a page of 100 digests costs a handful of queries."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import asyncpg
from pydantic import BaseModel
from strawberry.dataloader import DataLoader

from db import channels, digests, documents, jobs
from db.digests import DigestItem
from db.models import (
    ActionItem,
    ArtifactWithMessage,
    ChannelWithServer,
    Decision,
    Digest,
    DigestItemCounts,
    DigestJob,
    Document,
    DocumentDigest,
    KnowledgeItemWithMessage,
    Link,
    Message,
    OpenQuestion,
    Topic,
)

BatchLoad = Callable[[list[int]], Awaitable[Sequence[Any]]]
Row = TypeVar("Row", bound=BaseModel)
# A db/ read of the rows of several ids, e.g. `db.channels.channels_by_ids`.
FetchByIds = Callable[[asyncpg.Connection, list[int]], Awaitable[list[Row]]]


def _by_id(pool: asyncpg.Pool, fetch: FetchByIds[Row], key: str = "id") -> BatchLoad:
    async def load(ids: list[int]) -> list[Row | None]:
        async with pool.acquire() as connection:
            rows = await fetch(connection, ids)
        found = {getattr(row, key): row for row in rows}
        return [found.get(i) for i in ids]

    return load


def _grouped(pool: asyncpg.Pool, item: type[DigestItem]) -> BatchLoad:
    """Digest id → its items of one section, in order."""

    async def load(ids: list[int]) -> list[list[DigestItem]]:
        async with pool.acquire() as connection:
            rows = await digests.items_of_digests(connection, item, ids)
        groups: dict[int, list[DigestItem]] = defaultdict(list)
        for row in rows:
            groups[row.digest_id].append(row)
        return [groups.get(i, []) for i in ids]

    return load


def _message_counts(pool: asyncpg.Pool) -> BatchLoad:
    async def load(ids: list[int]) -> list[int]:
        async with pool.acquire() as connection:
            rows = await channels.channel_message_counts(connection, ids)
        counts = {row.channel_id: row.message_count for row in rows}
        return [counts.get(i, 0) for i in ids]

    return load


def _uncovered_counts(pool: asyncpg.Pool) -> BatchLoad:
    async def load(ids: list[int]) -> list[int]:
        async with pool.acquire() as connection:
            rows = await channels.channel_uncovered_counts(connection, ids)
        counts = {row.channel_id: row.uncovered for row in rows}
        return [counts.get(i, 0) for i in ids]

    return load


def _revision_texts(pool: asyncpg.Pool) -> Callable[[list[tuple[int, int]]], Awaitable[list[str | None]]]:
    """(message id, revision) → that revision's normalized text."""

    async def load(keys: list[tuple[int, int]]) -> list[str | None]:
        async with pool.acquire() as connection:
            rows = await channels.revision_texts(
                connection, [k[0] for k in keys], [k[1] for k in keys]
            )
        texts = {(row.message_id, row.revision): row.normalized_text for row in rows}
        return [texts.get(key) for key in keys]

    return load


def _edited_messages(pool: asyncpg.Pool) -> BatchLoad:
    """Digest id → external ids of the messages it read that were edited since."""

    async def load(ids: list[int]) -> list[frozenset[str]]:
        async with pool.acquire() as connection:
            rows = await digests.edited_messages_of_digests(connection, ids)
        groups: dict[int, set[str]] = defaultdict(set)
        for row in rows:
            groups[row.digest_id].add(row.external_id)
        return [frozenset(groups.get(i, ())) for i in ids]

    return load


LATEST_DIGESTS_PER_DOCUMENT = 10


def _latest_document_digests(pool: asyncpg.Pool) -> BatchLoad:
    async def load(ids: list[int]) -> list[list[DocumentDigest]]:
        async with pool.acquire() as connection:
            rows = await documents.latest_digests_of_documents(
                connection, ids, LATEST_DIGESTS_PER_DOCUMENT
            )
        groups: dict[int, list[DocumentDigest]] = defaultdict(list)
        for row in rows:
            groups[row.document_id].append(row)
        return [groups.get(i, []) for i in ids]

    return load


@dataclass
class Loaders:
    channel: DataLoader[int, ChannelWithServer | None]
    message: DataLoader[int, Message | None]
    digest: DataLoader[int, Digest | None]
    job: DataLoader[int, DigestJob | None]
    message_count: DataLoader[int, int]
    item_counts: DataLoader[int, DigestItemCounts | None]
    topics: DataLoader[int, list[Topic]]
    decisions: DataLoader[int, list[Decision]]
    action_items: DataLoader[int, list[ActionItem]]
    open_questions: DataLoader[int, list[OpenQuestion]]
    links: DataLoader[int, list[Link]]
    artifacts: DataLoader[int, list[ArtifactWithMessage]]
    knowledge_items: DataLoader[int, list[KnowledgeItemWithMessage]]
    document: DataLoader[int, Document | None]
    document_digest: DataLoader[int, DocumentDigest | None]
    latest_document_digests: DataLoader[int, list[DocumentDigest]]
    uncovered_count: DataLoader[int, int]
    revision_text: DataLoader[tuple[int, int], str | None]
    edited_messages: DataLoader[int, frozenset[str]]


def create_loaders(pool: asyncpg.Pool) -> Loaders:
    return Loaders(
        channel=DataLoader(_by_id(pool, channels.channels_by_ids)),
        message=DataLoader(_by_id(pool, channels.messages_by_ids)),
        digest=DataLoader(_by_id(pool, digests.digests_by_ids)),
        job=DataLoader(_by_id(pool, jobs.jobs_by_ids)),
        message_count=DataLoader(_message_counts(pool)),
        item_counts=DataLoader(_by_id(pool, digests.digest_item_counts, key="digest_id")),
        topics=DataLoader(_grouped(pool, Topic)),
        decisions=DataLoader(_grouped(pool, Decision)),
        action_items=DataLoader(_grouped(pool, ActionItem)),
        open_questions=DataLoader(_grouped(pool, OpenQuestion)),
        links=DataLoader(_grouped(pool, Link)),
        artifacts=DataLoader(_grouped(pool, ArtifactWithMessage)),
        knowledge_items=DataLoader(_grouped(pool, KnowledgeItemWithMessage)),
        document=DataLoader(_by_id(pool, documents.documents_by_ids)),
        document_digest=DataLoader(_by_id(pool, documents.document_digests_by_ids)),
        latest_document_digests=DataLoader(_latest_document_digests(pool)),
        uncovered_count=DataLoader(_uncovered_counts(pool)),
        revision_text=DataLoader(_revision_texts(pool)),
        edited_messages=DataLoader(_edited_messages(pool)),
    )
