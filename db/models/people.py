"""People, their handles and their read markers (db/migrations/0017_people.sql), and the rows a
catch-up reads (db/people.py)."""

from datetime import datetime

from sqlmodel import SQLModel

from db.models.columns import bigint, text_array, timestamptz


class Person(SQLModel, table=True):
    __tablename__ = "people"

    id: int = bigint(primary_key=True)
    name: str
    created_at: datetime = timestamptz()


class PersonHandle(SQLModel, table=True):
    """A name the person writes or is addressed by; `channel_id` None: in every channel."""

    __tablename__ = "person_handles"

    id: int = bigint(primary_key=True)
    person_id: int = bigint()
    handle: str
    handle_key: str
    channel_id: int | None = bigint()
    created_at: datetime = timestamptz()


class ReadMarker(SQLModel, table=True):
    """How far a person has read a channel: their catch-up there starts after `read_until`."""

    __tablename__ = "read_markers"

    person_id: int = bigint(primary_key=True)
    channel_id: int = bigint(primary_key=True)
    read_until: datetime = timestamptz()
    updated_at: datetime = timestamptz()


class CatchUpMessage(SQLModel):
    """A message that may name the person (`catch_up_mentions`): its text at its current revision."""

    id: int = bigint()
    channel_id: int = bigint()
    external_id: str
    author: str
    ts: datetime = timestamptz()
    revision: int
    normalized_text: str


class CatchUpItem(SQLModel):
    """An open question or action item, or a decision said since the start of the catch-up
    (`catch_up_items`), with the message it was first said in and the author of the message
    that one replies to (whom a question was put to)."""

    id: int = bigint()
    channel_id: int = bigint()
    kind: str
    status: str
    text: str
    owner: str | None
    message_ids: list[str] = text_array()
    said_at: datetime = timestamptz()
    message_row_id: int | None = bigint()
    message_author: str | None
    message_ts: datetime | None = timestamptz()
    message_revision: int | None
    message_text: str | None
    replied_author: str | None
