"""Schedules through the API: createSchedule, pauseSchedule, resumeSchedule and deleteSchedule
(writers only; refusals as typed union members), the `schedules` keyset connection filtered by
channel, and Schedule as a Relay node whose lastJob is the digest job its last firing queued."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg

from runner.schedules.tick import fire_due_schedules
from schema import build_schema
from schema.context import ApiConfig, Context, Role
from schema.types.ids import CHANNEL, DIGEST_JOB, SCHEDULE, global_id
from tests.support.database import add_channel, messages, row_id
from tests.support.schema import gql

CREATE = """
mutation($channel: ID!, $cron: String!, $tz: String!) {
  createSchedule(channelId: $channel, cron: $cron, timezone: $tz) {
    __typename
    ... on Schedule { id channelId channel { name } cron timezone paused nextRunAt lastRunAt
                      lastJobId lastJob { id } createdAt }
    ... on InvalidInputError { message code reason }
    ... on NotFoundError { message code }
  }
}"""
CHANGE = """
mutation($id: ID!) {
  pause: pauseSchedule(id: $id) { __typename ... on Schedule { paused nextRunAt }
                                  ... on NotFoundError { message } ... on InvalidInputError { code } }
}"""
RESUME = """
mutation($id: ID!) {
  resumeSchedule(id: $id) { __typename ... on Schedule { paused nextRunAt }
                            ... on NotFoundError { message } }
}"""
DELETE = """
mutation($id: ID!) {
  deleteSchedule(id: $id) { __typename ... on DeletedSchedule { deletedId }
                            ... on NotFoundError { message code } }
}"""
LIST = """
query($filter: ScheduleFilter, $first: Int, $after: String) {
  schedules(filter: $filter, first: $first, after: $after) {
    edges { cursor node { id cron channel { name } } }
    pageInfo { hasNextPage hasPreviousPage endCursor }
  }
}"""
READ = """
query($id: ID!) {
  schedule(id: $id) { cron lastRunAt lastJobId lastJob { id kind status channelId } }
  node(id: $id) { __typename ... on Schedule { timezone } }
}"""


async def _two_channels(pool: asyncpg.Pool) -> tuple[str, str]:
    ops = await add_channel(pool, "ops", messages([("ann", "The deploy runs at nine.")]))
    web = await add_channel(pool, "web", messages([("bob", "The review moved to Tuesday.")]))
    return global_id(CHANNEL, ops), global_id(CHANNEL, web)


async def _create(pool: asyncpg.Pool, channel: str, cron: str, tz: str = "UTC") -> dict[str, Any]:
    return dict((await gql(pool, CREATE, channel=channel, cron=cron, tz=tz))["createSchedule"])


async def test_create_schedule_returns_it_with_its_next_slot_in_its_zone(db: asyncpg.Pool) -> None:
    ops, _ = await _two_channels(db)
    made = await _create(db, ops, "0 9 * * 1-5", "Europe/Berlin")
    assert made["__typename"] == "Schedule", made
    assert (made["channelId"], made["channel"], made["cron"], made["timezone"]) == (
        ops,
        {"name": "ops"},
        "0 9 * * 1-5",
        "Europe/Berlin",
    )
    assert (made["paused"], made["lastRunAt"], made["lastJobId"], made["lastJob"]) == (
        False,
        None,
        None,
        None,
    )
    local = datetime.fromisoformat(made["nextRunAt"]).astimezone(ZoneInfo("Europe/Berlin"))
    assert (local.hour, local.minute, local.weekday() < 5) == (9, 0, True)
    assert made["id"] == global_id(SCHEDULE, 1)


async def test_bad_cron_zone_or_channel_are_typed_refusals_naming_the_field(
    db: asyncpg.Pool,
) -> None:
    ops, _ = await _two_channels(db)
    cron = await _create(db, ops, "0 25 * * *")
    assert cron["__typename"] == "InvalidInputError"
    assert (cron["code"], cron["reason"]) == ("BAD_USER_INPUT", "invalid_cron")
    assert cron["message"].startswith("cron: bad hour field in '0 25 * * *'")
    zone = await _create(db, ops, "0 9 * * *", "Berlin")
    assert (zone["__typename"], zone["reason"]) == ("InvalidInputError", "invalid_timezone")
    assert zone["message"].startswith("timezone: 'Berlin' is not an IANA time zone name")
    missing = await _create(db, global_id(CHANNEL, 999), "0 9 * * *")
    assert missing == {
        "__typename": "NotFoundError",
        "message": f"no channel with id {global_id(CHANNEL, 999)}",  # as sent, not the row id
        "code": "NOT_FOUND",
    }
    wrong_type = await _create(db, global_id(DIGEST_JOB, 1), "0 9 * * *")
    assert (wrong_type["__typename"], wrong_type["code"]) == ("InvalidInputError", "BAD_ID")
    assert (await gql(db, LIST))["schedules"]["edges"] == []


async def test_pause_resume_delete_and_not_found(db: asyncpg.Pool) -> None:
    ops, _ = await _two_channels(db)
    schedule = (await _create(db, ops, "30 6 * * *", "America/New_York"))["id"]
    paused = (await gql(db, CHANGE, id=schedule))["pause"]
    assert paused == {"__typename": "Schedule", "paused": True, "nextRunAt": None}
    resumed = (await gql(db, RESUME, id=schedule))["resumeSchedule"]
    assert resumed["paused"] is False
    assert (
        datetime.fromisoformat(resumed["nextRunAt"]).astimezone(ZoneInfo("America/New_York")).hour
        == 6
    )
    deleted = (await gql(db, DELETE, id=schedule))["deleteSchedule"]
    assert deleted == {"__typename": "DeletedSchedule", "deletedId": schedule}
    again = (await gql(db, DELETE, id=schedule))["deleteSchedule"]
    assert again == {
        "__typename": "NotFoundError",
        "message": f"no schedule with id {schedule}",
        "code": "NOT_FOUND",
    }
    assert (await gql(db, CHANGE, id=schedule))["pause"]["__typename"] == "NotFoundError"
    assert (await gql(db, CHANGE, id=ops))["pause"] == {
        "__typename": "InvalidInputError",
        "code": "BAD_ID",
    }
    assert (await gql(db, READ, id=schedule)) == {"schedule": None, "node": None}


async def test_schedules_list_newest_first_by_keyset_filtered_by_channel_and_state(
    db: asyncpg.Pool,
) -> None:
    ops, web = await _two_channels(db)
    made = [
        (await _create(db, channel, cron))["id"]
        for channel, cron in ((ops, "0 9 * * *"), (web, "0 10 * * *"), (ops, "0 17 * * 5"))
    ]
    first = (await gql(db, LIST, first=2))["schedules"]
    assert [e["node"]["id"] for e in first["edges"]] == made[::-1][:2]
    assert first["pageInfo"]["hasNextPage"] is True
    rest = (await gql(db, LIST, first=2, after=first["pageInfo"]["endCursor"]))["schedules"]
    assert [e["node"]["id"] for e in rest["edges"]] == [made[0]]
    assert (rest["pageInfo"]["hasNextPage"], rest["pageInfo"]["hasPreviousPage"]) == (False, True)

    of_ops = (await gql(db, LIST, filter={"channelId": ops}))["schedules"]["edges"]
    assert [(e["node"]["cron"], e["node"]["channel"]["name"]) for e in of_ops] == [
        ("0 17 * * 5", "ops"),
        ("0 9 * * *", "ops"),
    ]
    await gql(db, CHANGE, id=made[1])
    paused = (await gql(db, LIST, filter={"paused": True}))["schedules"]["edges"]
    assert [e["node"]["id"] for e in paused] == [made[1]]


async def test_a_fired_schedule_reads_back_its_last_job_and_as_a_node(db: asyncpg.Pool) -> None:
    ops, _ = await _two_channels(db)
    schedule = (await _create(db, ops, "*/15 * * * *"))["id"]
    async with db.acquire() as connection:
        await connection.execute(
            "UPDATE schedules SET next_run_at = now() - interval '1 second' WHERE id = $1",
            row_id(schedule),
        )
        (fired,) = await fire_due_schedules(connection, max_attempts=3)
    read = await gql(db, READ, id=schedule)
    job = read["schedule"]["lastJob"]
    assert fired.job_id is not None
    assert read["schedule"]["lastJobId"] == job["id"] == global_id(DIGEST_JOB, fired.job_id)
    assert (job["kind"], job["status"], job["channelId"]) == ("channel", "QUEUED", ops)
    assert datetime.fromisoformat(read["schedule"]["lastRunAt"]) > datetime.now(
        fired.slot.tzinfo
    ) - timedelta(minutes=1)
    assert read["node"] == {"__typename": "Schedule", "timezone": "UTC"}


async def test_readers_may_list_but_not_change_schedules(db: asyncpg.Pool) -> None:
    ops, _ = await _two_channels(db)
    context = Context(pool=db, role=Role.READER, config=ApiConfig())
    schema = build_schema()
    refused = await schema.execute(
        CREATE,
        variable_values={"channel": ops, "cron": "0 9 * * *", "tz": "UTC"},
        context_value=context,
    )
    assert refused.errors and refused.errors[0].extensions == {"code": "FORBIDDEN"}
    listed = await schema.execute(LIST, context_value=context)
    assert listed.errors is None and listed.data == {
        "schedules": {
            "edges": [],
            "pageInfo": {"hasNextPage": False, "hasPreviousPage": False, "endCursor": None},
        }
    }
