"""Channel items, their mentions in digests and their state events
(db/migrations/0008_channel_items.sql)."""

from datetime import datetime

from sqlmodel import Field, SQLModel

from db.models.columns import bigint, text_array, timestamptz


class ChannelItem(SQLModel, table=True):
    __tablename__ = "channel_items"

    id: int = bigint(primary_key=True)
    channel_id: int = bigint()
    kind: str
    status: str
    text: str
    owner: str | None
    conversation_id: int | None = bigint()
    message_ids: list[str] = text_array()
    said_at: datetime = timestamptz()
    first_digest_id: int | None = bigint()
    last_digest_id: int | None = bigint()
    created_at: datetime = timestamptz()
    updated_at: datetime = timestamptz()


class ChannelItemMentionColumns(SQLModel):
    item_id: int = bigint(primary_key=True)
    digest_id: int = bigint(primary_key=True)
    row_id: int = bigint()
    position: int = Field(primary_key=True)
    created_at: datetime = timestamptz()


class ChannelItemMention(ChannelItemMentionColumns, table=True):
    __tablename__ = "channel_item_mentions"


class CountedItemMention(ChannelItemMentionColumns):
    """A mention of an item, with how many mentions the item has in all (`owner_total`; the
    query returns the latest 100 of them)."""

    owner_total: int


class ChannelItemEventColumns(SQLModel):
    id: int = bigint(primary_key=True)
    item_id: int = bigint()
    from_status: str | None
    to_status: str
    at: datetime = timestamptz()
    evidence_ids: list[str] = text_array()
    pointer_message_id: int | None = bigint()
    pointer_revision: int | None
    pointer_char_start: int | None
    pointer_char_end: int | None
    pointer_quote: str | None
    digest_id: int | None = bigint()
    related_item_id: int | None = bigint()
    reason: str
    created_at: datetime = timestamptz()


class ChannelItemEvent(ChannelItemEventColumns, table=True):
    __tablename__ = "channel_item_events"


class ChannelItemEventWithMessage(ChannelItemEventColumns):
    """An event with the external id of its pointer's message (`events_of_channel_items`)."""

    pointer_external_id: str | None


class DigestItemRow(SQLModel):
    """A digest row of a question, action item, decision or knowledge item (`digest_item_rows`)."""

    kind: str
    position: int
    id: int


class ChannelOpenItemCounts(SQLModel):
    """What still waits in one channel, and its decisions in force
    (`open_item_counts_of_channels`)."""

    channel_id: int
    open_questions: int
    open_action_items: int
    decisions_in_force: int
