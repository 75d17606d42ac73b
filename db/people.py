"""People, their handles and read markers in Postgres (0017), and the two reads a catch-up is
made of: the messages that may name a person, and the tracked items that may wait on them
(runner/catchup/store.py).

The SQL is in db/queries.sql (`person_named`, `insert_person_handle`, `catch_up_items`, ...).
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

from db.models import (
    CatchUpItem,
    CatchUpMessage,
    Person,
    PersonHandle,
    ReadMarker,
    as_row,
    as_row_or_none,
    as_rows,
)
from db.queries import QUERIES


async def person_named(connection: asyncpg.Connection, name: str) -> Person | None:
    return as_row_or_none(Person, await connection.fetchrow(QUERIES["person_named"], name))


async def person_of_handle(connection: asyncpg.Connection, handle_key: str) -> Person | None:
    record = await connection.fetchrow(QUERIES["person_of_handle"], handle_key)
    return as_row_or_none(Person, record)


async def insert_person(connection: asyncpg.Connection, name: str) -> Person:
    """The person of this name (case-insensitive), created when there is none."""
    return as_row(Person, await connection.fetchrow(QUERIES["insert_person"], name))


async def people_by_ids(connection: asyncpg.Connection, ids: list[int]) -> list[Person]:
    return as_rows(Person, await connection.fetch(QUERIES["people_by_ids"], ids))


async def handles_of_people(
    connection: asyncpg.Connection, person_ids: list[int]
) -> list[PersonHandle]:
    records = await connection.fetch(QUERIES["handles_of_people"], person_ids)
    return as_rows(PersonHandle, records)


async def insert_person_handle(
    connection: asyncpg.Connection,
    person_id: int,
    handle: str,
    handle_key: str,
    channel_id: int | None,
) -> PersonHandle | None:
    """The new handle, or None when the handle already names someone in that scope."""
    record = await connection.fetchrow(
        QUERIES["insert_person_handle"], person_id, handle, handle_key, channel_id
    )
    return as_row_or_none(PersonHandle, record)


async def handle_of_scope(
    connection: asyncpg.Connection, handle_key: str, channel_id: int | None
) -> PersonHandle | None:
    record = await connection.fetchrow(QUERIES["handle_of_scope"], handle_key, channel_id)
    return as_row_or_none(PersonHandle, record)


async def read_markers_of(connection: asyncpg.Connection, person_id: int) -> list[ReadMarker]:
    return as_rows(ReadMarker, await connection.fetch(QUERIES["read_markers_of"], person_id))


async def set_read_marker(
    connection: asyncpg.Connection, person_id: int, channel_id: int, until: datetime
) -> ReadMarker:
    """Move the marker to `until`, never back; the marker as it now is."""
    record = await connection.fetchrow(QUERIES["set_read_marker"], person_id, channel_id, until)
    return as_row(ReadMarker, record)


async def catch_up_mentions(
    connection: asyncpg.Connection,
    person_id: int | None,
    channel_ids: list[int] | None,
    since: datetime | None,
    default_since: datetime,
    prefilter: str,
    limit: int,
) -> list[CatchUpMessage]:
    records = await connection.fetch(
        QUERIES["catch_up_mentions"],
        person_id,
        channel_ids,
        since,
        default_since,
        prefilter,
        limit,
    )
    return as_rows(CatchUpMessage, records)


async def catch_up_items(
    connection: asyncpg.Connection,
    person_id: int | None,
    channel_ids: list[int] | None,
    since: datetime | None,
    default_since: datetime,
    limit: int,
) -> list[CatchUpItem]:
    records = await connection.fetch(
        QUERIES["catch_up_items"], person_id, channel_ids, since, default_since, limit
    )
    return as_rows(CatchUpItem, records)


async def catch_up_cited_messages(
    connection: asyncpg.Connection, pairs: list[tuple[int, str]]
) -> list[CatchUpMessage]:
    """The messages named by (channel id, external id) `pairs`, each once; a pair naming no
    message (deleted meanwhile) has none."""
    records = await connection.fetch(
        QUERIES["catch_up_cited_messages"],
        [channel_id for channel_id, _ in pairs],
        [external_id for _, external_id in pairs],
    )
    return as_rows(CatchUpMessage, records)
