"""Channel.activity: a channel's messages, conversations and digests per day, the series the
console charts. Its own module so that the Channel type gains one line, not a block."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Protocol

import strawberry
from strawberry.types import Info

from db import activity
from schema.context import Context
from schema.errors import BAD_USER_INPUT, client_error

MAX_ACTIVITY_DAYS = 366
ACTIVITY_DAYS = 30


class _HasRowId(Protocol):
    id: int


@strawberry.type(description="One UTC day of a channel.")
class ActivityDay:
    day: date
    message_count: int = strawberry.field(description="Messages written that day.")
    conversation_count: int = strawberry.field(
        description="Conversations with a message that day (the threads its digests found)."
    )
    digest_count: int = strawberry.field(
        description="Digests that read at least one of that day's messages."
    )


async def channel_activity(
    root: strawberry.Parent[_HasRowId],
    info: Info[Context, None],
    days: Annotated[
        int,
        strawberry.argument(
            description=f"How many days, 1 to {MAX_ACTIVITY_DAYS}, ending with the day of the "
            "channel's newest message."
        ),
    ] = ACTIVITY_DAYS,
) -> list[ActivityDay]:
    if not 1 <= days <= MAX_ACTIVITY_DAYS:
        raise client_error(
            f"days must be between 1 and {MAX_ACTIVITY_DAYS}", BAD_USER_INPUT, argument="days"
        )
    async with info.context.pool.acquire() as connection:
        rows = await activity.channel_activity(connection, root.id, days)
    return [
        ActivityDay(
            day=row.day,
            message_count=row.message_count,
            conversation_count=row.conversation_count,
            digest_count=row.digest_count,
        )
        for row in rows
    ]


ACTIVITY_DESCRIPTION = (
    "The channel per UTC day, oldest first: every day of the `days` ending with the day of its "
    "newest message (zero counts too; empty when it has no messages), so a chart has no gaps."
)
