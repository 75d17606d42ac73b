"""Store a digest's entities and topic profiles (runner/entities/digest.py) in the digest's
store transaction: the channel's entities and profiles (counts added), which messages of this
digest mention each entity, which items name it, and where each profile appears.

A catch-up digest re-reads messages a coverage digest already counted: it records its own
mentions, items and profile appearances but adds nothing to the channel's counts. Called by
runner/digests/store.py after the window's conversations are written, so a profile's appearance
records the conversations of its messages.
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

from db import entities as entity_queries
from runner.core.window import StoredWindow
from runner.entities.digest import DigestEntities


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


async def store_entities(
    connection: asyncpg.Connection,
    *,
    digest_id: int,
    channel_id: int,
    analysis: DigestEntities,
    window: StoredWindow,
) -> None:
    counted = not window.catch_up
    # Rows in key order: a catch-up and a coverage digest of one channel may upsert at once,
    # and the same lock order on both sides keeps them from deadlocking.
    rows = [
        {
            "key": entity.key,
            "name": entity.name[:200],
            "kind": entity.kind.value,
            "aliases": [alias[:200] for alias in entity.aliases],
            "versions": entity.versions,
            "mentions": entity.mention_count if counted else 0,
            "first_seen": _iso(entity.first_seen),
            "last_seen": _iso(entity.last_seen),
        }
        for entity in sorted(analysis.entities.values(), key=lambda entity: entity.key)
    ]
    ids = await entity_queries.upsert_entities(connection, channel_id, digest_id, rows)
    await entity_queries.insert_entity_mentions(
        connection,
        digest_id,
        [
            {
                "entity_id": ids[e.key],
                "message_ids": [window.internal_ids[m] for m in e.message_ids],
            }
            for e in analysis.entities.values()
            if e.message_ids
        ],
    )
    await entity_queries.insert_entity_item_refs(
        connection,
        digest_id,
        [
            (ids[key], kind, position)
            for key, refs in analysis.item_refs.items()
            for kind, position in refs
        ],
    )
    groups = sorted(
        (group for group in analysis.topics if group.first_seen and group.last_seen),
        key=lambda group: group.key,
    )
    profile_ids = await entity_queries.upsert_topic_profiles(
        connection,
        channel_id,
        [
            {
                "key": group.key,
                "title": group.title,
                "first_seen": _iso(group.first_seen),
                "last_seen": _iso(group.last_seen),
                "mentions": len(group.message_ids) if counted else 0,
            }
            for group in groups
        ],
    )
    await entity_queries.insert_topic_profile_digests(
        connection,
        digest_id,
        [
            {
                "profile_id": profile_ids[group.key],
                "topic_positions": group.positions,
                "message_ids": [window.internal_ids[m] for m in group.message_ids],
            }
            for group in groups
        ],
    )
    await entity_queries.insert_topic_profile_items(
        connection,
        digest_id,
        [
            (profile_ids[group.key], kind, position)
            for group in groups
            for kind, position in group.items
        ],
    )
