"""Conversations and the reply structure of messages (db/migrations/0006_conversations.sql)."""

from datetime import datetime

from sqlmodel import SQLModel

from db.models.channels import WindowMessageRow
from db.models.columns import bigint, text_array, timestamptz


class ConversationColumns(SQLModel):
    id: int = bigint(primary_key=True)
    channel_id: int = bigint()
    root_message_id: int = bigint()
    title: str
    title_message_id: int | None = bigint()
    title_revision: int | None
    title_char_start: int | None
    title_char_end: int | None
    participants: list[str] = text_array()
    message_count: int
    answered: bool
    first_ts: datetime = timestamptz()
    last_ts: datetime = timestamptz()
    created_at: datetime = timestamptz()
    updated_at: datetime = timestamptz()


class Conversation(ConversationColumns, table=True):
    __tablename__ = "conversations"


class ConversationWithState(ConversationColumns):
    """A conversation as clients read it (`conversation_states`): with `state`, ongoing while
    its last message is within 30 minutes of the channel's newest one, else answered or
    unanswered."""

    state: str
    title_message_external_id: str | None


class ThreadContextRow(WindowMessageRow):
    """A message before a digest's window (`messages_before`), with its conversation."""

    conversation_id: int | None


class MessageConversation(SQLModel):
    id: int
    conversation_id: int | None
