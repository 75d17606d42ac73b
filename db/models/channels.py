"""Servers, channels, messages and message revisions (db/migrations 0001 and 0003), and the
projections of them that db/channels.py returns."""

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

from db.models.columns import bigint, jsonb, timestamptz


class Server(SQLModel, table=True):
    __tablename__ = "servers"

    id: int = bigint(primary_key=True)
    name: str
    external_id: str | None
    created_at: datetime = timestamptz()


class ChannelColumns(SQLModel):
    """The columns of `channels`, shared by the table and its joined reads."""

    id: int = bigint(primary_key=True)
    server_id: int | None = bigint()
    name: str
    external_id: str | None
    created_at: datetime = timestamptz()


class Channel(ChannelColumns, table=True):
    __tablename__ = "channels"


class ChannelWithServer(ChannelColumns):
    """A channel with its server's name (None for a channel without a server)."""

    server_name: str | None


class MessageFields(SQLModel):
    """The columns of `messages` but its two texts: what the API's message pages and its message
    DataLoader read (a text can be DIGESTD_MAX_MESSAGE_CHARS long: `MessageText` rows bring the
    one a query asks for)."""

    id: int = bigint(primary_key=True)
    channel_id: int = bigint()
    external_id: str
    author: str
    ts: datetime = timestamptz()
    reply_to: str | None
    attachments: list[dict[str, Any]] = jsonb()
    created_at: datetime = timestamptz()
    revision: int
    revised_at: datetime | None = timestamptz()
    covered_revision: int | None
    covered_by_digest_id: int | None = bigint()
    parent_id: int | None = bigint()
    conversation_id: int | None = bigint()


class Message(MessageFields, table=True):
    """A message at its current revision (older texts are `MessageRevision` rows)."""

    __tablename__ = "messages"

    raw_text: str
    normalized_text: str


class MessageText(SQLModel):
    """One text of a message, by the message's id (`message_raw_texts`, `message_normalized_texts`)."""

    id: int
    text: str


class MessageRevision(SQLModel, table=True):
    """The text of a superseded revision of a message."""

    __tablename__ = "message_revisions"

    message_id: int = bigint(primary_key=True)
    revision: int = Field(primary_key=True)
    raw_text: str
    normalized_text: str
    created_at: datetime = timestamptz()
    superseded_at: datetime = timestamptz()


class WindowMessageRow(SQLModel):
    """A message as a digest window reads it (`window_messages`, `catch_up_messages`)."""

    id: int
    external_id: str
    author: str
    ts: datetime
    reply_to: str | None
    normalized_text: str
    revision: int


class MessageRange(SQLModel):
    """What a capped window left out (`uncovered_after`, `catch_up_after`): how many messages
    and their first and last (external ids)."""

    message_count: int
    first_message_id: str
    first_at: datetime
    last_message_id: str
    last_at: datetime


class SliceBound(SQLModel):
    """A message that opens or closes a coverage slice (`uncovered_slice_bounds`): its 0-based
    position `n` among the channel's uncovered messages, and how many there are."""

    ts: datetime
    id: int
    n: int
    total: int


class RevisionText(SQLModel):
    """The text of one revision of a message (`revision_texts`)."""

    message_id: int
    revision: int
    normalized_text: str | None


class ChannelMessageCount(SQLModel):
    channel_id: int
    message_count: int


class ChannelOverview(ChannelWithServer):
    """A channel as `digestd channels` lists it: its messages, its newest digest's time, and
    what its memory holds open (questions, action items) or in force (decisions)."""

    message_count: int
    last_digest_at: datetime | None
    open_questions: int
    open_action_items: int
    decisions_in_force: int


class ChannelUncoveredCount(SQLModel):
    channel_id: int
    uncovered: int


class MessageId(SQLModel):
    """A message id (`cover_messages`: the messages edited since the window read them)."""

    id: int
