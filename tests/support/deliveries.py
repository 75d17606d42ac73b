"""Deliveries in the tests: a digest's content as a sender is given it; destinations created
with one delivery each, sent by one pass of a delivery loop with the senders an installation
has, and how each delivery ended."""

from __future__ import annotations

import asyncpg

from db import deliveries as delivery_queries
from runner.delivery.contract import DeliveryContent, DeliveryEvent
from runner.delivery.outbox import DeliveryConfig, DeliveryLoop, load_senders
from runner.delivery.store import DestinationSpec, create_destination
from runner.delivery.webhook import WebhookSender


def digest_content(
    markdown: str = "# ops",
    *,
    delivery_id: str = "dlv-1",
    title: str = "ops-team digest",
    link: str | None = None,
) -> DeliveryContent:
    """A `digest.ready` delivery's content as the outbox hands it to a sender."""
    return DeliveryContent(
        delivery_id=delivery_id,
        event=DeliveryEvent.DIGEST_READY,
        title=title,
        markdown=markdown,
        payload={},
        link=link,
    )


async def one_pass_over(
    pool: asyncpg.Pool, specs: list[DestinationSpec]
) -> list[tuple[str, int, str | None]]:
    """Each destination of `specs` created with a `job.failed` delivery queued, one pass of a
    delivery loop with every sender (no private address allowed, as by default), and each
    delivery's (state, attempts, last error), in the order of `specs`."""
    async with pool.acquire() as connection:
        for spec in specs:
            created = await create_destination(connection, spec)
            await connection.execute(
                "INSERT INTO deliveries (destination_id, event) VALUES ($1, 'job.failed')",
                created.id,
            )
    loop = DeliveryLoop(
        pool, load_senders(WebhookSender()), DeliveryConfig(worker_id="policy", max_attempts=3)
    )
    assert await loop.deliver_due() == len(specs)
    async with pool.acquire() as connection:
        ids = [r["id"] for r in await connection.fetch("SELECT id FROM deliveries ORDER BY id")]
        rows = await delivery_queries.deliveries_by_ids(connection, ids)
    return [(row.state, row.attempts, row.last_error) for row in sorted(rows, key=lambda r: r.id)]
