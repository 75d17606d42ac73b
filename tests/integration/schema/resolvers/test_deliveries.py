"""Destinations and deliveries through the API: createDestination (admins) whose secrets no
answer, list or error ever returns; createSchedule(deliverTo:) by name; the `deliveries` list
showing a dead letter with its last error; and retryDelivery queueing it again."""

from __future__ import annotations

import json
from typing import Any

import asyncpg

from runner.delivery.contract import DestinationKind
from runner.delivery.outbox import DeliveryConfig, DeliveryLoop
from runner.delivery.webhook import WebhookSender
from runner.schedules.tick import fire_due_schedules
from schema import build_schema
from schema.context import ApiConfig, Context, Role
from schema.types.ids import CHANNEL, global_id
from server.runtime import Runtime
from server.settings import Settings
from tests.support.database import add_channel, messages
from tests.support.receiver import Answer, Receiver, serving

SECRET = "whsec-api-test-0123456789abcdef"
URL_TOKEN = "tok-api-9d8c7b-private"

CREATE = """
mutation($input: CreateDestinationInput!) {
  createDestination(input: $input) {
    __typename
    ... on Destination { id name kind hint events settings { key value } }
    ... on InvalidInputError { message code reason }
  }
}"""
SCHEDULE = """
mutation($channel: ID!, $to: [String!]) {
  createSchedule(channelId: $channel, cron: "0 9 * * *", deliverTo: $to) {
    __typename ... on Schedule { id deliverTo { name hint } }
    ... on InvalidInputError { message reason }
    ... on NotFoundError { message }
  }
}"""
LISTS = """
query($filter: DeliveryFilter) {
  destinations { edges { node { id name kind hint events settings { key value } } } }
  deliveries(filter: $filter) {
    totalCount
    edges { node { id deliveryId event state attempts lastError nextAttemptAt digestId
                   destination { name hint } } }
  }
}"""
RETRY = """
mutation($id: ID!) {
  retryDelivery(id: $id) {
    __typename ... on Delivery { state attempts lastError deliveryId }
    ... on InvalidInputError { message reason } ... on NotFoundError { message }
  }
}"""


async def _run(
    pool: asyncpg.Pool, query: str, role: Role = Role.ADMIN, **variables: Any
) -> dict[str, Any]:
    result = await build_schema().execute(
        query,
        variable_values=variables,
        context_value=Context(pool=pool, role=role, config=ApiConfig()),
    )
    assert result.errors is None, result.errors
    assert result.data is not None
    return result.data


def _webhook(port: int, name: str = "hook") -> dict[str, Any]:
    return {
        "name": name,
        "kind": "WEBHOOK",
        "settings": [{"key": "team", "value": "ops"}],
        "secrets": [
            {"key": "url", "value": f"http://127.0.0.1:{port}/hooks/{URL_TOKEN}"},
            {"key": "signing_secret", "value": SECRET},
        ],
        "events": ["JOB_FAILED"],
    }


def _assert_no_secret(data: object) -> None:
    text = json.dumps(data)
    assert SECRET not in text and URL_TOKEN not in text


async def test_a_destination_is_created_and_listed_without_its_secrets(db: asyncpg.Pool) -> None:
    created = (await _run(db, CREATE, input=_webhook(9)))["createDestination"]
    assert created["__typename"] == "Destination"
    assert (created["kind"], created["hint"], created["events"]) == (
        "WEBHOOK",
        "127.0.0.1",
        ["JOB_FAILED"],
    )
    assert created["settings"] == [{"key": "team", "value": "ops"}]
    listed = await _run(db, LISTS)
    assert [e["node"]["name"] for e in listed["destinations"]["edges"]] == ["hook"]
    again = (await _run(db, CREATE, input=_webhook(9)))["createDestination"]
    assert again["reason"] == "name_taken"
    bad_url = {
        **_webhook(9, "other"),
        "secrets": [
            {"key": "url", "value": f"ftp://{URL_TOKEN}/x"},
            {"key": "signing_secret", "value": SECRET},
        ],
    }
    refused = (await _run(db, CREATE, input=bad_url))["createDestination"]
    assert refused["reason"] == "invalid_url"
    for data in (created, listed, again, refused):
        _assert_no_secret(data)


async def test_creating_a_destination_needs_an_admin(db: asyncpg.Pool) -> None:
    result = await build_schema().execute(
        CREATE,
        variable_values={"input": _webhook(9)},
        context_value=Context(pool=db, role=Role.WRITER, config=ApiConfig()),
    )
    assert result.errors and result.errors[0].extensions == {"code": "FORBIDDEN"}
    _assert_no_secret(str(result.errors))


async def test_a_dead_delivery_shows_in_the_api_and_retry_delivers_it(
    db: asyncpg.Pool, settings: Settings
) -> None:
    receiver = Receiver(SECRET, answers=[Answer(410)])
    channel_id = await add_channel(db, "ops", messages([("ann", "The deploy runs at nine.")]))
    async with serving(receiver) as port:
        await _run(db, CREATE, input=_webhook(port))
        unknown = await _run(db, SCHEDULE, channel=global_id(CHANNEL, channel_id), to=["nope"])
        assert unknown["createSchedule"]["reason"] == "unknown_destination"
        made = await _run(db, SCHEDULE, channel=global_id(CHANNEL, channel_id), to=["hook"])
        assert made["createSchedule"]["deliverTo"] == [{"name": "hook", "hint": "127.0.0.1"}]
        async with db.acquire() as connection:
            await connection.execute("UPDATE schedules SET next_run_at = now() - interval '1 s'")
            assert len(await fire_due_schedules(connection, max_attempts=3)) == 1
        runtime = Runtime(settings)
        await runtime.open()
        try:
            assert await runtime.new_worker().run_once()
        finally:
            await runtime.close()
        loop = DeliveryLoop(
            db,
            {DestinationKind.WEBHOOK: WebhookSender(allow_private=True)},
            DeliveryConfig(worker_id="api-test", retry_base_seconds=0.1, retry_max_seconds=0.2),
        )
        assert await loop.deliver_due() == 1
        dead = await _run(db, LISTS, filter={"state": "DEAD"})
        (edge,) = dead["deliveries"]["edges"]
        node = edge["node"]
        assert (node["event"], node["state"], node["attempts"], node["lastError"]) == (
            "DIGEST_READY",
            "DEAD",
            1,
            "HTTP 410",
        )
        assert node["destination"] == {"name": "hook", "hint": "127.0.0.1"}
        _assert_no_secret(dead)
        retried = (await _run(db, RETRY, role=Role.WRITER, id=node["id"]))["retryDelivery"]
        assert (retried["state"], retried["attempts"], retried["lastError"]) == ("PENDING", 0, None)
        assert retried["deliveryId"] == node["deliveryId"]
        assert await loop.deliver_due() == 1
        not_dead = (await _run(db, RETRY, role=Role.WRITER, id=node["id"]))["retryDelivery"]
        assert not_dead["reason"] == "not_dead"
    assert [r.delivery_id for r in receiver.received] == [node["deliveryId"]] * 2
    delivered = await _run(db, LISTS, filter={"state": "DELIVERED"})
    assert delivered["deliveries"]["totalCount"] == 1


async def test_a_catch_up_is_sent_by_hand_never_subscribed_to_and_needs_a_writer(
    db: asyncpg.Pool,
) -> None:
    subscribed = {**_webhook(9, "catchups"), "events": ["CATCH_UP"]}
    refused = (await _run(db, CREATE, input=subscribed))["createDestination"]
    assert refused["reason"] == "invalid_event"
    deliver = """mutation { deliverCatchUp(person: "alice", destination: "hook") {
      __typename ... on Delivery { event state } } }"""
    result = await build_schema().execute(
        deliver, context_value=Context(pool=db, role=Role.READER, config=ApiConfig())
    )
    assert result.errors and result.errors[0].extensions == {"code": "FORBIDDEN"}
    await _run(db, CREATE, input=_webhook(9))
    queued = (await _run(db, deliver, role=Role.WRITER))["deliverCatchUp"]
    assert queued == {"__typename": "Delivery", "event": "CATCH_UP", "state": "PENDING"}
