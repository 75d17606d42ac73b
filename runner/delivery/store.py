"""Manage destinations and deliveries: the one path from "deliver to this URL" to a stored
destination (checked, its secrets kept apart, a hint safe to show), its deletion, the link of a
schedule to destinations named by id or name, a dead delivery queued again, and a person's
catch-up queued for a destination. Shared by the API (`createDestination`, `deliverCatchUp`,
...) and the CLI (`digestd destination ...`, `digestd catchup --deliver`).

Refusals are `runner.triggers` refusals (`SubjectNotFound`, `DestinationRefused` with a stable
code and the field it is about), so each caller words them as it words a trigger's. A refusal
never quotes a secret.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
import httpx

from db import deliveries as delivery_queries
from db.models import DeliveryListing, Destination
from runner.catchup.sections import CatchUp
from runner.catchup.store import catch_up
from runner.core.markdown_text import single_line
from runner.delivery.contract import DeliveryEvent, DestinationKind
from runner.delivery.webhook import SIGNING_SECRET, URL_SECRET
from runner.exports.catchup import catch_up_markdown
from runner.triggers import SubjectNotFound, TriggerRefused

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
MAX_VALUE_CHARS = 2000
MAX_FIELDS = 20
# The secrets each kind needs; any other field given as a secret is kept as one.
REQUIRED_SECRETS: dict[DestinationKind, tuple[str, ...]] = {
    DestinationKind.WEBHOOK: (URL_SECRET, SIGNING_SECRET),
    DestinationKind.SLACK: (URL_SECRET,),
    DestinationKind.DISCORD: (URL_SECRET,),
    DestinationKind.EMAIL: (),
}
# The events a destination may subscribe to; a catch-up is only ever sent by hand.
SUBSCRIBABLE_EVENTS = (
    DeliveryEvent.DIGEST_READY,
    DeliveryEvent.JOB_SUCCEEDED,
    DeliveryEvent.JOB_FAILED,
)
# Secrets that are URLs: their host is the hint the API shows.
_URL_SECRETS = (URL_SECRET,)


class DestinationRefused(TriggerRefused):
    """A destination that cannot be saved; `field` names the argument, `code` says why."""

    def __init__(self, message: str, *, field: str, code: str) -> None:
        super().__init__(message, code=code)
        self.field = field


class DestinationNameTaken(DestinationRefused):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"a destination named {name!r} exists already", field="name", code="name_taken"
        )


@dataclass(frozen=True)
class DestinationSpec:
    """What a client asks for: the secrets are write-only from here on."""

    name: str
    kind: str
    settings: Mapping[str, str]
    secrets: Mapping[str, str]
    events: Sequence[str] = ()


def _check_fields(values: Mapping[str, str], field: str) -> dict[str, str]:
    if len(values) > MAX_FIELDS:
        raise DestinationRefused(
            f"at most {MAX_FIELDS} {field}", field=field, code=f"invalid_{field}"
        )
    checked: dict[str, str] = {}
    for key, value in values.items():
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,39}", key):
            raise DestinationRefused(
                f"{field} keys are lower-case words (a-z, 0-9, _)",
                field=field,
                code=f"invalid_{field}",
            )
        if not isinstance(value, str) or len(value) > MAX_VALUE_CHARS:
            # The value is never quoted: it may be a secret.
            raise DestinationRefused(
                f"{field} {key!r} must be text of at most {MAX_VALUE_CHARS} characters",
                field=field,
                code=f"invalid_{field}",
            )
        checked[key] = value
    return checked


def destination_hint(kind: DestinationKind, secrets: Mapping[str, str]) -> str:
    """What the API may show of a destination's secrets: the host of its URL, and nothing else."""
    for key in _URL_SECRETS:
        if key in secrets:
            try:
                host = httpx.URL(secrets[key]).host
            except (httpx.InvalidURL, TypeError, ValueError):
                return ""
            return host[:200]
    return ""


def check_destination(
    spec: DestinationSpec,
) -> tuple[DestinationKind, dict[str, str], dict[str, str], list[str]]:
    """The spec's kind, settings, secrets and events, checked; raises DestinationRefused."""
    if not NAME_PATTERN.match(spec.name):
        raise DestinationRefused(
            "a destination name is 1 to 64 letters, digits, '_', '.', ':' or '-', starting "
            "with a letter or digit",
            field="name",
            code="invalid_name",
        )
    try:
        kind = DestinationKind(spec.kind)
    except ValueError:
        kinds = ", ".join(k.value for k in DestinationKind)
        raise DestinationRefused(
            f"kind must be one of {kinds}", field="kind", code="invalid_kind"
        ) from None
    settings = _check_fields(spec.settings, "settings")
    secrets = _check_fields(spec.secrets, "secrets")
    missing = [key for key in REQUIRED_SECRETS[kind] if not secrets.get(key)]
    if missing:
        raise DestinationRefused(
            f"a {kind} destination needs the secret(s) {', '.join(missing)}",
            field="secrets",
            code="missing_secret",
        )
    for key in _URL_SECRETS:
        if key in secrets:
            try:
                url = httpx.URL(secrets[key])
            except (httpx.InvalidURL, TypeError, ValueError):
                url = None
            if url is None or url.scheme not in ("http", "https") or not url.host:
                raise DestinationRefused(
                    f"secret {key!r} must be an http or https URL",
                    field="secrets",
                    code="invalid_url",
                )
    events: list[str] = []
    subscribable = {event.value for event in SUBSCRIBABLE_EVENTS}
    for event in spec.events:
        if event not in subscribable:
            names = ", ".join(e.value for e in SUBSCRIBABLE_EVENTS)
            raise DestinationRefused(
                f"events must be among {names}", field="events", code="invalid_event"
            )
        events.append(event)
    return kind, settings, secrets, sorted(set(events))


async def create_destination(connection: asyncpg.Connection, spec: DestinationSpec) -> Destination:
    """Store a destination; raises DestinationRefused (a bad field, a name taken)."""
    kind, settings, secrets, events = check_destination(spec)
    row = await delivery_queries.insert_destination(
        connection, spec.name, kind, settings, secrets, events, destination_hint(kind, secrets)
    )
    if row is None:
        raise DestinationNameTaken(spec.name)
    return row


async def delete_destination(connection: asyncpg.Connection, destination_id: int) -> Destination:
    """Delete it with its secrets, schedule links and deliveries; the row as it was."""
    row = await delivery_queries.delete_destination(connection, destination_id)
    if row is None:
        raise SubjectNotFound("destination", destination_id)
    return row


async def resolve_destinations(
    connection: asyncpg.Connection, ids: Sequence[int], names: Sequence[str]
) -> list[int]:
    """The ids of the destinations named by id or by name; raises SubjectNotFound (an id) or
    DestinationRefused (an unknown name)."""
    found_ids = {
        row.id for row in await delivery_queries.destinations_by_ids(connection, list(ids))
    }
    for destination_id in ids:
        if destination_id not in found_ids:
            raise SubjectNotFound("destination", destination_id)
    by_name = {
        row.name: row.id
        for row in await delivery_queries.destinations_by_names(connection, list(names))
    }
    for name in names:
        if name not in by_name:
            raise DestinationRefused(
                f"no destination named {name!r}", field="deliverTo", code="unknown_destination"
            )
    return sorted(found_ids | set(by_name.values()))


async def destination_named(connection: asyncpg.Connection, name: str) -> Destination:
    """The destination called `name`; raises DestinationRefused (unknown_destination)."""
    found = await delivery_queries.destinations_by_names(connection, [name])
    if not found:
        raise DestinationRefused(
            f"no destination named {name!r}", field="destination", code="unknown_destination"
        )
    return found[0]


def catch_up_content(data: CatchUp) -> dict[str, Any]:
    """What a catch-up delivery sends (title, Markdown, JSON payload), rendered once, now: the
    catch-up is of this moment, and every attempt sends the same."""
    markdown = catch_up_markdown(data)
    title = f"Catch-up for {single_line(data.person)}"
    payload = {
        "catch_up": {
            "person": data.person,
            "since": data.since.isoformat() if data.since else None,
            "generated_at": data.generated_at.isoformat(),
            "channels": [section.channel.name for section in data.channels],
            "entries": sum(len(section.entries) for section in data.channels),
            "truncated": data.truncated,
        },
        "markdown": markdown,
    }
    return {"title": title, "markdown": markdown, "payload": payload}


async def deliver_catch_up(
    connection: asyncpg.Connection,
    person: str,
    destination: str,
    since: datetime | None = None,
    channel_ids: list[int] | None = None,
    now: datetime | None = None,
) -> tuple[DeliveryListing, CatchUp]:
    """Queue `person`'s catch-up (as `catchUp` computes it) for the destination named
    `destination`; the delivery loop sends it like any delivery. The delivery and the catch-up
    sent. Raises DestinationRefused (an unknown destination) or CatchUpRefused (a name that
    cannot be a person)."""
    target = await destination_named(connection, destination)
    data = await catch_up(connection, person, since, channel_ids, now=now)
    queued = await delivery_queries.enqueue_catch_up_delivery(
        connection, target.id, catch_up_content(data)
    )
    return queued, data


async def retry_delivery(connection: asyncpg.Connection, delivery_id: int) -> DeliveryListing:
    """Queue a dead delivery again (same delivery id, attempts from zero)."""
    row = await delivery_queries.retry_dead_delivery(connection, delivery_id)
    if row is not None:
        return row
    existing = await delivery_queries.deliveries_by_ids(connection, [delivery_id])
    if not existing:
        raise SubjectNotFound("delivery", delivery_id)
    raise DestinationRefused(
        f"only a dead delivery can be retried; this one is {existing[0].state}",
        field="id",
        code="not_dead",
    )
