"""The typed rows match the schema: every table the migrations create has a SQLModel class
with the same columns, types, nullability and primary key, and every query or keyset list
whose rows become a model returns exactly that model's fields."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from pydantic import BaseModel
from sqlalchemy import Table
from sqlalchemy.dialects import registry
from sqlmodel import SQLModel

import db.models as models
from db import pages
from db.queries import QUERIES

# The PostgreSQL dialect, to compile a model's column types as the migrations spell them.
POSTGRES = registry.load("postgresql")()

# Created by db/migrate.py to record applied migrations, not by a migration: not a data table.
BOOKKEEPING_TABLES = {"schema_migrations"}

# SQLModel declares `str` as VARCHAR without a length, which Postgres stores as text.
_TYPE_ALIASES = {"varchar": "text", "varchar[]": "text[]"}

# Column: (type, nullable, part of the primary key).
Column = tuple[str, bool, bool]

_DATABASE_COLUMNS = """
SELECT c.relname AS table_name, a.attname AS column_name,
       format_type(a.atttypid, a.atttypmod) AS data_type, NOT a.attnotnull AS nullable,
       coalesce(a.attnum = ANY(i.indkey), false) AS primary_key
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
"""


async def _database_tables(pool: asyncpg.Pool) -> dict[str, dict[str, Column]]:
    tables: dict[str, dict[str, Column]] = {}
    async with pool.acquire() as connection:
        for record in await connection.fetch(_DATABASE_COLUMNS):
            if record["table_name"] in BOOKKEEPING_TABLES:
                continue
            tables.setdefault(record["table_name"], {})[record["column_name"]] = (
                record["data_type"],
                record["nullable"],
                record["primary_key"],
            )
    return tables


def _model_type(table: Table, name: str) -> str:
    compiled = table.columns[name].type.compile(dialect=POSTGRES).lower()
    return _TYPE_ALIASES.get(compiled, compiled)


def _model_tables() -> dict[str, dict[str, Column]]:
    return {
        table.name: {
            column.name: (
                _model_type(table, column.name),
                bool(column.nullable),
                column.primary_key,
            )
            for column in table.columns
        }
        for table in SQLModel.metadata.tables.values()
    }


def _column_diff(table: str, database: dict[str, Column], model: dict[str, Column]) -> list[str]:
    lines = [
        f"{table}.{name}: only in the migrations {database[name]}"
        for name in sorted(set(database) - set(model))
    ]
    lines += [
        f"{table}.{name}: only in the model {model[name]}"
        for name in sorted(set(model) - set(database))
    ]
    for name in sorted(set(database) & set(model)):
        if database[name] != model[name]:
            lines.append(
                f"{table}.{name}: migrations (type, nullable, pk) = {database[name]}, "
                f"model = {model[name]}"
            )
    return lines


async def test_every_migration_table_has_a_model_and_every_model_a_table(
    db: asyncpg.Pool,
) -> None:
    database, model = set(await _database_tables(db)), set(_model_tables())
    assert database - model == set(), f"tables without a model: {sorted(database - model)}"
    assert model - database == set(), f"models without a table: {sorted(model - database)}"


async def test_models_have_the_columns_types_and_nullability_of_the_migrations(
    db: asyncpg.Pool,
) -> None:
    database, model = await _database_tables(db), _model_tables()
    diff = [
        line
        for table in sorted(set(database) & set(model))
        for line in _column_diff(table, database[table], model[table])
    ]
    assert diff == [], "models differ from the migrations:\n" + "\n".join(diff)


def test_the_comparison_reports_a_differing_column() -> None:
    """The diff is not vacuous: a changed type, nullability and a missing column all show."""
    database = {"id": ("bigint", False, True), "name": ("text", False, False)}
    model = {"id": ("integer", False, True), "title": ("text", True, False)}
    assert _column_diff("t", database, model) == [
        "t.name: only in the migrations ('text', False, False)",
        "t.title: only in the model ('text', True, False)",
        "t.id: migrations (type, nullable, pk) = ('bigint', False, True), "
        "model = ('integer', False, True)",
    ]


# The named queries whose rows db/ turns into a model, and that model.
QUERY_MODELS: dict[str, type[BaseModel]] = {
    "upsert_channel": models.Channel,
    "channel_by_id": models.ChannelWithServer,
    "channels_by_ids": models.ChannelWithServer,
    "channel_by_name": models.ChannelWithServer,
    "channels_named": models.ChannelWithServer,
    "channel_overviews": models.ChannelOverview,
    "channel_message_counts": models.ChannelMessageCount,
    "channel_uncovered_counts": models.ChannelUncoveredCount,
    "messages_by_ids": models.Message,
    "message_fields_by_ids": models.MessageFields,
    "message_raw_texts": models.MessageText,
    "message_normalized_texts": models.MessageText,
    "messages_by_external_ids": models.Message,
    "window_messages": models.WindowMessageRow,
    "catch_up_messages": models.WindowMessageRow,
    "uncovered_after": models.MessageRange,
    "catch_up_after": models.MessageRange,
    "uncovered_slice_bounds": models.SliceBound,
    "slice_messages": models.WindowMessageRow,
    "uncovered_in_slice_after": models.MessageRange,
    "slices_of_batch": models.DigestJob,
    "revision_texts": models.RevisionText,
    "edited_messages_of_digests": models.EditedMessage,
    "cover_messages": models.MessageId,
    "thread_and_cover_messages": models.MessageId,
    "insert_channel_job": models.DigestJob,
    "active_channel_job": models.DigestJob,
    "insert_document_job": models.DigestJob,
    "active_document_job": models.DigestJob,
    "claim_next_job": models.DigestJob,
    "release_job": models.DigestJob,
    "finish_job": models.DigestJob,
    "fail_job": models.DigestJob,
    "cancel_job": models.DigestJob,
    "job_by_id": models.DigestJob,
    "jobs_by_ids": models.DigestJob,
    "digest_by_id": models.Digest,
    "digests_by_ids": models.Digest,
    "latest_digest_of_channel": models.Digest,
    "latest_digests_of_channels": models.Digest,
    "digest_item_counts": models.DigestItemCounts,
    "topics_of_digests": models.Topic,
    "decisions_of_digests": models.Decision,
    "action_items_of_digests": models.ActionItem,
    "open_questions_of_digests": models.OpenQuestion,
    "links_of_digests": models.Link,
    "artifacts_of_digests": models.ArtifactWithMessage,
    "knowledge_items_of_digests": models.KnowledgeItemWithMessage,
    "insert_document": models.StoredDocument,
    "document_by_id": models.Document,
    "documents_by_ids": models.Document,
    "document_digests_by_ids": models.DocumentDigest,
    "latest_digests_of_documents": models.DocumentDigest,
    "report_digest_items": models.ReportDigestItem,
    "messages_before": models.ThreadContextRow,
    "message_conversations": models.MessageConversation,
    "conversations_by_ids": models.ConversationWithState,
    "authors_of_cited_messages": models.CitedAuthor,
    "open_channel_items": models.ChannelItem,
    "digest_item_rows": models.DigestItemRow,
    "channel_items_by_ids": models.ChannelItem,
    "open_item_counts_of_channels": models.ChannelOpenItemCounts,
    "events_of_channel_items": models.ChannelItemEventWithMessage,
    "mentions_of_channel_items": models.CountedItemMention,
    "upsert_entities": models.StoredEntityKey,
    "upsert_topic_profiles": models.StoredProfileKey,
    "entities_by_ids": models.Entity,
    "topic_profiles_by_ids": models.TopicProfile,
    "entity_item_refs_of": models.OwnedItemRef,
    "topic_profile_items_of": models.OwnedItemRef,
    "entity_digests_of": models.OwnedDigestMention,
    "topic_profile_digests_of": models.OwnedDigestMention,
    "topic_profile_trends": models.TrendPoint,
    "insert_schedule": models.Schedule,
    "schedules_by_ids": models.Schedule,
    "schedule_for_update": models.Schedule,
    "pause_schedule": models.Schedule,
    "resume_schedule": models.Schedule,
    "delete_schedule": models.Schedule,
    "due_schedules": models.DueSchedule,
    "person_named": models.Person,
    "person_of_handle": models.Person,
    "insert_person": models.Person,
    "people_by_ids": models.Person,
    "handles_of_people": models.PersonHandle,
    "insert_person_handle": models.PersonHandle,
    "handle_of_scope": models.PersonHandle,
    "read_markers_of": models.ReadMarker,
    "set_read_marker": models.ReadMarker,
    "catch_up_mentions": models.CatchUpMessage,
    "catch_up_items": models.CatchUpItem,
    "insert_destination": models.Destination,
    "delete_destination": models.Destination,
    "destinations_by_ids": models.Destination,
    "destinations_by_names": models.Destination,
    "claim_deliveries": models.Delivery,
    "delivery_target": models.DeliveryTarget,
    "mark_delivered": models.Delivery,
    "mark_retry": models.Delivery,
    "mark_dead": models.Delivery,
    "retry_dead_delivery": models.DeliveryListing,
    "deliveries_by_ids": models.DeliveryListing,
    "delivery_state_counts": models.DeliveryStateCount,
    "destinations_of_schedules": models.ScheduleDestinationRow,
}


async def _columns_of(pool: asyncpg.Pool, sql: str) -> list[str]:
    """The result columns of `sql`, from the server's description of it (nothing is run)."""
    async with pool.acquire() as connection:
        statement = await connection.prepare(sql)
        return [attribute.name for attribute in statement.get_attributes()]


@pytest.mark.parametrize("query", sorted(QUERY_MODELS))
async def test_each_query_returns_the_fields_of_its_model(db: asyncpg.Pool, query: str) -> None:
    columns = await _columns_of(db, QUERIES[query])
    assert len(columns) == len(set(columns)), f"{query} returns a column twice: {columns}"
    assert sorted(columns) == sorted(QUERY_MODELS[query].model_fields)


@pytest.mark.parametrize(
    "spec",
    [
        pages.DIGESTS,
        pages.JOBS,
        pages.KNOWLEDGE_ITEMS,
        pages.MESSAGES,
        pages.CHANNELS,
        pages.DOCUMENTS,
        pages.REPORTS,
        pages.CONVERSATIONS,
        pages.CHANNEL_ITEMS,
        pages.ENTITIES,
        pages.TOPIC_PROFILES,
        pages.SCHEDULES,
        pages.PEOPLE,
        pages.DESTINATIONS,
        pages.DELIVERIES,
    ],
    ids=lambda spec: spec.name,
)
async def test_each_keyset_list_returns_the_fields_of_its_model(
    db: asyncpg.Pool, spec: pages.ListSpec[Any]
) -> None:
    columns = await _columns_of(db, spec.select)
    assert len(columns) == len(set(columns)), f"{spec.name} returns a column twice: {columns}"
    assert sorted(columns) == sorted(spec.model.model_fields)
