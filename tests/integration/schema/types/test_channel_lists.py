"""What a dashboard reads of a channel without a second request: its latest digest, its open
counts and its lists (digests, tracked items, conversations, schedules, entities), nested in
the channel, through the real HTTP /graphql. Each nested list must be the top-level list of
that channel (same rows, same order, same filter meaning, an exact totalCount), the open counts
the totalCounts of the matching top-level lists; channels are found by name; a nesting that
would run thousands of statements is refused before it runs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import asyncpg
import httpx

from schema.types.ids import CHANNEL, global_id
from tests.support.api import READER, gql, post
from tests.support.database import Msg, add_channel
from tests.support.digests import digest_once
from tests.support.items import DAY1, DAY1_ROWS, DAY2, DAY2_ROWS

READER_TOKEN = "reader-token-1"
WRITER_TOKEN = "writer-token-1"

SCHEDULE = (
    """mutation($c: ID!) { createSchedule(channelId: $c, cron: "0 9 * * *") { __typename } }"""
)

# Each nested list beside the same list at the top level, filtered to the channel.
NESTED_AND_TOP = """
query($c: ID!) {
  channel(id: $c) {
    lastDigest { id overview }
    openItemCounts { openQuestions openActionItems decisionsInForce open }
    digests(first: 10) { totalCount nodes { id } }
    open: trackedItems(filter: {open: true}, first: 30) { totalCount nodes { id kind status } }
    settled: trackedItems(filter: {open: false}, first: 30) { totalCount nodes { id } }
    decisions: trackedItems(filter: {kind: DECISION}, first: 30) { totalCount nodes { id } }
    conversations(first: 30) { totalCount nodes { id } }
    schedules(first: 5) { totalCount nodes { id } }
    entities(first: 30) { totalCount nodes { id } }
  }
  digests(filter: {channelId: $c}, first: 10) { totalCount nodes { id } }
  open: trackedItems(filter: {channelId: $c, open: true}, first: 30) { totalCount nodes { id } }
  settled: trackedItems(filter: {channelId: $c, open: false}, first: 30) {
    totalCount nodes { id }
  }
  decisions: trackedItems(filter: {channelId: $c, kind: DECISION}, first: 30) {
    totalCount nodes { id }
  }
  questions: openQuestions(filter: {channelId: $c}) { totalCount }
  actions: actionItems(filter: {channelId: $c, status: OPEN}) { totalCount }
  inForce: decisions(filter: {channelId: $c, status: IN_FORCE}) { totalCount }
  conversations(filter: {channelId: $c}, first: 30) { totalCount nodes { id } }
  schedules(filter: {channelId: $c}, first: 5) { totalCount nodes { id } }
  entities(filter: {channelId: $c}, first: 30) { totalCount nodes { id } }
}
"""


def _day(rows: list[tuple[str, str, str, str | None]], start: Any) -> list[Msg]:
    return [
        Msg(mid, author, start + timedelta(minutes=i), text, reply)
        for i, (mid, author, text, reply) in enumerate(rows)
    ]


async def _channels(db: asyncpg.Pool, database_url: str) -> dict[str, int]:
    """`team` digested on two days (items answered, done, superseded), `night` on the first
    only (its items still open), `quiet` never digested; a `team` on another server too."""
    team = await add_channel(db, "team", _day(DAY1_ROWS, DAY1))
    assert (await digest_once(db, database_url, team)).digest_id
    await add_channel(db, "team", _day(DAY2_ROWS, DAY2))
    assert (await digest_once(db, database_url, team)).digest_id
    night = await add_channel(db, "night-shift", _day(DAY1_ROWS, DAY1))
    assert (await digest_once(db, database_url, night)).digest_id
    quiet = await add_channel(db, "quiet", _day(DAY1_ROWS[:1], DAY1))
    other = await add_channel(db, "team", _day(DAY1_ROWS[:1], DAY1), server="other-server")
    return {"team": team, "night": night, "quiet": quiet, "other": other}


def _ids(connection: dict[str, Any]) -> list[str]:
    return [node["id"] for node in connection["nodes"]]


async def test_nested_lists_are_the_top_level_lists_of_the_channel(
    db: asyncpg.Pool, database_url: str, api: httpx.AsyncClient
) -> None:
    channels = await _channels(db, database_url)
    for name in ("team", "night"):
        made = await gql(api, SCHEDULE, {"c": global_id(CHANNEL, channels[name])}, WRITER_TOKEN)
        assert made["createSchedule"]["__typename"] == "Schedule"
    seen: dict[str, dict[str, Any]] = {}
    for name in ("team", "night", "quiet"):
        data = await gql(
            api, NESTED_AND_TOP, {"c": global_id(CHANNEL, channels[name])}, READER_TOKEN
        )
        channel = data["channel"]
        seen[name] = channel
        for field in ("digests", "open", "settled", "decisions", "conversations", "schedules"):
            assert _ids(channel[field]) == _ids(data[field]), (name, field)
            assert channel[field]["totalCount"] == data[field]["totalCount"], (name, field)
        # Entities tie on their mention count; the order within a tie is the list's own.
        assert _ids(channel["entities"]) == _ids(data["entities"]), name
        assert channel["entities"]["totalCount"] == data["entities"]["totalCount"]
        # `open: true` keeps its meaning: only OPEN questions and action items.
        assert {(n["kind"], n["status"]) for n in channel["open"]["nodes"]} <= {
            ("QUESTION", "OPEN"),
            ("ACTION_ITEM", "OPEN"),
        }
        # The counts are the totalCounts of the lists they stand for, without paging them.
        counts = channel["openItemCounts"]
        assert counts == {
            "openQuestions": data["questions"]["totalCount"],
            "openActionItems": data["actions"]["totalCount"],
            "decisionsInForce": data["inForce"]["totalCount"],
            "open": data["open"]["totalCount"],
        }, name
        # The latest digest is the first of the channel's digests.
        last = channel["lastDigest"]
        assert (last["id"] if last else None) == next(iter(_ids(data["digests"])), None)

    team, night, quiet = seen["team"], seen["night"], seen["quiet"]
    assert team["digests"]["totalCount"] == 2 and team["lastDigest"]["overview"]
    assert team["conversations"]["totalCount"] > 0 and team["entities"]["totalCount"] > 0
    assert team["schedules"]["totalCount"] == 1
    # The night shift's question and action item still wait; its decision holds.
    assert night["openItemCounts"] == {
        "openQuestions": 1,
        "openActionItems": 1,
        "decisionsInForce": 1,
        "open": 2,
    }
    # The team answered, finished and replaced them the next day.
    assert team["openItemCounts"]["open"] < night["openItemCounts"]["open"]
    assert quiet["lastDigest"] is None and quiet["digests"]["totalCount"] == 0
    assert quiet["openItemCounts"] == dict.fromkeys(
        ("openQuestions", "openActionItems", "decisionsInForce", "open"), 0
    )


PAGE = """query($c: ID!, $after: String) { channel(id: $c) {
  %s(first: 1, after: $after) { totalCount nodes { id } pageInfo { hasNextPage endCursor } } } }"""


async def test_nested_lists_page_to_their_end_with_an_exact_total(
    db: asyncpg.Pool, database_url: str, api: httpx.AsyncClient
) -> None:
    channels = await _channels(db, database_url)
    team = global_id(CHANNEL, channels["team"])
    for field in ("digests", "trackedItems", "conversations", "entities"):
        totals: set[int] = set()
        ids: list[str] = []
        after = None
        while True:
            data = await gql(api, PAGE % field, {"c": team, "after": after}, READER_TOKEN)
            page = data["channel"][field]
            totals.add(page["totalCount"])
            ids += _ids(page)
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
        assert len(ids) > 1, field  # more than one page
        assert totals == {len(ids)} == {len(set(ids))}, (field, totals, len(ids))


BY_NAME = """query($name: String!, $server: ID) { channel(name: $name, serverId: $server) {
  id name serverName } }"""
LISTED = """query($filter: ChannelFilter, $server: ID) {
  channels(filter: $filter, serverId: $server, first: 50) { totalCount nodes { name serverId } } }"""


async def test_channels_are_found_by_name_and_listed_by_filter(
    db: asyncpg.Pool, database_url: str, api: httpx.AsyncClient
) -> None:
    channels = await _channels(db, database_url)
    found = await gql(api, BY_NAME, {"name": "night-shift"}, READER_TOKEN)
    assert found["channel"] == {
        "id": global_id(CHANNEL, channels["night"]),
        "name": "night-shift",
        "serverName": "test-server",
    }
    assert (await gql(api, BY_NAME, {"name": "nobody"}, READER_TOKEN))["channel"] is None

    everything = (await gql(api, LISTED, {}, READER_TOKEN))["channels"]
    server = next(n["serverId"] for n in everything["nodes"] if n["name"] == "night-shift")
    other = next(n["serverId"] for n in everything["nodes"] if n["serverId"] != server)
    # Two servers have a `team`: the name alone is ambiguous, with its server it is one channel.
    ambiguous = await post(api, BY_NAME, {"name": "team"}, headers=READER)
    error = ambiguous.json()["errors"][0]
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and "serverId" in error["message"]
    for server_id, key in ((server, "team"), (other, "other")):
        one = await gql(api, BY_NAME, {"name": "team", "server": server_id}, READER_TOKEN)
        assert one["channel"]["id"] == global_id(CHANNEL, channels[key])

    def names(data: dict[str, Any]) -> list[str]:
        return sorted(n["name"] for n in data["channels"]["nodes"])

    assert everything["totalCount"] == 4
    on_server = await gql(api, LISTED, {"filter": {"serverId": server}}, READER_TOKEN)
    assert names(on_server) == ["night-shift", "quiet", "team"]
    assert on_server["channels"]["totalCount"] == 3
    # Part of the name, in any case; `%` and `_` are plain characters.
    shift = await gql(api, LISTED, {"filter": {"nameContains": "SHIFT"}}, READER_TOKEN)
    assert names(shift) == ["night-shift"] and shift["channels"]["totalCount"] == 1
    wild = await gql(api, LISTED, {"filter": {"nameContains": "%"}}, READER_TOKEN)
    assert names(wild) == []
    both = {"filter": {"serverId": other, "nameContains": "tea"}}
    assert names(await gql(api, LISTED, both, READER_TOKEN)) == ["team"]
    # The deprecated argument still filters; one that disagrees with the filter is refused.
    legacy = await gql(api, LISTED, {"server": other}, READER_TOKEN)
    assert names(legacy) == ["team"]
    clash = await post(api, LISTED, {"server": other, "filter": {"serverId": server}}, READER)
    assert clash.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    neither = await post(api, "{ channel { id } }", headers=READER)
    assert neither.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_nesting_lists_under_a_page_of_channels_is_costed_per_statement(
    db: asyncpg.Pool, api: httpx.AsyncClient
) -> None:
    """Twenty aliases of a channel's digests and their count under a page of 100 channels
    would send 4,000 statements; a dashboard's page stays far within the limit."""
    aliases = " ".join(f"a{i}: digests(first: 1) {{ totalCount }}" for i in range(20))
    abusive = await post(api, f"{{ channels(first: 100) {{ nodes {{ {aliases} }} }} }}", {}, READER)
    error = abusive.json()["errors"][0]
    assert error["extensions"]["code"] == "TOO_COMPLEX" and abusive.json()["data"] is None
    dashboard = """{ channels(first: 20) { nodes { name lastDigest { id overview }
      openItemCounts { openQuestions openActionItems decisionsInForce }
      trackedItems(filter: {open: true}, first: 10) { totalCount nodes { kind text } } } } }"""
    assert "errors" not in (await post(api, dashboard, {}, READER)).json()
