"""`totalCount` is exact on every connection of the API: for each list, with and without its
filters, it equals the number of nodes a client pages through to the end. The lists hold a real
channel (../shared/data's Gitter docker room) digested offline, a small channel digested on two
days (so items have every state), a document, a report and schedules.

The test also reads the schema, so a connection added later without a case here fails it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import asyncpg

from runner.catchup.store import ensure_person
from runner.delivery.store import DestinationSpec, create_destination
from runner.importers.ingest import import_path
from schema.types.ids import CHANNEL, global_id
from tests.support.database import Msg, add_channel
from tests.support.digests import digest_once
from tests.support.items import DAY1, DAY1_ROWS, DAY2, DAY2_ROWS
from tests.support.paths import shared_data
from tests.support.reports import QUESTION, _report, ops_and_runbook
from tests.support.schema import gql

SCHEDULE = """mutation($c: ID!) { createSchedule(channelId: $c, cron: "0 9 * * *", timezone: "UTC")
  { __typename } }"""

CONNECTIONS = """{ __schema { types { name fields { name } } queryType { fields { name type {
  name ofType { name } } } } } }"""


def _page_query(field: str, filter_type: str | None) -> str:
    filter_var = f", $filter: {filter_type}" if filter_type else ""
    filter_arg = ", filter: $filter" if filter_type else ""
    return (
        f"query($first: Int, $after: String{filter_var}) {{ {field}(first: $first, "
        f"after: $after{filter_arg}) {{ totalCount nodes {{ id }} "
        "pageInfo { hasNextPage endCursor } } }"
    )


async def _paged(
    db: asyncpg.Pool, field: str, filter_type: str | None, filter: dict[str, Any] | None
) -> tuple[set[int], int]:
    """(every totalCount the pages reported, how many distinct nodes the pages held)."""
    query = _page_query(field, filter_type)
    counts: set[int] = set()
    ids: list[str] = []
    after = None
    while True:
        variables: dict[str, Any] = {"first": 100, "after": after}
        if filter_type:
            variables["filter"] = filter
        page = (await gql(db, query, **variables))[field]
        counts.add(page["totalCount"])
        ids += [node["id"] for node in page["nodes"]]
        if not page["pageInfo"]["hasNextPage"]:
            return counts, len(set(ids))
        after = page["pageInfo"]["endCursor"]


def _day(rows: list[tuple[str, str, str, str | None]], start: Any) -> list[Msg]:
    return [
        Msg(mid, author, start + timedelta(minutes=i), text, reply)
        for i, (mid, author, text, reply) in enumerate(rows)
    ]


async def _lists(db: asyncpg.Pool, database_url: str) -> dict[str, str]:
    """The data every list shows; the channels' global ids by name."""
    async with db.acquire() as connection:
        # Subscribed before the digests run: each digest job's end queues its deliveries.
        for name, kind, events in (
            ("hook", "webhook", ("digest.ready", "job.succeeded")),
            ("team-slack", "slack", ()),
        ):
            secrets = {"url": f"https://hooks.example.org/{name}", "signing_secret": "s" * 32}
            spec = DestinationSpec(name, kind, {}, secrets, events)
            await create_destination(connection, spec)
        for person in ("alice", "bob"):
            await ensure_person(connection, person)
    report = await import_path(db, shared_data("chat/gitter/manual_docker.txt"), channel="docker")
    docker = next(iter(report.channels.values()))
    assert (await digest_once(db, database_url, docker, chunk_tokens=1500)).digest_id
    team = await add_channel(db, "team", _day(DAY1_ROWS, DAY1))
    await digest_once(db, database_url, team)
    await add_channel(db, "team", _day(DAY2_ROWS, DAY2))
    await digest_once(db, database_url, team)
    ops, _ = await ops_and_runbook(db)
    ids: dict[str, str] = {
        "docker": global_id(CHANNEL, docker),
        "team": global_id(CHANNEL, team),
        "ops": global_id(CHANNEL, ops),
    }
    await _report(db, database_url, QUESTION, {"channelIds": [ids["ops"]]})
    for name in ("docker", "ops"):
        made = await gql(db, SCHEDULE, c=ids[name])
        assert made["createSchedule"]["__typename"] == "Schedule"
    return ids


def _cases(ids: dict[str, str]) -> list[tuple[str, str | None, dict[str, Any] | None]]:
    """(query field, its filter's input type, the filter): each list bare and filtered."""
    docker, team, ops = ids["docker"], ids["team"], ids["ops"]
    return [
        ("channels", None, None),
        ("messages", "MessageFilter!", {"channelId": docker}),
        ("messages", "MessageFilter!", {"channelId": docker, "since": "2017-01-01T00:00:00Z"}),
        ("messages", "MessageFilter!", {"channelId": team, "until": DAY2.isoformat()}),
        ("conversations", "ConversationFilter!", {"channelId": docker}),
        ("conversations", "ConversationFilter!", {"channelId": docker, "state": "ANSWERED"}),
        ("digests", "DigestFilter", None),
        ("digests", "DigestFilter", {"channelId": team}),
        ("knowledgeItems", "KnowledgeItemFilter", None),
        ("knowledgeItems", "KnowledgeItemFilter", {"channelId": docker, "current": True}),
        ("knowledgeItems", "KnowledgeItemFilter", {"query": "docker"}),
        ("digestJobs", "DigestJobFilter", None),
        ("digestJobs", "DigestJobFilter", {"channelId": team, "status": "SUCCEEDED"}),
        ("documents", "DocumentFilter", None),
        ("documents", "DocumentFilter", {"until": "2000-01-01T00:00:00Z"}),
        ("reports", "ReportFilter", None),
        ("reports", "ReportFilter", {"channelId": docker}),
        ("schedules", "ScheduleFilter", None),
        ("schedules", "ScheduleFilter", {"channelId": ops}),
        ("entities", "EntityFilter", None),
        ("entities", "EntityFilter", {"channelId": docker, "query": "docker"}),
        ("topics", "TopicProfileFilter", None),
        ("topics", "TopicProfileFilter", {"channelId": team}),
        ("trackedItems", "TrackedItemFilter", None),
        ("trackedItems", "TrackedItemFilter", {"channelId": docker, "open": True}),
        ("trackedItems", "TrackedItemFilter", {"channelId": team, "open": False}),
        ("trackedItems", "TrackedItemFilter", {"current": True, "kind": "DECISION"}),
        ("openQuestions", "OpenQuestionFilter", None),
        ("openQuestions", "OpenQuestionFilter", {"channelId": team}),
        ("actionItems", "ActionItemFilter", {"status": "DONE"}),
        ("decisions", "DecisionFilter", {"channelId": team, "status": "IN_FORCE"}),
        ("people", "PersonFilter", None),
        ("people", "PersonFilter", {"nameContains": "ali"}),
        ("destinations", "DestinationFilter", None),
        ("destinations", "DestinationFilter", {"kind": "SLACK"}),
        ("deliveries", "DeliveryFilter", None),
        ("deliveries", "DeliveryFilter", {"state": "PENDING"}),
    ]


async def test_total_count_is_the_number_of_nodes_paged_through_on_every_connection(
    db: asyncpg.Pool, database_url: str
) -> None:
    ids = await _lists(db, database_url)
    cases = _cases(ids)
    schema = (await gql(db, CONNECTIONS))["__schema"]
    counted = {
        t["name"]
        for t in schema["types"]
        if t["fields"] and any(f["name"] == "totalCount" for f in t["fields"])
    }
    listed = {
        f["name"]: f["type"]["name"] or f["type"]["ofType"]["name"]
        for f in schema["queryType"]["fields"]
    }
    covered = {field for field, _, _ in cases}
    # Every list whose connection offers totalCount has a case, and every such connection is
    # one of those lists (none only nested in another type, out of this test's reach).
    assert {name for name, type_ in listed.items() if type_ in counted} == covered
    assert {listed[field] for field in covered} == counted

    seen: dict[str, list[int]] = {}
    for field, filter_type, filter in cases:
        totals, nodes = await _paged(db, field, filter_type, filter)
        assert totals == {nodes}, (field, filter, totals, nodes)
        seen.setdefault(field, []).append(nodes)
    # Lists that hold something, and filters that leave part of it out.
    assert all(counts[0] > 0 for field, counts in seen.items() if field != "actionItems")
    for field in (
        "messages",
        "conversations",
        "knowledgeItems",
        "entities",
        "trackedItems",
        "people",
        "destinations",
    ):
        assert min(seen[field][1:]) < seen[field][0], (field, seen[field])
    assert seen["messages"][0] > 1000 and seen["actionItems"] == [1]
