"""The GraphQL types of delivery: a destination (never its secrets: only a hint such as its
URL's host) and a delivery of the outbox, built from their stored rows (`from_row`)."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry import relay
from strawberry.types import Info

from db import models
from schema.context import Context
from schema.types.enums import DeliveryEvent, DeliveryState, DestinationKind
from schema.types.ids import (
    DESTINATION,
    DIGEST,
    DIGEST_JOB,
    global_id,
    optional_global_id,
)


@strawberry.type(description="A setting of a destination, or one to give it.")
class Setting:
    key: str
    value: str


@strawberry.type(
    description="Where digests and job events are delivered: a signed webhook, a Slack or "
    "Discord webhook, or an e-mail inbox. Its secrets (URLs, signing keys, passwords) are "
    "write-only: no field returns them."
)
class Destination(relay.Node):
    id: relay.NodeID[int]
    name: str
    kind: DestinationKind
    settings: list[Setting] = strawberry.field(
        description="The non-secret settings (an SMTP host, recipients)."
    )
    events: list[DeliveryEvent] = strawberry.field(
        description="The events it receives for every job (a schedule's digests reach the "
        "destinations the schedule delivers to without them)."
    )
    hint: str = strawberry.field(
        description="What can be shown of its secrets: the host of its URL, or empty."
    )
    created_at: datetime

    @classmethod
    def from_row(cls, row: models.Destination | models.ScheduleDestinationRow) -> Destination:
        return cls(
            id=row.id,
            name=row.name,
            kind=DestinationKind(row.kind),
            settings=[Setting(key=k, value=str(v)) for k, v in sorted(row.settings.items())],
            events=[DeliveryEvent(event) for event in row.events],
            hint=row.hint,
            created_at=row.created_at,
        )


@strawberry.type(
    description="One event to deliver to one destination. `deliveryId` is sent with every "
    "attempt (the X-Digestd-Delivery header): a receiver that sees it twice drops the repeat."
)
class Delivery(relay.Node):
    id: relay.NodeID[int]
    delivery_id: str
    destination_id: strawberry.ID
    event: DeliveryEvent
    state: DeliveryState
    attempts: int
    next_attempt_at: datetime | None = strawberry.field(
        description="When the next attempt is due, while PENDING."
    )
    last_error: str | None = strawberry.field(
        description="Why the last attempt failed, in a few words (an HTTP status, a network "
        "error, 'no sender for kind'); never the receiver's answer."
    )
    digest_id: strawberry.ID | None
    job_id: strawberry.ID | None
    created_at: datetime
    delivered_at: datetime | None
    row: strawberry.Private[models.DeliveryListing]

    @classmethod
    def from_row(cls, row: models.DeliveryListing) -> Delivery:
        return cls(
            id=row.id,
            delivery_id=str(row.delivery_id),
            destination_id=global_id(DESTINATION, row.destination_id),
            event=DeliveryEvent(row.event),
            state=DeliveryState(row.state),
            attempts=row.attempts,
            next_attempt_at=row.next_attempt_at if row.state == "pending" else None,
            last_error=row.last_error,
            digest_id=optional_global_id(DIGEST, row.digest_id),
            job_id=optional_global_id(DIGEST_JOB, row.job_id),
            created_at=row.created_at,
            delivered_at=row.delivered_at,
            row=row,
        )

    @strawberry.field
    async def destination(self, info: Info[Context, None]) -> Destination | None:
        row = await info.context.loaders.destination.load(self.row.destination_id)
        return Destination.from_row(row) if row else None
