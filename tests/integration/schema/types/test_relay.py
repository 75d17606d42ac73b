"""Relay over HTTP: every object type is a Node with one global id that `node(id:)` returns it by,
`nodes(ids:)` keeps order, legacy numeric ids still work where they did, and lists page backward
(`last/before`) exactly as they page forward, keyset all the way."""

from __future__ import annotations

import base64
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import asyncpg
import httpx
import pytest
from pydantic import SecretStr

from db import channels as channel_queries
from db import pages
from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.api import gql, poll_job, sample_messages
from tests.support.database import add_channel, messages, row_id
from tests.support.paths import REPO_ROOT
from tests.support.servers import running_server

READER = "reader-token-1"
WRITER = "writer-token-1"

# The same fields, asked of a node in a list and of node(id:).
FIELDS = {
    "Channel": "id name messageCount",
    "Message": "id channelId messageId text revision",
    "Digest": "id channelId title messageCount jobId",
    "KnowledgeItem": "id digestId channelId key kind title",
    "DigestJob": "id kind status channelId digestId",
    "Document": "id title chars sourceTextHash",
    "DocumentDigest": "id documentId jobId query summary",
}


def gid(type_name: str, pk: int) -> str:
    return base64.b64encode(f"{type_name}:{pk}".encode()).decode()


@pytest.fixture
async def client(db: asyncpg.Pool, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    secured = settings.model_copy(
        update={"digestd_api_tokens": SecretStr(f"reader:{READER},writer:{WRITER}")}
    )
    app = create_app(secured, AppOptions(run_workers=1))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as http,
    ):
        yield http


async def errors_of(
    http: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    response = await http.post(
        "/graphql",
        json={"query": query, "variables": variables or {}},
        headers={"Authorization": f"Bearer {READER}"},
    )
    errors: list[dict[str, Any]] = response.json().get("errors") or []
    return errors


async def one_of_each(http: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    """A channel digested and a document digested; then one object of each type as a list (or,
    for a document digest, its document's latestDigests) shows it to a reader."""
    ingest = """mutation($c: ChannelInput!, $m: [MessageInput!]!) { ingestMessages(channel: $c, messages: $m) {
      ... on IngestResult { channel { id } } } }"""
    channel_id = (
        await gql(http, ingest, {"c": {"name": "relay"}, "m": sample_messages()}, WRITER)
    )["ingestMessages"]["channel"]["id"]
    trigger = "mutation($id: ID!) { triggerDigest(channelId: $id) { ... on DigestJob { id } } }"
    job = (await gql(http, trigger, {"id": channel_id}, WRITER))["triggerDigest"]
    assert (await poll_job_as_writer(http, job["id"]))["status"] == "SUCCEEDED"
    document = """mutation($t: String!) { ingestDocument(input: {text: $t, title: "notes"}) { ... on Document { id } } }"""
    text = " ".join(
        f"Paragraph {i} talks about the release plan and its risks." for i in range(200)
    )
    document_id = (await gql(http, document, {"t": text}, WRITER))["ingestDocument"]["id"]
    digest_document = """mutation($id: ID!) { triggerDocumentDigest(documentId: $id, query: "release risks") {
      ... on DigestJob { id } ... on InvalidInputError { message } ... on NotFoundError { message } } }"""
    document_job = (await gql(http, digest_document, {"id": document_id}, WRITER))[
        "triggerDocumentDigest"
    ]
    assert "id" in document_job, document_job
    assert (await poll_job_as_writer(http, document_job["id"]))["status"] == "SUCCEEDED"

    f = FIELDS
    listed = await gql(
        http,
        f"""{{
      channels(first: 1) {{ nodes {{ {f["Channel"]} }} }}
      messages(filter: {{channelId: "{channel_id}"}}, first: 1) {{ nodes {{ {f["Message"]} }} }}
      digests(first: 1) {{ nodes {{ id }} }}
      knowledgeItems(first: 1) {{ nodes {{ {f["KnowledgeItem"]} }} }}
      digestJobs(first: 1, filter: {{channelId: "{channel_id}"}}) {{ nodes {{ {f["DigestJob"]} }} }}
      documents(first: 1) {{ nodes {{ {f["Document"]} latestDigests(first: 1) {{ {f["DocumentDigest"]} }} }} }}
    }}""",
        token=READER,
    )
    digest_id = listed["digests"]["nodes"][0]["id"]
    digest = (
        await gql(
            http,
            f"query($id: ID!) {{ digest(id: $id) {{ {f['Digest']} }} }}",
            {"id": digest_id},
            READER,
        )
    )["digest"]
    document_row = listed["documents"]["nodes"][0]
    found = {
        "Channel": listed["channels"]["nodes"][0],
        "Message": listed["messages"]["nodes"][0],
        "Digest": digest,
        "KnowledgeItem": listed["knowledgeItems"]["nodes"][0],
        "DigestJob": listed["digestJobs"]["nodes"][0],
        "Document": {k: v for k, v in document_row.items() if k != "latestDigests"},
        "DocumentDigest": document_row["latestDigests"][0],
    }
    return found


async def poll_job_as_writer(http: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    http.headers["Authorization"] = f"Bearer {WRITER}"
    try:
        return await poll_job(http, job_id)
    finally:
        del http.headers["Authorization"]


async def test_node_round_trips_every_type_and_nodes_keeps_order(client: httpx.AsyncClient) -> None:
    found = await one_of_each(client)
    assert set(found) == set(FIELDS)
    for type_name, shown in found.items():
        assert re.fullmatch(r"[A-Za-z0-9+/]+=*", shown["id"]), shown
        assert base64.b64decode(shown["id"]).decode().startswith(f"{type_name}:")
        query = f"query($id: ID!) {{ node(id: $id) {{ __typename ... on {type_name} {{ {FIELDS[type_name]} }} }} }}"
        node = (await gql(client, query, {"id": shown["id"]}, READER))["node"]
        assert node == {"__typename": type_name, **shown}, type_name

    # Reference fields are global ids too: each one goes back into node() as its type.
    references = [
        (found["Message"]["channelId"], "Channel"),
        (found["Digest"]["channelId"], "Channel"),
        (found["Digest"]["jobId"], "DigestJob"),
        (found["KnowledgeItem"]["digestId"], "Digest"),
        (found["DigestJob"]["digestId"], "Digest"),
        (found["DocumentDigest"]["documentId"], "Document"),
        (found["DocumentDigest"]["jobId"], "DigestJob"),
    ]
    for reference, type_name in references:
        node = (
            await gql(
                client,
                "query($id: ID!) { node(id: $id) { __typename id } }",
                {"id": reference},
                READER,
            )
        )["node"]
        assert node == {"__typename": type_name, "id": reference}

    # The light form of a digest names the same node as the full form.
    listed = (await gql(client, "{ digests { nodes { id __typename } } }", token=READER))[
        "digests"
    ]["nodes"][0]
    assert listed == {"id": found["Digest"]["id"], "__typename": "DigestSummary"}

    wanted = [
        found["Document"]["id"],
        gid("Channel", 999_999),
        found["Channel"]["id"],
        found["Message"]["id"],
    ]
    nodes = (
        await gql(
            client,
            "query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }",
            {"ids": wanted},
            READER,
        )
    )["nodes"]
    assert nodes == [
        {"__typename": "Document", "id": wanted[0]},
        None,
        {"__typename": "Channel", "id": wanted[2]},
        {"__typename": "Message", "id": wanted[3]},
    ]

    # Legacy numeric ids, for one release, in the single-object fields and id arguments.
    legacy = {
        "channel": ("Channel", found["Channel"]["id"]),
        "digest": ("Digest", found["Digest"]["id"]),
        "job": ("DigestJob", found["DigestJob"]["id"]),
        "document": ("Document", found["Document"]["id"]),
        "documentDigest": ("DocumentDigest", found["DocumentDigest"]["id"]),
    }
    for field, (_type_name, global_id) in legacy.items():
        pk = str(row_id(global_id))
        by_legacy = (await gql(client, f'{{ {field}(id: "{pk}") {{ id }} }}', token=READER))[field]
        by_global = (await gql(client, f'{{ {field}(id: "{global_id}") {{ id }} }}', token=READER))[
            field
        ]
        assert by_legacy == by_global == {"id": global_id}, field
    channel_pk = str(row_id(found["Channel"]["id"]))
    filtered = await gql(
        client,
        f'{{ a: digests(filter: {{channelId: "{channel_pk}"}}) {{ nodes {{ id }} }} '
        f'b: digests(filter: {{channelId: "{found["Channel"]["id"]}"}}) {{ nodes {{ id }} }} }}',
        token=READER,
    )
    assert filtered["a"] == filtered["b"] == {"nodes": [{"id": found["Digest"]["id"]}]}
    trigger = "mutation($id: ID!) { triggerDigest(channelId: $id) { __typename ... on DigestJob { channelId } } }"
    again = (await gql(client, trigger, {"id": channel_pk}, WRITER))["triggerDigest"]
    assert again == {"__typename": "DigestJob", "channelId": found["Channel"]["id"]}


async def test_bad_and_wrong_type_ids_are_bad_id(client: httpx.AsyncClient) -> None:
    channel = gid("Channel", 1)
    cases = [
        (
            "query($id: ID!) { digest(id: $id) { id } }",
            {"id": channel},
            "names a Channel, not a Digest",
        ),
        ("query($id: ID!) { job(id: $id) { id } }", {"id": gid("Digest", 1)}, "not a DigestJob"),
        (
            "query($id: ID!) { digests(filter: {channelId: $id}) { nodes { id } } }",
            {"id": gid("Message", 1)},
            "not a Channel",
        ),
        (
            "query($id: ID!) { node(id: $id) { id } }",
            {"id": "1"},
            "not an id this API produced",
        ),  # legacy ids name no type
        (
            "query($id: ID!) { node(id: $id) { id } }",
            {"id": gid("Server", 1)},
            "not an id this API produced",
        ),
        (
            "query($id: ID!) { node(id: $id) { id } }",
            {"id": gid("Channel", 1).rstrip("=") + "\n"},
            "not an id",
        ),
        # One node, one id: another base64 spelling of "Channel:1" (or of "Channel:01") is no id.
        ("query($id: ID!) { node(id: $id) { id } }", {"id": "Q2hhbm5lbDox" + "=="}, "not an id"),
        (
            "query($id: ID!) { node(id: $id) { id } }",
            {"id": "Q2hhbm5lbDoxMh=="},
            "not an id",
        ),  # "Channel:12" with stray padding bits
        (
            "query($id: ID!) { node(id: $id) { id } }",
            {"id": base64.b64encode(b"Channel:01").decode()},
            "not an id",
        ),
        (
            "query($ids: [ID!]!) { nodes(ids: $ids) { id } }",
            {"ids": [channel, "garbage"]},
            "not an id",
        ),
    ]
    writer = {"Authorization": f"Bearer {WRITER}"}
    for query, variables, message in cases:
        response = await client.post(
            "/graphql", json={"query": query, "variables": variables}, headers=writer
        )
        errors = response.json().get("errors")
        assert errors, (variables, response.json())
        assert len(errors) == 1 and errors[0]["extensions"]["code"] == "BAD_ID", (variables, errors)
        assert message in errors[0]["message"], (variables, errors)
    # A mutation answers a wrong-type id with its typed error, code BAD_ID (docs/api-errors.md).
    trigger = "mutation($id: ID!) { triggerDigest(channelId: $id) { __typename ... on InvalidInputError { code message } } }"
    typed = await client.post(
        "/graphql", json={"query": trigger, "variables": {"id": gid("Document", 1)}}, headers=writer
    )
    assert "errors" not in typed.json(), typed.json()
    refused = typed.json()["data"]["triggerDigest"]
    assert refused["__typename"] == "InvalidInputError" and refused["code"] == "BAD_ID", refused
    assert "not a Channel" in refused["message"], refused
    too_many = await errors_of(
        client, "query($ids: [ID!]!) { nodes(ids: $ids) { id } }", {"ids": [channel] * 101}
    )
    assert too_many[0]["extensions"]["code"] == "PAGE_SIZE"


async def test_messages_page_backward_as_forward_reversed(
    client: httpx.AsyncClient, db: asyncpg.Pool
) -> None:
    channel_pk = await add_channel(
        db, "paged", messages([("a", f"message {i}") for i in range(45)])
    )
    channel = gid("Channel", channel_pk)
    query = """query($c: ID!, $first: Int, $after: String, $last: Int, $before: String) {
      messages(filter: {channelId: $c}, first: $first, after: $after, last: $last, before: $before) {
        edges { cursor node { id text } } totalCount totalCountEstimate
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }"""

    async def page(**args: Any) -> dict[str, Any]:
        result: dict[str, Any] = (await gql(client, query, {"c": channel, **args}, READER))[
            "messages"
        ]
        info = result["pageInfo"]
        assert (
            info["startCursor"] == result["edges"][0]["cursor"]
            and info["endCursor"] == result["edges"][-1]["cursor"]
        )
        assert result["totalCount"] == 45 and isinstance(result["totalCountEstimate"], int)
        return result

    forward: list[dict[str, Any]] = []
    after = None
    while True:
        got = await page(first=10, after=after)
        forward.append(got)
        if not got["pageInfo"]["hasNextPage"]:
            break
        after = got["pageInfo"]["endCursor"]
    backward: list[dict[str, Any]] = []
    before = None
    while True:
        got = await page(last=10, before=before)
        backward.append(got)
        if not got["pageInfo"]["hasPreviousPage"]:
            break
        before = got["pageInfo"]["startCursor"]

    texts = [[edge["node"]["text"] for edge in p["edges"]] for p in forward]
    assert [len(t) for t in texts] == [10, 10, 10, 10, 5]
    assert sum(texts, []) == [f"message {i}" for i in range(45)]
    back_texts = [[edge["node"]["text"] for edge in p["edges"]] for p in backward]
    assert [len(t) for t in back_texts] == [10, 10, 10, 10, 5]
    # The same rows in the same order: the backward pages, read last to first, are the list.
    assert sum(reversed(back_texts), []) == sum(texts, [])
    assert back_texts[0] == [f"message {i}" for i in range(35, 45)]
    assert [p["pageInfo"]["hasNextPage"] for p in forward] == [True] * 4 + [False]
    assert [p["pageInfo"]["hasPreviousPage"] for p in forward] == [False] + [True] * 4
    assert [p["pageInfo"]["hasPreviousPage"] for p in backward] == [True] * 4 + [False]
    assert [p["pageInfo"]["hasNextPage"] for p in backward] == [False] + [True] * 4

    # A cursor from either direction works in the other: the page before the 3rd forward page
    # is the 2nd forward page.
    third_start = forward[2]["pageInfo"]["startCursor"]
    assert (await page(last=10, before=third_start))["edges"] == forward[1]["edges"]
    # after and before together bound the range from both sides.
    between = await page(
        first=100,
        after=forward[0]["pageInfo"]["endCursor"],
        before=forward[2]["pageInfo"]["startCursor"],
    )
    assert between["edges"] == forward[1]["edges"]
    assert between["pageInfo"]["hasPreviousPage"] and between["pageInfo"]["hasNextPage"]
    # Past either end: an empty page with no cursors.
    empty = (
        await gql(
            client,
            query,
            {"c": channel, "last": 5, "before": forward[0]["edges"][0]["cursor"]},
            READER,
        )
    )["messages"]
    assert empty["edges"] == [] and empty["pageInfo"] == {
        "hasNextPage": True,
        "hasPreviousPage": False,
        "startCursor": None,
        "endCursor": None,
    }

    windowed = (
        await gql(
            client,
            'query($c: ID!) { messages(filter: {channelId: $c, until: "2000-01-01T00:00:00Z"}) { totalCount } }',
            {"c": channel},
            READER,
        )
    )["messages"]
    assert windowed["totalCount"] == 0  # counted with the filters: nothing before 2000


async def test_paging_arguments_are_checked(client: httpx.AsyncClient, db: asyncpg.Pool) -> None:
    channel = gid("Channel", await add_channel(db, "c", messages([("a", "x")])))
    other_list = pages.KeysetCursor("digests", datetime.now(UTC), 1).encode()
    # A cursor of the right list whose sort key is of the other kind: a count where the list
    # sorts by time, a time where it sorts by count (entities, by mentions).
    counted_messages = pages.KeysetCursor("messages", 5, 1).encode()
    timed_entities = pages.KeysetCursor("entities", datetime.now(UTC), 1).encode()
    cases = [
        (
            "query($c: ID!, $a: String) { messages(filter: {channelId: $c}, after: $a) { nodes { id } } }",
            {"c": channel, "a": counted_messages},
            "BAD_CURSOR",
            "not one this API produced",
        ),
        (
            "query($b: String) { entities(last: 2, before: $b) { nodes { id } } }",
            {"b": timed_entities},
            "BAD_CURSOR",
            "not one this API produced",
        ),
        ("{ digests(first: 5, last: 5) { nodes { id } } }", {}, "PAGE_SIZE", "not both"),
        (
            "{ digests(last: 0) { nodes { id } } }",
            {},
            "PAGE_SIZE",
            "last must be between 1 and 100",
        ),
        (
            "{ digests(first: 101) { nodes { id } } }",
            {},
            "PAGE_SIZE",
            "first must be between 1 and 100",
        ),
        (
            '{ digests(last: 3, before: "garbage") { nodes { id } } }',
            {},
            "BAD_CURSOR",
            "invalid cursor",
        ),
        ('{ documents(after: "garbage") { nodes { id } } }', {}, "BAD_CURSOR", "invalid cursor"),
        (
            "query($c: ID!, $b: String) { messages(filter: {channelId: $c}, last: 2, before: $b) { nodes { id } } }",
            {"c": channel, "b": other_list},
            "BAD_CURSOR",
            "belongs to digests",
        ),
    ]
    for query, variables, code, message in cases:
        errors = await errors_of(client, query, variables)
        assert len(errors) == 1 and errors[0]["extensions"]["code"] == code, (query, errors)
        assert message in errors[0]["message"], (query, errors)


async def test_descending_lists_page_backward_too(db: asyncpg.Pool) -> None:
    channel_pk = await add_channel(db, "d", messages([("a", "x")]))
    async with db.acquire() as connection:
        await connection.executemany(
            "INSERT INTO digests (channel_id, title, overview, signal_quality, message_count, extractor)"
            " VALUES ($1, $2, '', 'low', 0, 'offline')",
            [(channel_pk, f"digest {i}") for i in range(23)],
        )
        whole = await pages.fetch_page(connection, pages.DIGESTS, {}, first=100)
        ids = [row.id for row in whole.rows]
        assert (
            ids == sorted(ids, reverse=True)
            and not whole.has_next_page
            and not whole.has_previous_page
        )
        seen: list[list[int]] = []
        before = None
        while True:
            page = await pages.fetch_page(connection, pages.DIGESTS, {}, last=7, before=before)
            seen.append([row.id for row in page.rows])
            if not page.has_previous_page:
                break
            before = page.cursor_of(page.rows[0])
        assert [len(s) for s in seen] == [7, 7, 7, 2]
        assert sum(reversed(seen), []) == ids
        estimate = await pages.estimate_rows(connection, pages.DIGESTS, {"channel_id": channel_pk})
        assert estimate >= 1


async def test_nodes_are_loaded_in_one_batch_per_type(
    client: httpx.AsyncClient, db: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    pks = [await add_channel(db, f"c{i}", messages([("a", "x")])) for i in range(5)]
    calls: list[list[int]] = []
    real = channel_queries.channels_by_ids

    async def counted(connection: asyncpg.Connection, ids: list[int]) -> Any:
        calls.append(list(ids))
        return await real(connection, ids)

    monkeypatch.setattr(channel_queries, "channels_by_ids", counted)
    ids = [gid("Channel", pk) for pk in reversed(pks)]
    nodes = (
        await gql(client, "query($ids: [ID!]!) { nodes(ids: $ids) { id } }", {"ids": ids}, READER)
    )["nodes"]
    assert [n["id"] for n in nodes] == ids
    assert len(calls) == 1 and sorted(calls[0]) == sorted(pks)


def test_no_offset_anywhere_in_the_sql() -> None:
    """Keyset pages only: no OFFSET in any SQL the service runs, nor in the page queries."""
    sources = [
        *REPO_ROOT.joinpath("db").rglob("*.py"),
        *REPO_ROOT.joinpath("db").rglob("*.sql"),
        *REPO_ROOT.joinpath("schema").rglob("*.py"),
    ]
    offenders = [
        str(p)
        for p in sources
        if re.search(r"\bOFFSET\b", p.read_text(encoding="utf-8"), re.IGNORECASE)
    ]
    assert offenders == []
    cursor = pages.KeysetCursor("messages", datetime.now(UTC), 1)
    for spec in (
        pages.MESSAGES,
        pages.DIGESTS,
        pages.JOBS,
        pages.CHANNELS,
        pages.DOCUMENTS,
        pages.KNOWLEDGE_ITEMS,
    ):
        for from_end in (False, True):
            sql, _ = pages.build_page_query(spec, {}, cursor, 10, before=cursor, from_end=from_end)
            assert "OFFSET" not in sql.upper() and "LIMIT" in sql
