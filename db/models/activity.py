"""The shape of a channel's activity per day (the `channel_activity` query): no table of its own,
counts over messages, conversations and the digests that read them."""

from datetime import date

from sqlmodel import SQLModel


class ActivityDay(SQLModel):
    """One UTC day of a channel: its messages, the conversations they belong to, and the
    digests that read at least one of them."""

    day: date
    message_count: int
    conversation_count: int
    digest_count: int
