"""The GraphQL type of a digest schedule, built from its stored row (`Schedule.from_row`)."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry import relay
from strawberry.types import Info

from db import models
from schema.context import Context
from schema.types.channel import Channel
from schema.types.delivery import Destination
from schema.types.ids import CHANNEL, DIGEST_JOB, global_id, optional_global_id
from schema.types.job import DigestJob


@strawberry.type(
    description="A channel digested at each slot of a cron expression in a time "
    "zone. At each slot a worker queues an ordinary digest of the channel (or joins "
    "the one already queued or running); slots missed while no worker ran are "
    "caught up once."
)
class Schedule(relay.Node):
    id: relay.NodeID[int]
    channel_id: strawberry.ID
    cron: str = strawberry.field(
        description="Five fields (minute hour day-of-month month day-of-week), or six with "
        "seconds first."
    )
    timezone: str = strawberry.field(description="The IANA zone the slots are wall-clock times in.")
    paused: bool
    next_run_at: datetime | None = strawberry.field(
        description="The next slot; null while paused (resuming computes it from then on)."
    )
    last_run_at: datetime | None = strawberry.field(
        description="When it last fired (the database's clock), a skipped slot (no new "
        "messages) included; null before its first slot."
    )
    last_job_id: strawberry.ID | None = strawberry.field(
        description="The job the last firing that was not skipped queued or joined."
    )
    created_at: datetime
    row: strawberry.Private[models.Schedule]

    @classmethod
    def from_row(cls, row: models.Schedule) -> Schedule:
        return cls(
            id=row.id,
            channel_id=global_id(CHANNEL, row.channel_id),
            cron=row.cron,
            timezone=row.timezone,
            paused=row.paused,
            next_run_at=None if row.paused else row.next_run_at,
            last_run_at=row.last_run_at,
            last_job_id=optional_global_id(DIGEST_JOB, row.last_job_id),
            created_at=row.created_at,
            row=row,
        )

    @strawberry.field
    async def channel(self, info: Info[Context, None]) -> Channel | None:
        row = await info.context.loaders.channel.load(self.row.channel_id)
        return Channel.from_row(row) if row else None

    @strawberry.field(
        description="The destinations each of its digests is delivered to, by name (never "
        "their secrets)."
    )
    async def deliver_to(self, info: Info[Context, None]) -> list[Destination]:
        rows = await info.context.loaders.schedule_destinations.load(self.row.id)
        return [Destination.from_row(row) for row in rows]

    @strawberry.field(
        description="The job the last firing that was not skipped queued or joined, while it exists."
    )
    async def last_job(self, info: Info[Context, None]) -> DigestJob | None:
        if self.row.last_job_id is None:
            return None
        row = await info.context.loaders.job.load(self.row.last_job_id)
        return DigestJob.from_row(row) if row else None
