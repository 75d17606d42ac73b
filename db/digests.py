"""Channel digests in Postgres: insert a digest with its items and the messages it read, the
chunk-result cache of the map step (and its retention pass), and the reads the API and the CLI render from.

Parameters are passed in the column order of the named queries in db/queries.sql; which values
a validated digest maps to is runner/digests/store.py's business.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, TypeVar

import asyncpg
from sqlmodel import SQLModel

from db.models import (
    ActionItem,
    ArtifactWithMessage,
    CitedAuthor,
    Decision,
    Digest,
    DigestItemCounts,
    EditedMessage,
    KnowledgeItemWithMessage,
    Link,
    OpenQuestion,
    Topic,
    as_row_or_none,
    as_rows,
)
from db.queries import QUERIES

# The item tables written row by row (`insert_<name>` in queries.sql).
ItemTable = Literal["topic", "decision", "action_item", "open_question", "link", "artifact"]
# The items of a digest, one model per section; `items_of_digests` reads any of them.
DigestItem = TypeVar(
    "DigestItem",
    Topic,
    Decision,
    ActionItem,
    OpenQuestion,
    Link,
    ArtifactWithMessage,
    KnowledgeItemWithMessage,
)
_ITEM_QUERIES: dict[type[SQLModel], str] = {
    Topic: "topics_of_digests",
    Decision: "decisions_of_digests",
    ActionItem: "action_items_of_digests",
    OpenQuestion: "open_questions_of_digests",
    Link: "links_of_digests",
    ArtifactWithMessage: "artifacts_of_digests",
    KnowledgeItemWithMessage: "knowledge_items_of_digests",
}


async def insert_digest(connection: asyncpg.Connection, *values: Any) -> int:
    """Insert a digest row; `values` in the column order of `insert_digest`. Returns its id."""
    row = await connection.fetchrow(QUERIES["insert_digest"], *values)
    assert row is not None  # an INSERT ... RETURNING without conflict handling
    return int(row["id"])


async def insert_items(
    connection: asyncpg.Connection, table: ItemTable, rows: Iterable[Sequence[Any]]
) -> None:
    """Insert the rows of one item table (`insert_topic`, `insert_decision`, ...)."""
    await connection.executemany(QUERIES[f"insert_{table}"], rows)


async def insert_knowledge_item(connection: asyncpg.Connection, *values: Any) -> int:
    """Insert a knowledge item; `values` in the column order of `insert_knowledge_item`."""
    item_id: int = await connection.fetchval(QUERIES["insert_knowledge_item"], *values)
    return item_id


async def link_knowledge_item(
    connection: asyncpg.Connection, item_id: int, supersedes: int | None, conflicts: int | None
) -> None:
    await connection.execute(QUERIES["link_knowledge_item"], item_id, supersedes, conflicts)


async def insert_digest_messages(
    connection: asyncpg.Connection, digest_id: int, message_ids: list[int], revisions: list[int]
) -> None:
    """Record which messages, at which revisions, the digest read."""
    await connection.execute(QUERIES["insert_digest_messages"], digest_id, message_ids, revisions)


async def set_digest_left_out(
    connection: asyncpg.Connection, digest_id: int, left_out: list[dict[str, Any]]
) -> None:
    await connection.execute(QUERIES["set_digest_left_out"], digest_id, left_out)


async def set_digest_prose(
    connection: asyncpg.Connection,
    digest_id: int,
    overview: list[dict[str, Any]],
    highlights: list[dict[str, Any]],
    audit: dict[str, Any],
) -> None:
    """Store the cited sentences and the citation audit of a digest."""
    await connection.execute(QUERIES["set_digest_prose"], digest_id, overview, highlights, audit)


async def set_digest_periods(
    connection: asyncpg.Connection, digest_id: int, periods: list[dict[str, Any]]
) -> None:
    """Store the periods of a multi-day digest, each with its cited sentences."""
    await connection.execute(QUERIES["set_digest_periods"], digest_id, periods)


async def digest_by_window_key(connection: asyncpg.Connection, window_key: str) -> int | None:
    """The id of a stored digest of exactly the same messages, revisions and settings."""
    digest_id: int | None = await connection.fetchval(QUERIES["digest_by_window_key"], window_key)
    return digest_id


async def load_chunk_result(connection: asyncpg.Connection, cache_key: str) -> Any | None:
    """The cached map result (its JSON) under `cache_key`, touching its last use; None if absent."""
    row = await connection.fetchrow(QUERIES["load_chunk_result"], cache_key)
    return None if row is None else row["summary"]


async def save_chunk_result(
    connection: asyncpg.Connection, cache_key: str, extractor: str, summary: dict[str, Any]
) -> None:
    await connection.execute(QUERIES["save_chunk_result"], cache_key, extractor, summary)


async def prune_chunk_results(
    connection: asyncpg.Connection, retention_days: float, limit: int
) -> int:
    """Delete up to `limit` cached map results unused for more than `retention_days`; how many."""
    deleted: int = await connection.fetchval(QUERIES["prune_chunk_results"], retention_days, limit)
    return deleted


async def digest_by_id(connection: asyncpg.Connection, digest_id: int) -> Digest | None:
    return as_row_or_none(Digest, await connection.fetchrow(QUERIES["digest_by_id"], digest_id))


async def latest_digest_of_channel(
    connection: asyncpg.Connection, channel_id: int
) -> Digest | None:
    record = await connection.fetchrow(QUERIES["latest_digest_of_channel"], channel_id)
    return as_row_or_none(Digest, record)


async def latest_digests_of_channels(
    connection: asyncpg.Connection, channel_ids: list[int]
) -> list[Digest]:
    """The newest digest of each channel that has one, in one statement."""
    records = await connection.fetch(QUERIES["latest_digests_of_channels"], channel_ids)
    return as_rows(Digest, records)


async def digests_by_ids(connection: asyncpg.Connection, ids: list[int]) -> list[Digest]:
    return as_rows(Digest, await connection.fetch(QUERIES["digests_by_ids"], ids))


async def digest_item_counts(
    connection: asyncpg.Connection, ids: list[int]
) -> list[DigestItemCounts]:
    return as_rows(DigestItemCounts, await connection.fetch(QUERIES["digest_item_counts"], ids))


async def items_of_digests(
    connection: asyncpg.Connection, item: type[DigestItem], ids: list[int]
) -> list[DigestItem]:
    """The items of one section (`item`: Topic, Decision, ...) of several digests, ordered by
    digest and position."""
    records = await connection.fetch(QUERIES[_ITEM_QUERIES[item]], ids)
    return as_rows(item, records)


async def knowledge_items_by_ids(
    connection: asyncpg.Connection, ids: list[int]
) -> list[KnowledgeItemWithMessage]:
    records = await connection.fetch(QUERIES["knowledge_items_by_ids"], ids)
    return as_rows(KnowledgeItemWithMessage, records)


async def authors_of_cited_messages(
    connection: asyncpg.Connection, keys: list[tuple[int, str]]
) -> list[CitedAuthor]:
    """The authors of (digest id, external message id) pairs, for the messages that exist."""
    records = await connection.fetch(
        QUERIES["authors_of_cited_messages"], [k[0] for k in keys], [k[1] for k in keys]
    )
    return as_rows(CitedAuthor, records)


async def edited_messages_of_digests(
    connection: asyncpg.Connection, ids: list[int]
) -> list[EditedMessage]:
    """The messages each digest read that were edited since."""
    records = await connection.fetch(QUERIES["edited_messages_of_digests"], ids)
    return as_rows(EditedMessage, records)
