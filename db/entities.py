"""Entities and topic profiles in Postgres: a digest's writes (in its store transaction,
runner/entities/store.py) and the batched reads of the API's DataLoaders.

The SQL is in db/queries.sql (`upsert_entities`, `insert_entity_mentions`, ...). Rows of
variable-length arrays travel as one JSON parameter (`jsonb_to_recordset`), so each write is
one statement whatever the number of entities.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from db.models import (
    Entity,
    OwnedDigestMention,
    OwnedItemRef,
    StoredEntityKey,
    StoredProfileKey,
    TopicProfile,
    TrendPoint,
    as_rows,
)
from db.queries import QUERIES

# (owner id: entity or profile, item kind, position in its digest's section)
ItemRefRows = list[tuple[int, str, int]]


async def upsert_entities(
    connection: asyncpg.Connection, channel_id: int, digest_id: int, rows: list[dict[str, Any]]
) -> dict[str, int]:
    """Add a digest's entities to its channel's; rows: {key, name, kind, aliases, versions,
    mentions, first_seen, last_seen} (times as ISO strings). Returns entity id by key."""
    if not rows:
        return {}
    records = await connection.fetch(QUERIES["upsert_entities"], channel_id, digest_id, rows)
    return {row.key: row.id for row in as_rows(StoredEntityKey, records)}


async def insert_entity_mentions(
    connection: asyncpg.Connection, digest_id: int, rows: list[dict[str, Any]]
) -> None:
    """rows: {entity_id, message_ids (messages rows)}."""
    if rows:
        await connection.execute(QUERIES["insert_entity_mentions"], digest_id, rows)


async def _insert_refs(
    connection: asyncpg.Connection, query: str, digest_id: int, refs: ItemRefRows
) -> None:
    if refs:
        await connection.execute(
            QUERIES[query],
            digest_id,
            [r[0] for r in refs],
            [r[1] for r in refs],
            [r[2] for r in refs],
        )


async def insert_entity_item_refs(
    connection: asyncpg.Connection, digest_id: int, refs: ItemRefRows
) -> None:
    await _insert_refs(connection, "insert_entity_item_refs", digest_id, refs)


async def upsert_topic_profiles(
    connection: asyncpg.Connection, channel_id: int, rows: list[dict[str, Any]]
) -> dict[str, int]:
    """rows: {key, title, mentions, first_seen, last_seen}. Returns profile id by key."""
    if not rows:
        return {}
    records = await connection.fetch(QUERIES["upsert_topic_profiles"], channel_id, rows)
    return {row.key: row.id for row in as_rows(StoredProfileKey, records)}


async def insert_topic_profile_digests(
    connection: asyncpg.Connection, digest_id: int, rows: list[dict[str, Any]]
) -> None:
    """rows: {profile_id, topic_positions, message_ids (messages rows)}."""
    if rows:
        await connection.execute(QUERIES["insert_topic_profile_digests"], digest_id, rows)


async def insert_topic_profile_items(
    connection: asyncpg.Connection, digest_id: int, refs: ItemRefRows
) -> None:
    await _insert_refs(connection, "insert_topic_profile_items", digest_id, refs)


async def entities_by_ids(connection: asyncpg.Connection, ids: list[int]) -> list[Entity]:
    return as_rows(Entity, await connection.fetch(QUERIES["entities_by_ids"], ids))


async def topic_profiles_by_ids(
    connection: asyncpg.Connection, ids: list[int]
) -> list[TopicProfile]:
    return as_rows(TopicProfile, await connection.fetch(QUERIES["topic_profiles_by_ids"], ids))


async def entity_item_refs(connection: asyncpg.Connection, ids: list[int]) -> list[OwnedItemRef]:
    return as_rows(OwnedItemRef, await connection.fetch(QUERIES["entity_item_refs_of"], ids))


async def topic_profile_items(connection: asyncpg.Connection, ids: list[int]) -> list[OwnedItemRef]:
    return as_rows(OwnedItemRef, await connection.fetch(QUERIES["topic_profile_items_of"], ids))


async def entity_digests(
    connection: asyncpg.Connection, ids: list[int]
) -> list[OwnedDigestMention]:
    records = await connection.fetch(QUERIES["entity_digests_of"], ids)
    return as_rows(OwnedDigestMention, records)


async def topic_profile_digests(
    connection: asyncpg.Connection, ids: list[int]
) -> list[OwnedDigestMention]:
    records = await connection.fetch(QUERIES["topic_profile_digests_of"], ids)
    return as_rows(OwnedDigestMention, records)


async def topic_profile_trends(connection: asyncpg.Connection, ids: list[int]) -> list[TrendPoint]:
    return as_rows(TrendPoint, await connection.fetch(QUERIES["topic_profile_trends"], ids))


async def entity_trends(connection: asyncpg.Connection, ids: list[int]) -> list[TrendPoint]:
    return as_rows(TrendPoint, await connection.fetch(QUERIES["entity_trends"], ids))
