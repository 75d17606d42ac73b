"""Destinations, their secrets and the delivery outbox in Postgres: create, read and delete
destinations; link schedules to them; enqueue a job's deliveries in the transaction that ends
it; claim due deliveries under a lease and record each attempt.

What makes delivery safe is here. A destination's secrets sit in their own table and only
`delivery_target` reads them (the API's reads select the destination row alone). The outbox
rows of a job are inserted by `enqueue_job_deliveries`, which the caller runs in the job's
ending transaction, so a digest is stored with its deliveries or not at all. `claim_deliveries`
takes only the oldest unfinished row of each destination (creation order per destination), FOR
UPDATE SKIP LOCKED, under a lease that a dead worker's row runs out of. Whatever queues a row
due now also NOTIFYs `DELIVERIES_CHANNEL` (delivered at commit), so the delivery loops send it
at once instead of at their next poll. The SQL is in db/queries.sql.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

import asyncpg

from db.models import (
    Delivery,
    DeliveryListing,
    DeliveryStateCount,
    DeliveryTarget,
    Destination,
    ScheduleDestinationRow,
    as_row,
    as_row_or_none,
    as_rows,
)
from db.queries import QUERIES

# LISTENed to by the delivery loops (runner/delivery/outbox.py): no payload, "look for due rows".
DELIVERIES_CHANNEL = "digestd_deliveries"


class DeliveryState(StrEnum):
    PENDING = "pending"
    DELIVERING = "delivering"
    DELIVERED = "delivered"
    DEAD = "dead"


async def insert_destination(
    connection: asyncpg.Connection,
    name: str,
    kind: str,
    settings: Mapping[str, Any],
    secrets: Mapping[str, Any],
    events: Sequence[str],
    hint: str,
) -> Destination | None:
    """A new destination with its secrets (one transaction); None when the name is taken."""
    async with connection.transaction():
        record = await connection.fetchrow(
            QUERIES["insert_destination"], name, kind, dict(settings), list(events), hint
        )
        if record is None:
            return None
        await connection.execute(QUERIES["insert_destination_secrets"], record["id"], dict(secrets))
    return as_row(Destination, record)


async def delete_destination(
    connection: asyncpg.Connection, destination_id: int
) -> Destination | None:
    record = await connection.fetchrow(QUERIES["delete_destination"], destination_id)
    return as_row_or_none(Destination, record)


async def destinations_by_ids(connection: asyncpg.Connection, ids: list[int]) -> list[Destination]:
    return as_rows(Destination, await connection.fetch(QUERIES["destinations_by_ids"], ids))


async def destinations_by_names(
    connection: asyncpg.Connection, names: list[str]
) -> list[Destination]:
    return as_rows(Destination, await connection.fetch(QUERIES["destinations_by_names"], names))


async def link_schedule_destinations(
    connection: asyncpg.Connection, schedule_id: int, destination_ids: Sequence[int]
) -> None:
    await connection.execute(
        QUERIES["link_schedule_destinations"], schedule_id, list(destination_ids)
    )


async def destinations_of_schedules(
    connection: asyncpg.Connection, schedule_ids: list[int]
) -> list[ScheduleDestinationRow]:
    """The destinations each schedule delivers to, never their secrets."""
    records = await connection.fetch(QUERIES["destinations_of_schedules"], schedule_ids)
    return as_rows(ScheduleDestinationRow, records)


async def enqueue_job_deliveries(connection: asyncpg.Connection, job_id: int) -> int:
    """The outbox rows of job `job_id`, which just ended: run it in the transaction that ended
    the job (and stored its digest). How many rows were queued."""
    queued: int = await connection.fetchval(QUERIES["enqueue_job_deliveries"], job_id)
    if queued:
        await notify_deliveries(connection)
    return queued


async def notify_deliveries(connection: asyncpg.Connection) -> None:
    """Wake the delivery loops (at commit, when inside a transaction)."""
    await connection.execute(QUERIES["notify_deliveries"])


async def claim_deliveries(
    connection: asyncpg.Connection, worker_id: str, limit: int, lease_seconds: float
) -> list[Delivery]:
    """Up to `limit` due deliveries, each the oldest unfinished one of its destination, now
    `delivering` under `worker_id`'s lease for `lease_seconds`, their attempt counted."""
    records = await connection.fetch(QUERIES["claim_deliveries"], worker_id, limit, lease_seconds)
    return as_rows(Delivery, records)


async def delivery_target(
    connection: asyncpg.Connection, destination_id: int
) -> DeliveryTarget | None:
    """The destination with its secrets: for the delivery loop, never for the API."""
    record = await connection.fetchrow(QUERIES["delivery_target"], destination_id)
    return as_row_or_none(DeliveryTarget, record)


async def set_delivery_content(
    connection: asyncpg.Connection, delivery_id: int, content: Mapping[str, Any]
) -> None:
    await connection.execute(QUERIES["set_delivery_content"], delivery_id, dict(content))


async def mark_delivered(
    connection: asyncpg.Connection, delivery_id: int, worker_id: str
) -> Delivery | None:
    """None when `worker_id` no longer holds the delivery (its lease ran out and another
    worker took it)."""
    record = await connection.fetchrow(QUERIES["mark_delivered"], delivery_id, worker_id)
    return as_row_or_none(Delivery, record)


async def mark_retry(
    connection: asyncpg.Connection,
    delivery_id: int,
    worker_id: str,
    error: str,
    retry_in_seconds: float,
) -> Delivery | None:
    record = await connection.fetchrow(
        QUERIES["mark_retry"], delivery_id, worker_id, error[:300], retry_in_seconds
    )
    return as_row_or_none(Delivery, record)


async def mark_dead(
    connection: asyncpg.Connection, delivery_id: int, worker_id: str, error: str
) -> Delivery | None:
    record = await connection.fetchrow(QUERIES["mark_dead"], delivery_id, worker_id, error[:300])
    return as_row_or_none(Delivery, record)


async def enqueue_catch_up_delivery(
    connection: asyncpg.Connection, destination_id: int, content: Mapping[str, Any]
) -> DeliveryListing:
    """Queue a catch-up for a destination with its content, rendered by the caller."""
    record = await connection.fetchrow(
        QUERIES["enqueue_catch_up_delivery"], destination_id, dict(content)
    )
    await notify_deliveries(connection)
    return as_row(DeliveryListing, record)


async def retry_dead_delivery(
    connection: asyncpg.Connection, delivery_id: int
) -> DeliveryListing | None:
    """Queue a dead delivery again (same delivery id, attempts from zero); None unless dead."""
    record = await connection.fetchrow(QUERIES["retry_dead_delivery"], delivery_id)
    if record is not None:
        await notify_deliveries(connection)
    return as_row_or_none(DeliveryListing, record)


async def deliveries_by_ids(
    connection: asyncpg.Connection, ids: list[int]
) -> list[DeliveryListing]:
    return as_rows(DeliveryListing, await connection.fetch(QUERIES["deliveries_by_ids"], ids))


async def prune_deliveries(connection: asyncpg.Connection, retention_days: int, limit: int) -> int:
    """Delete up to `limit` deliveries delivered more than `retention_days` ago; how many."""
    deleted: int = await connection.fetchval(QUERIES["prune_deliveries"], retention_days, limit)
    return deleted


async def delivery_state_counts(connection: asyncpg.Connection) -> list[DeliveryStateCount]:
    return as_rows(DeliveryStateCount, await connection.fetch(QUERIES["delivery_state_counts"]))
