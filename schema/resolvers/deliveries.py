"""The delivery fields of the API: `createDestination`, `deleteDestination`, `retryDelivery`
and `deliverCatchUp` (writers), the `destinations` and `deliveries` lists (newest first).
`Query` and `Mutation` inherit them; a destination and a delivery are also Relay nodes.

A destination's secrets go in through `createDestination` and never come out: the types read
the destination row, which holds none (runner/delivery/store.py keeps them apart). The work is
`runner/delivery/store.py`'s, shared with `digestd destination`; a refusal is a typed member of
the result union.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from db import pages
from runner.catchup.store import CatchUpRefused
from runner.delivery import store as destinations
from runner.triggers import TriggerRefused
from schema.context import Context
from schema.gate.permissions import IsAdmin, IsWriter
from schema.types.connections import Connection
from schema.types.delivery import Delivery, Destination
from schema.types.enums import DeliveryEvent, DeliveryState, DestinationKind
from schema.types.ids import (
    DELIVERY,
    DESTINATION,
    IdArgument,
    global_id,
    parse_optional_id,
)
from schema.types.paging import After, Before, First, Last, PageArgs, connection_of
from schema.types.shared import InvalidInputError, NotFoundError, parse_id_or_error, refusal


@strawberry.input(
    description="A setting or secret of a destination: a lower-case key and its text."
)
class SettingInput:
    key: str
    value: str


@strawberry.input(
    description="A destination. `secrets` are write-only: a webhook needs `url` and "
    "`signing_secret`, Slack and Discord `url`, e-mail its SMTP `password` when the server "
    "wants one. `settings` are shown back (an SMTP host, recipients). `events` subscribe it to "
    "every job's DIGEST_READY, JOB_SUCCEEDED or JOB_FAILED; a schedule's digests reach the "
    "destinations it delivers to (`createSchedule(deliverTo:)`) without them."
)
class CreateDestinationInput:
    name: str
    kind: DestinationKind
    settings: list[SettingInput] = strawberry.field(default_factory=list)
    secrets: list[SettingInput] = strawberry.field(default_factory=list)
    events: list[DeliveryEvent] = strawberry.field(default_factory=list)


@strawberry.input(description="Deliveries in a state, and/or of one destination.")
class DeliveryFilter:
    state: DeliveryState | None = None
    destination_id: strawberry.ID | None = None


@strawberry.input(description="Destinations of one kind.")
class DestinationFilter:
    kind: DestinationKind | None = None


@strawberry.type(description="What deleteDestination removed (its deliveries went with it).")
class DeletedDestination:
    deleted_id: strawberry.ID


CreateDestinationResult = Annotated[
    Destination | InvalidInputError, strawberry.union("CreateDestinationResult")
]
DeleteDestinationResult = Annotated[
    DeletedDestination | NotFoundError | InvalidInputError,
    strawberry.union("DeleteDestinationResult"),
]
RetryDeliveryResult = Annotated[
    Delivery | NotFoundError | InvalidInputError, strawberry.union("RetryDeliveryResult")
]
DeliverCatchUpResult = Annotated[
    Delivery | InvalidInputError, strawberry.union("DeliverCatchUpResult")
]


def _pairs(values: list[SettingInput], field: str) -> dict[str, str] | InvalidInputError:
    found: dict[str, str] = {}
    for pair in values:
        if pair.key in found:
            return InvalidInputError(
                message=f"{field}: key {pair.key!r} is given twice", reason=f"invalid_{field}"
            )
        found[pair.key] = pair.value
    return found


@strawberry.type
class DeliveryQueries:
    @strawberry.field(description="Destinations, newest first. No field returns a secret.")
    async def destinations(
        self,
        info: Info[Context, None],
        filter: DestinationFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Destination] | None:
        filter = filter or DestinationFilter()
        filters = {"kind": filter.kind.value if filter.kind else None}
        args = PageArgs(first, after, last, before, default_size=20)
        return await connection_of(info, pages.DESTINATIONS, filters, args, Destination.from_row)

    @strawberry.field(
        description="Deliveries, newest first: their state, attempts and last error (DEAD ones "
        "are the dead letters)."
    )
    async def deliveries(
        self,
        info: Info[Context, None],
        filter: DeliveryFilter | None = None,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Delivery] | None:
        filter = filter or DeliveryFilter()
        filters = {
            "state": filter.state.value if filter.state else None,
            "destination_id": parse_optional_id(filter.destination_id, DESTINATION),
        }
        args = PageArgs(first, after, last, before, default_size=20)
        return await connection_of(info, pages.DELIVERIES, filters, args, Delivery.from_row)


@strawberry.type
class DeliveryMutations:
    @strawberry.mutation(
        permission_classes=[IsAdmin],
        description="Declare a destination (admins: it receives digests and job events). A bad "
        "field is an InvalidInputError whose reason names it: invalid_name, name_taken, "
        "invalid_settings, invalid_secrets, missing_secret, invalid_url, invalid_event. The "
        "secrets are never returned, nor quoted in an error.",
    )
    async def create_destination(
        self, info: Info[Context, None], input: CreateDestinationInput
    ) -> CreateDestinationResult:
        settings = _pairs(input.settings, "settings")
        secrets = _pairs(input.secrets, "secrets")
        if isinstance(settings, InvalidInputError):
            return settings
        if isinstance(secrets, InvalidInputError):
            return secrets
        spec = destinations.DestinationSpec(
            input.name,
            input.kind.value,
            settings,
            secrets,
            [event.value for event in input.events],
        )
        try:
            async with info.context.pool.acquire() as connection:
                row = await destinations.create_destination(connection, spec)
        except TriggerRefused as refused:
            return InvalidInputError(message=refused.message, reason=refused.code)
        return Destination.from_row(row)

    @strawberry.mutation(
        permission_classes=[IsAdmin],
        description="Delete a destination with its secrets and deliveries; the schedules that "
        "delivered to it stay.",
    )
    async def delete_destination(
        self, info: Info[Context, None], id: IdArgument
    ) -> DeleteDestinationResult:
        destination_id = parse_id_or_error(id, DESTINATION)
        if isinstance(destination_id, InvalidInputError):
            return destination_id
        try:
            async with info.context.pool.acquire() as connection:
                row = await destinations.delete_destination(connection, destination_id)
        except TriggerRefused as refused:
            return refusal(refused, {("destination", destination_id): id})
        return DeletedDestination(deleted_id=global_id(DESTINATION, row.id))

    @strawberry.mutation(
        permission_classes=[IsWriter],
        description="Queue a DEAD delivery again, with the same deliveryId and its attempts "
        "from zero; any other state is an InvalidInputError (reason not_dead).",
    )
    async def retry_delivery(
        self, info: Info[Context, None], id: IdArgument
    ) -> RetryDeliveryResult:
        delivery_id = parse_id_or_error(id, DELIVERY)
        if isinstance(delivery_id, InvalidInputError):
            return delivery_id
        try:
            async with info.context.pool.acquire() as connection:
                row = await destinations.retry_delivery(connection, delivery_id)
        except TriggerRefused as refused:
            return refusal(refused, {("delivery", delivery_id): id})
        return Delivery.from_row(row)

    @strawberry.mutation(
        permission_classes=[IsWriter],
        description="Send a person's catch-up (what `catchUp(person, since)` answers now, as "
        "cited Markdown) to the destination named `destination`, of any kind, through the "
        "outbox like a digest: event CATCH_UP, retried, delivered once. An unknown destination "
        "is an InvalidInputError (reason unknown_destination). Read markers do not move.",
    )
    async def deliver_catch_up(
        self,
        info: Info[Context, None],
        person: str,
        destination: str,
        since: datetime | None = None,
    ) -> DeliverCatchUpResult:
        try:
            async with info.context.pool.acquire() as connection:
                row, _ = await destinations.deliver_catch_up(connection, person, destination, since)
        except (TriggerRefused, CatchUpRefused) as refused:
            return InvalidInputError(message=refused.message, reason=refused.code)
        return Delivery.from_row(row)
