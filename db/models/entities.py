"""Entities and topic profiles (db/migrations/0010_entities.sql), and the projections the API
reads of them."""

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Integer
from sqlalchemy.dialects.postgresql import ARRAY
from sqlmodel import Field, SQLModel

from db.models.columns import bigint, text_array, timestamptz


def _bigint_array() -> Any:
    return Field(sa_type=ARRAY(BigInteger))


def _integer_array() -> Any:
    return Field(sa_type=ARRAY(Integer))


class Entity(SQLModel, table=True):
    __tablename__ = "entities"

    id: int = bigint(primary_key=True)
    channel_id: int = bigint()
    name: str
    mention_count: int
    last_digest_id: int | None = bigint()
    key: str
    kind: str
    aliases: list[str] = text_array()
    versions: list[str] = text_array()
    first_seen: datetime | None = timestamptz()
    last_seen: datetime | None = timestamptz()
    created_at: datetime = timestamptz()


class EntityMention(SQLModel, table=True):
    __tablename__ = "entity_mentions"

    entity_id: int = bigint(primary_key=True)
    digest_id: int = bigint(primary_key=True)
    message_ids: list[int] = _bigint_array()


class EntityItemRef(SQLModel, table=True):
    __tablename__ = "entity_item_refs"

    entity_id: int = bigint(primary_key=True)
    digest_id: int = bigint(primary_key=True)
    item_kind: str = Field(primary_key=True)
    position: int = Field(primary_key=True)


class TopicProfile(SQLModel, table=True):
    __tablename__ = "topic_profiles"

    id: int = bigint(primary_key=True)
    channel_id: int = bigint()
    key: str
    title: str
    mention_count: int
    first_seen: datetime = timestamptz()
    last_seen: datetime = timestamptz()
    created_at: datetime = timestamptz()


class TopicProfileDigest(SQLModel, table=True):
    __tablename__ = "topic_profile_digests"

    profile_id: int = bigint(primary_key=True)
    digest_id: int = bigint(primary_key=True)
    topic_positions: list[int] = _integer_array()
    message_ids: list[int] = _bigint_array()
    conversation_ids: list[int] = _bigint_array()


class TopicProfileItem(SQLModel, table=True):
    __tablename__ = "topic_profile_items"

    profile_id: int = bigint(primary_key=True)
    digest_id: int = bigint(primary_key=True)
    item_kind: str = Field(primary_key=True)
    position: int = Field(primary_key=True)


class StoredEntityKey(SQLModel):
    """An upserted entity's id by its key (`upsert_entities`)."""

    id: int
    key: str


class StoredProfileKey(SQLModel):
    """An upserted topic profile's id by its key (`upsert_topic_profiles`)."""

    id: int
    key: str


class OwnedItemRef(SQLModel):
    """A digest item referring to an entity or belonging to a topic profile, by its owner's id
    (`owner_id`: the entity or the profile; `owner_total`: how many items the owner has in all,
    of which the query returns the newest 200)."""

    owner_id: int
    digest_id: int
    item_kind: str
    position: int
    owner_total: int


class OwnedDigestMention(SQLModel):
    """A digest where an entity or a profile appears: the external ids of its messages there
    (the first 1,000 in time order; `message_count` counts them all), and the conversations
    (profiles only)."""

    owner_id: int
    digest_id: int
    message_ids: list[str] = text_array()
    message_count: int
    # How many digests the owner appears in, of which the query returns the latest 100.
    owner_total: int
    conversation_ids: list[int] = _bigint_array()
    created_at: datetime = timestamptz()


class TrendPoint(SQLModel):
    """Messages of an entity or a profile in one ISO week (`2024-W18`)."""

    owner_id: int
    week: str
    mentions: int
