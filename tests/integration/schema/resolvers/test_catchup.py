"""People, handles and read markers through the API: `linkHandle` and `markRead` (writers only;
refusals as typed union members), `people` as a keyset connection and Person as a Relay node, a
catch-up of a name nobody stored that writes nothing, and the request errors of `catchUp`."""

from __future__ import annotations

import asyncpg

from schema import build_schema
from schema.context import ApiConfig, Context, Role
from schema.types.ids import CHANNEL, global_id
from tests.support.database import BASE_TIME, add_channel, messages
from tests.support.schema import gql

LINK = """mutation($p: String!, $h: String!, $c: ID) { linkHandle(person: $p, handle: $h, channelId: $c) {
  __typename ... on Person { id name handles { handle key channelId } }
  ... on InvalidInputError { code reason message } ... on NotFoundError { code missing: id } } }"""
MARK = """mutation($p: String!, $c: ID!, $u: DateTime) { markRead(person: $p, channelId: $c, until: $u) {
  __typename ... on ReadMarker { readUntil channelId person { name } }
  ... on InvalidInputError { code reason } ... on NotFoundError { code missing: id } } }"""
PEOPLE = """query($f: PersonFilter) { people(filter: $f, first: 10) { totalCount
  nodes { id name handles { key } } } }"""
CATCH_UP = """query($p: String!, $c: [ID!]) { catchUp(person: $p, channelIds: $c) { person known handles
  channelCount channels { channelName counts { mentions total } } } }"""


async def _ops(db: asyncpg.Pool) -> str:
    rows = messages([("bob", "ann: the deploy key rotated"), ("ann", "thanks bob")])
    return global_id(CHANNEL, await add_channel(db, "ops", rows))


async def test_link_handle_creates_the_person_and_refuses_what_it_cannot_link(
    db: asyncpg.Pool,
) -> None:
    ops = await _ops(db)
    linked = (await gql(db, LINK, p="Ann Lee", h="@ann_", c=None))["linkHandle"]
    assert linked["__typename"] == "Person" and linked["name"] == "Ann Lee"
    assert [(h["key"], h["channelId"]) for h in linked["handles"]] == [
        ("ann lee", None),
        ("ann", None),
    ]
    # Linking what the person has is no change; the same name in another case is that person.
    again = (await gql(db, LINK, p="ann lee", h="ANN", c=None))["linkHandle"]
    assert again["id"] == linked["id"] and len(again["handles"]) == 2
    # A handle names one person per scope; in one channel it may be someone else's.
    taken = (await gql(db, LINK, p="Annika", h="ann", c=None))["linkHandle"]
    assert taken == {
        "__typename": "InvalidInputError",
        "code": "BAD_USER_INPUT",
        "reason": "handle_taken",
        "message": "the handle 'ann' already names someone else",
    }
    scoped = (await gql(db, LINK, p="Annika", h="ann", c=ops))["linkHandle"]
    assert scoped["__typename"] == "Person"
    short = (await gql(db, LINK, p="Ann Lee", h="@a_", c=None))["linkHandle"]
    assert short["reason"] == "invalid_handle"
    missing = global_id(CHANNEL, 999_999)
    gone = (await gql(db, LINK, p="Ann Lee", h="annie", c=missing))["linkHandle"]
    assert gone == {"__typename": "NotFoundError", "code": "NOT_FOUND", "missing": missing}
    bad = (await gql(db, LINK, p="Ann Lee", h="annie", c="nope"))["linkHandle"]
    assert bad["__typename"] == "InvalidInputError" and bad["code"] == "BAD_ID"

    people = (await gql(db, PEOPLE, f={"nameContains": "ANN"}))["people"]
    assert people["totalCount"] == 2
    assert {p["name"] for p in people["nodes"]} == {"Ann Lee", "Annika"}
    node = await gql(
        db, "query($id: ID!) { node(id: $id) { ... on Person { name } } }", id=linked["id"]
    )
    assert node["node"] == {"name": "Ann Lee"}


async def test_a_catch_up_of_someone_not_stored_writes_nothing(db: asyncpg.Pool) -> None:
    ops = await _ops(db)
    data = (await gql(db, CATCH_UP, p="Ann", c=[ops]))["catchUp"]
    assert data["known"] is False and data["handles"] == ["ann"]
    # The channel's messages are from 2024: older than the default 24 hours.
    assert data["channelCount"] == 0
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM people") == 0
    assert (await gql(db, PEOPLE))["people"]["totalCount"] == 0


async def test_mark_read_moves_forward_only_and_refuses_a_missing_channel(
    db: asyncpg.Pool,
) -> None:
    ops = await _ops(db)
    later = BASE_TIME.replace(hour=12).isoformat()
    marked = (await gql(db, MARK, p="ann", c=ops, u=later))["markRead"]
    assert marked["__typename"] == "ReadMarker" and marked["person"] == {"name": "ann"}
    back = (await gql(db, MARK, p="ann", c=ops, u=BASE_TIME.isoformat()))["markRead"]
    assert back["readUntil"] == marked["readUntil"]
    missing = global_id(CHANNEL, 999_999)
    gone = (await gql(db, MARK, p="ann", c=missing, u=later))["markRead"]
    assert gone == {"__typename": "NotFoundError", "code": "NOT_FOUND", "missing": missing}
    blank = (await gql(db, MARK, p="   ", c=ops, u=later))["markRead"]
    assert blank["reason"] == "invalid_person"


async def test_readers_may_catch_up_but_not_mark_read_or_link(db: asyncpg.Pool) -> None:
    ops = await _ops(db)
    context = Context(pool=db, role=Role.READER, config=ApiConfig())
    schema = build_schema()
    for query, variables in ((MARK, {"p": "ann", "c": ops}), (LINK, {"p": "ann", "h": "al"})):
        refused = await schema.execute(query, variable_values=variables, context_value=context)
        assert refused.errors and refused.errors[0].extensions == {"code": "FORBIDDEN"}
    read = await schema.execute(CATCH_UP, variable_values={"p": "ann"}, context_value=context)
    assert read.errors is None
    too_many = await schema.execute(
        CATCH_UP, variable_values={"p": "ann", "c": [ops] * 101}, context_value=context
    )
    assert too_many.errors and too_many.errors[0].extensions == {
        "code": "BAD_USER_INPUT",
        "argument": "channelIds",
    }
    blank = await schema.execute(CATCH_UP, variable_values={"p": " "}, context_value=context)
    assert blank.errors and blank.errors[0].extensions == {
        "code": "BAD_USER_INPUT",
        "argument": "person",
    }
