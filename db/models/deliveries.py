"""Destinations and the delivery outbox (db/migrations/0016_deliveries.sql)."""

from datetime import datetime
from typing import Any
from uuid import UUID

from sqlmodel import Field, SQLModel

from db.models.columns import bigint, jsonb, nullable_jsonb, text_array, timestamptz


class Destination(SQLModel, table=True):
    """Where deliveries go: a kind, non-secret settings, the job events it is subscribed to and
    a `hint` safe to show (a URL's host). Its secrets are a `DestinationSecrets` row."""

    __tablename__ = "destinations"

    id: int = bigint(primary_key=True)
    name: str
    kind: str
    settings: dict[str, Any] = jsonb()
    events: list[str] = text_array()
    hint: str
    created_at: datetime = timestamptz()


class DestinationSecrets(SQLModel, table=True):
    """A destination's secrets (webhook URL, signing key, SMTP password): read by the delivery
    loop only, never by a query of the API."""

    __tablename__ = "destination_secrets"

    destination_id: int = bigint(primary_key=True)
    secrets: dict[str, Any] = jsonb()


class ScheduleDestination(SQLModel, table=True):
    """A schedule whose digests are delivered to a destination."""

    __tablename__ = "schedule_destinations"

    schedule_id: int = bigint(primary_key=True)
    destination_id: int = bigint(primary_key=True)


class ScheduleDestinationRow(SQLModel):
    """A destination with the schedule that delivers to it (`destinations_of_schedules`)."""

    schedule_id: int
    id: int
    name: str
    kind: str
    settings: dict[str, Any]
    events: list[str]
    hint: str
    created_at: datetime


class Delivery(SQLModel, table=True):
    """One outbox row: an event (a digest ready, a job ended) to deliver to one destination,
    its state (pending, delivering under a lease, delivered, dead), attempts and last error
    (ours, short), and `content`, what its first attempt rendered."""

    __tablename__ = "deliveries"

    id: int = bigint(primary_key=True)
    delivery_id: UUID
    destination_id: int = bigint()
    event: str
    digest_id: int | None = bigint()
    job_id: int | None = bigint()
    state: str
    attempts: int
    next_attempt_at: datetime = timestamptz()
    lease_expires_at: datetime | None = timestamptz()
    leased_by: str | None = None
    last_error: str | None = None
    content: dict[str, Any] | None = nullable_jsonb()
    created_at: datetime = timestamptz()
    delivered_at: datetime | None = timestamptz()


class DeliveryListing(SQLModel):
    """A delivery as the API lists it: every column but `content`, which only senders need."""

    id: int
    delivery_id: UUID
    destination_id: int
    event: str
    digest_id: int | None
    job_id: int | None
    state: str
    attempts: int
    next_attempt_at: datetime
    lease_expires_at: datetime | None
    leased_by: str | None
    last_error: str | None
    created_at: datetime
    delivered_at: datetime | None


class DeliveryTarget(SQLModel):
    """A destination with its secrets, as the delivery loop reads it (`delivery_target`)."""

    id: int
    name: str
    kind: str
    settings: dict[str, Any] = Field(default_factory=dict)
    secrets: dict[str, Any] = Field(default_factory=dict)


class DeliveryStateCount(SQLModel):
    """How many deliveries of a destination kind are in a state (`delivery_state_counts`)."""

    kind: str
    state: str
    deliveries: int
