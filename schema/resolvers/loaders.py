"""DataLoaders, created per request in the context getter: each batches the keys one GraphQL
request asks for into a single query, so a page of 100 digests costs a handful of queries."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar, overload

import asyncpg
from pydantic import BaseModel
from strawberry.dataloader import DataLoader

from db import (
    channel_items,
    channels,
    conversations,
    deliveries,
    digests,
    documents,
    entities,
    jobs,
    people,
    reports,
    schedules,
)
from db.digests import DigestItem
from db.models import (
    ActionItem,
    ArtifactWithMessage,
    ChannelItem,
    ChannelItemEventWithMessage,
    ChannelOpenItemCounts,
    ChannelWithServer,
    ConversationWithState,
    CountedItemMention,
    Decision,
    DeliveryListing,
    Destination,
    Digest,
    DigestItemCounts,
    DigestJob,
    Document,
    DocumentDigest,
    Entity,
    KnowledgeItemWithMessage,
    Link,
    MessageFields,
    MessageText,
    OpenQuestion,
    OwnedDigestMention,
    OwnedItemRef,
    Person,
    PersonHandle,
    Report,
    Schedule,
    ScheduleDestinationRow,
    Topic,
    TopicProfile,
    TrendPoint,
)

BatchLoad = Callable[[list[int]], Awaitable[Sequence[Any]]]
Row = TypeVar("Row", bound=BaseModel)
K = TypeVar("K")
V = TypeVar("V")
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


def _revision_texts(
    pool: asyncpg.Pool,
) -> Callable[[list[tuple[int, int]]], Awaitable[list[str | None]]]:
    """(message id, revision) → that revision's normalized text."""

    async def load(keys: list[tuple[int, int]]) -> list[str | None]:
        async with pool.acquire() as connection:
            rows = await channels.revision_texts(
                connection, [k[0] for k in keys], [k[1] for k in keys]
            )
        texts = {(row.message_id, row.revision): row.normalized_text for row in rows}
        return [texts.get(key) for key in keys]

    return load


def _cited_authors(
    pool: asyncpg.Pool,
) -> Callable[[list[tuple[int, str]]], Awaitable[list[str | None]]]:
    """(digest id, external message id) → who wrote that message."""

    async def load(keys: list[tuple[int, str]]) -> list[str | None]:
        async with pool.acquire() as connection:
            rows = await digests.authors_of_cited_messages(connection, keys)
        authors = {(row.digest_id, row.external_id): row.author for row in rows}
        return [authors.get(key) for key in keys]

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


def _group_rows(
    pool: asyncpg.Pool,
    fetch: Callable[[asyncpg.Connection, list[int]], Awaitable[list[V]]],
    key: Callable[[V], int],
) -> BatchLoad:
    """Id → the rows of `fetch` whose `key` is that id, in the query's order."""

    async def load(ids: list[int]) -> list[list[V]]:
        async with pool.acquire() as connection:
            rows = await fetch(connection, ids)
        groups: dict[int, list[V]] = defaultdict(list)
        for row in rows:
            groups[key(row)].append(row)
        return [groups.get(i, []) for i in ids]

    return load


class _Owned(Protocol):
    owner_id: int


Owned = TypeVar("Owned", bound=_Owned)


def _owned(
    pool: asyncpg.Pool, fetch: Callable[[asyncpg.Connection, list[int]], Awaitable[list[Owned]]]
) -> BatchLoad:
    """Owner id (an entity, a topic profile) → its rows, in the query's order."""
    return _group_rows(pool, fetch, lambda row: row.owner_id)


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


class _Loader(Generic[K, V]):
    """A DataLoader attribute of `Loaders`, built on first access: most requests use one or two
    of the loaders, and building all of them for every request was 15% of the CPU of a
    `job(id)` poll. After the first access the loader sits in the instance's `__dict__`, which
    Python looks up before this (non-data) descriptor, so later accesses cost nothing extra."""

    def __init__(
        self, batch_load: Callable[[asyncpg.Pool], Callable[[list[K]], Awaitable[Sequence[V]]]]
    ) -> None:
        self.batch_load = batch_load
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> _Loader[K, V]: ...
    @overload
    def __get__(self, instance: Loaders, owner: type) -> DataLoader[K, V]: ...
    def __get__(self, instance: Loaders | None, owner: type) -> _Loader[K, V] | DataLoader[K, V]:
        if instance is None:
            return self
        loader = DataLoader(self.batch_load(instance.pool))
        instance.__dict__[self.name] = loader
        return loader


def _texts(normalized: bool) -> FetchByIds[MessageText]:
    async def fetch(connection: asyncpg.Connection, ids: list[int]) -> list[MessageText]:
        return await channels.message_texts(connection, ids, normalized)

    return fetch


class Loaders:
    """The DataLoaders of one request (each made when a resolver first asks for it)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    channel: _Loader[int, ChannelWithServer | None] = _Loader(
        lambda pool: _by_id(pool, channels.channels_by_ids)
    )
    # Messages without their texts; each text is loaded only when a query asks for it.
    message: _Loader[int, MessageFields | None] = _Loader(
        lambda pool: _by_id(pool, channels.message_fields_by_ids)
    )
    message_text: _Loader[int, MessageText | None] = _Loader(
        lambda pool: _by_id(pool, _texts(normalized=False))
    )
    message_normalized_text: _Loader[int, MessageText | None] = _Loader(
        lambda pool: _by_id(pool, _texts(normalized=True))
    )
    digest: _Loader[int, Digest | None] = _Loader(lambda pool: _by_id(pool, digests.digests_by_ids))
    job: _Loader[int, DigestJob | None] = _Loader(lambda pool: _by_id(pool, jobs.jobs_by_ids))
    message_count: _Loader[int, int] = _Loader(_message_counts)
    item_counts: _Loader[int, DigestItemCounts | None] = _Loader(
        lambda pool: _by_id(pool, digests.digest_item_counts, key="digest_id")
    )
    topics: _Loader[int, list[Topic]] = _Loader(lambda pool: _grouped(pool, Topic))
    decisions: _Loader[int, list[Decision]] = _Loader(lambda pool: _grouped(pool, Decision))
    action_items: _Loader[int, list[ActionItem]] = _Loader(lambda pool: _grouped(pool, ActionItem))
    open_questions: _Loader[int, list[OpenQuestion]] = _Loader(
        lambda pool: _grouped(pool, OpenQuestion)
    )
    links: _Loader[int, list[Link]] = _Loader(lambda pool: _grouped(pool, Link))
    artifacts: _Loader[int, list[ArtifactWithMessage]] = _Loader(
        lambda pool: _grouped(pool, ArtifactWithMessage)
    )
    knowledge_items: _Loader[int, list[KnowledgeItemWithMessage]] = _Loader(
        lambda pool: _grouped(pool, KnowledgeItemWithMessage)
    )
    knowledge_item: _Loader[int, KnowledgeItemWithMessage | None] = _Loader(
        lambda pool: _by_id(pool, digests.knowledge_items_by_ids)
    )
    document: _Loader[int, Document | None] = _Loader(
        lambda pool: _by_id(pool, documents.documents_by_ids)
    )
    document_digest: _Loader[int, DocumentDigest | None] = _Loader(
        lambda pool: _by_id(pool, documents.document_digests_by_ids)
    )
    report: _Loader[int, Report | None] = _Loader(lambda pool: _by_id(pool, reports.reports_by_ids))
    conversation: _Loader[int, ConversationWithState | None] = _Loader(
        lambda pool: _by_id(pool, conversations.conversations_by_ids)
    )
    channel_item: _Loader[int, ChannelItem | None] = _Loader(
        lambda pool: _by_id(pool, channel_items.channel_items_by_ids)
    )
    item_history: _Loader[int, list[ChannelItemEventWithMessage]] = _Loader(
        lambda pool: _group_rows(
            pool, channel_items.events_of_channel_items, lambda row: row.item_id
        )
    )
    item_mentions: _Loader[int, list[CountedItemMention]] = _Loader(
        lambda pool: _group_rows(
            pool, channel_items.mentions_of_channel_items, lambda row: row.item_id
        )
    )
    schedule: _Loader[int, Schedule | None] = _Loader(
        lambda pool: _by_id(pool, schedules.schedules_by_ids)
    )
    person: _Loader[int, Person | None] = _Loader(lambda pool: _by_id(pool, people.people_by_ids))
    person_handles: _Loader[int, list[PersonHandle]] = _Loader(
        lambda pool: _group_rows(pool, people.handles_of_people, lambda row: row.person_id)
    )
    destination: _Loader[int, Destination | None] = _Loader(
        lambda pool: _by_id(pool, deliveries.destinations_by_ids)
    )
    delivery: _Loader[int, DeliveryListing | None] = _Loader(
        lambda pool: _by_id(pool, deliveries.deliveries_by_ids)
    )
    # By schedule id: the destinations a page of schedules delivers to, in one statement.
    schedule_destinations: _Loader[int, list[ScheduleDestinationRow]] = _Loader(
        lambda pool: _group_rows(
            pool, deliveries.destinations_of_schedules, lambda row: row.schedule_id
        )
    )
    latest_document_digests: _Loader[int, list[DocumentDigest]] = _Loader(_latest_document_digests)
    uncovered_count: _Loader[int, int] = _Loader(_uncovered_counts)
    # By channel id: one statement for a whole page of channels (Channel.lastDigest and
    # Channel.openItemCounts), where a page query per channel would grow with the page.
    last_digest: _Loader[int, Digest | None] = _Loader(
        lambda pool: _by_id(pool, digests.latest_digests_of_channels, key="channel_id")
    )
    open_item_counts: _Loader[int, ChannelOpenItemCounts | None] = _Loader(
        lambda pool: _by_id(pool, channel_items.open_item_counts_of_channels, key="channel_id")
    )
    revision_text: _Loader[tuple[int, int], str | None] = _Loader(_revision_texts)
    edited_messages: _Loader[int, frozenset[str]] = _Loader(_edited_messages)
    cited_author: _Loader[tuple[int, str], str | None] = _Loader(_cited_authors)
    entity: _Loader[int, Entity | None] = _Loader(
        lambda pool: _by_id(pool, entities.entities_by_ids)
    )
    topic_profile: _Loader[int, TopicProfile | None] = _Loader(
        lambda pool: _by_id(pool, entities.topic_profiles_by_ids)
    )
    entity_items: _Loader[int, list[OwnedItemRef]] = _Loader(
        lambda pool: _owned(pool, entities.entity_item_refs)
    )
    entity_digests: _Loader[int, list[OwnedDigestMention]] = _Loader(
        lambda pool: _owned(pool, entities.entity_digests)
    )
    topic_profile_items: _Loader[int, list[OwnedItemRef]] = _Loader(
        lambda pool: _owned(pool, entities.topic_profile_items)
    )
    topic_profile_digests: _Loader[int, list[OwnedDigestMention]] = _Loader(
        lambda pool: _owned(pool, entities.topic_profile_digests)
    )
    topic_profile_trend: _Loader[int, list[TrendPoint]] = _Loader(
        lambda pool: _owned(pool, entities.topic_profile_trends)
    )
    entity_trend: _Loader[int, list[TrendPoint]] = _Loader(
        lambda pool: _owned(pool, entities.entity_trends)
    )


def create_loaders(pool: asyncpg.Pool) -> Loaders:
    return Loaders(pool)
