"""A channel's activity over time in Postgres: per-day counts of its messages, conversations and
the digests that read them, for the console's charts (Channel.activity). The SQL is
`channel_activity` in db/queries.sql."""

from __future__ import annotations

import asyncpg

from db.models import ActivityDay, as_rows
from db.queries import QUERIES


async def channel_activity(
    connection: asyncpg.Connection, channel_id: int, days: int
) -> list[ActivityDay]:
    """The `days` UTC days ending with the day of the channel's newest message, oldest first,
    every day listed (zero counts too); none for a channel without messages."""
    records = await connection.fetch(QUERIES["channel_activity"], channel_id, days)
    return as_rows(ActivityDay, records)
