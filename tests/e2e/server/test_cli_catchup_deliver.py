"""`digestd catchup PERSON --deliver NAME` as a user runs it (a real process, the test
Postgres): the catch-up is queued for the destination, rendered at once, and not printed; an
unknown destination is refused with the reason, and nothing is queued."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg

from tests.support.database import add_channel, messages
from tests.support.processes import digestd

URL = "https://hooks.example.test/services/T000/B000/private-token-123"


async def test_catchup_deliver_queues_the_rendered_catch_up_for_the_destination(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    await add_channel(db, "ops", messages([("bob", "@alice can you check the deploy tonight?")]))
    added = digestd(
        database_url, tmp_path, "destination", "add", "alice-dm", "--kind", "slack", "--url", URL
    )
    assert added.returncode == 0, added.stderr
    since = ("--since", "2000-01-01T00:00:00Z")
    unknown = digestd(database_url, tmp_path, "catchup", "alice", *since, "--deliver", "nope")
    assert unknown.returncode == 2
    assert "no destination named 'nope'" in unknown.stderr
    queued = digestd(
        database_url, tmp_path, "catchup", "alice", *since, "--deliver", "alice-dm", "--json"
    )
    assert queued.returncode == 0, queued.stderr
    answer = json.loads(queued.stdout)
    assert (answer["destination"], answer["state"]) == ("alice-dm", "PENDING")
    said = digestd(database_url, tmp_path, "catchup", "alice", *since, "--deliver", "alice-dm")
    assert said.returncode == 0, said.stderr
    assert said.stdout.startswith("Catch-up of alice queued for alice-dm (delivery ")
    assert "check the deploy" not in said.stdout + queued.stdout  # queued, not printed
    async with db.acquire() as connection:
        rows = await connection.fetch(
            "SELECT delivery_id::text AS uuid, event, state, content FROM deliveries ORDER BY id"
        )
    assert [(r["event"], r["state"]) for r in rows] == [("catchup.ready", "pending")] * 2
    assert rows[0]["uuid"] == answer["deliveryId"]
    content = rows[0]["content"]
    assert content["title"] == "Catch-up for alice"
    assert "can you check the deploy tonight?" in content["markdown"]
    assert content["payload"]["catch_up"]["person"] == "alice"
