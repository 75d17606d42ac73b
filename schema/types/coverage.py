"""GraphQL types of a digest's message coverage, and the `source_edited` flag of its items.

Both are read-time views of what the store wrote (runner/digests/store.py): the digest's window and
left-out ranges, and `digest_messages` (which revision of each message the digest read) compared
with the messages' current revisions.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import strawberry
from strawberry.types import Info

from db import models
from schema.context import Context
from schema.gate.bounded_lists import (
    LEFT_OUT_RANGES,
    MAX_LEFT_OUT_RANGES,
    capped,
    first_argument,
)
from schema.types.shared import Flag

SOURCE_EDITED = "source_edited"


@strawberry.type(description="A run of messages (in conversation order) a digest left out.")
class LeftOutRange:
    first_message_id: str
    last_message_id: str
    first_at: datetime
    last_at: datetime
    message_count: int
    reason: str = strawberry.field(
        description="chunk_failed (read, extraction failed; digested again next time), "
        "window_cap (over DIGESTD_MAX_WINDOW_MESSAGES; waits for the next digest) or "
        "edited_during_digest (changed while the digest ran; digested again next time)."
    )

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> LeftOutRange:
        return cls(
            first_message_id=str(value["first_message_id"]),
            last_message_id=str(value["last_message_id"]),
            first_at=datetime.fromisoformat(value["first_at"]),
            last_at=datetime.fromisoformat(value["last_at"]),
            message_count=int(value["message_count"]),
            reason=str(value["reason"]),
        )


@strawberry.type(description="Which messages a digest read, and what it left out and why.")
class MessageCoverage:
    message_count: int = strawberry.field(description="Messages the digest read.")
    first_message_at: datetime | None
    last_message_at: datetime | None
    catch_up: bool = strawberry.field(
        description="True for an explicit since/until window, which changes no coverage."
    )
    since: datetime | None
    until: datetime | None
    left_out_range_count: int = strawberry.field(
        description="How many ranges the digest left out (leftOut lists the first ones)."
    )
    ranges: strawberry.Private[list[dict[str, Any]]]

    @strawberry.field(description="The runs of messages it left out, in conversation order.")
    def left_out(
        self,
        first: Annotated[
            int, first_argument(MAX_LEFT_OUT_RANGES, "leftOutRangeCount")
        ] = LEFT_OUT_RANGES,
    ) -> list[LeftOutRange]:
        return [
            LeftOutRange.from_json(value)
            for value in capped(self.ranges, first, MAX_LEFT_OUT_RANGES)
        ]

    @classmethod
    def from_row(cls, row: models.Digest) -> MessageCoverage:
        return cls(
            message_count=row.message_count,
            first_message_at=row.window_start,
            last_message_at=row.window_end,
            catch_up=row.catch_up,
            since=row.window_since,
            until=row.window_until,
            left_out_range_count=len(row.left_out or []),
            ranges=list(row.left_out or []),
        )


async def item_flags(
    info: Info[Context, None], digest_id: int, stored: list[Flag], cited: list[str]
) -> list[Flag]:
    """The stored flags, plus `source_edited` when a message the item cites or points into has a
    newer revision than the one the digest read."""
    edited = await info.context.loaders.edited_messages.load(digest_id)
    changed = [message_id for message_id in cited if message_id in edited]
    if not changed:
        return stored
    return [
        *stored,
        Flag(
            code=SOURCE_EDITED,
            message=f"{SOURCE_EDITED}: message(s) {', '.join(sorted(set(changed))[:10])} changed "
            "after this digest read them; pointers show the revision they were made from",
        ),
    ]
