"""The whole flow as a user runs it: a live HTTP server, GraphQL ingest, trigger, poll, read the
digest, check every pointer against the stored message, re-trigger and see no new work."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.api import DIGEST_QUERY, gql, poll_job, sample_messages
from tests.support.servers import running_server


async def test_ingest_trigger_poll_read_over_http(db: Any, settings: Settings) -> None:
    app = create_app(settings, AppOptions(run_workers=1))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as client,
    ):
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        ready = (await client.get("/readyz")).json()
        assert ready["status"] == "ready"

        ingest = """mutation($c: ChannelInput!, $m: [MessageInput!]!) {
          ingestMessages(channel: $c, messages: $m) {
            ... on IngestResult { accepted rejected inserted unchanged channel { id name messageCount } errors { location reason } }
            ... on InvalidInputError { message } } }"""
        messages = sample_messages()
        bad = {
            "id": "bad-1",
            "author": "x",
            "ts": "2024-01-01T00:00:00Z",
            "text": "x" * (settings.digestd_max_message_chars + 1),
        }
        result = (
            await gql(
                client,
                ingest,
                {"c": {"name": "team-platform", "server": "acme"}, "m": messages + [bad]},
            )
        )["ingestMessages"]
        assert result["accepted"] == len(messages) and result["rejected"] == 1
        assert result["errors"][0]["location"] == f"messages[{len(messages)}]"
        channel_id = result["channel"]["id"]
        assert result["channel"]["messageCount"] == len(messages)

        again = (
            await gql(
                client, ingest, {"c": {"name": "team-platform", "server": "acme"}, "m": messages}
            )
        )["ingestMessages"]
        assert again["inserted"] == 0 and again["unchanged"] == len(messages)

        trigger = """mutation($id: ID!) { triggerDigest(channelId: $id) {
          ... on DigestJob { id status } ... on NotFoundError { message } } }"""
        job = (await gql(client, trigger, {"id": channel_id}))["triggerDigest"]
        assert job["status"] in ("QUEUED", "RUNNING")
        done = await poll_job(client, job["id"])
        assert done["status"] == "SUCCEEDED", done
        assert done["stats"]["messages"] == len(messages)

        digest = (await gql(client, DIGEST_QUERY, {"id": done["digestId"]}))["digest"]
        assert digest["messageCount"] == len(messages)
        assert digest["itemCounts"]["decisions"] >= 1 and digest["itemCounts"]["actionItems"] >= 1
        await assert_pointers_resolve(client, channel_id, digest)

        # Nothing new: the next digest job ends at once with no extraction work.
        rerun = (await gql(client, trigger, {"id": channel_id}))["triggerDigest"]
        rerun_done = await poll_job(client, rerun["id"])
        assert rerun_done["status"] == "SUCCEEDED"
        assert rerun_done["resultMessage"] == "no new messages"
        assert rerun_done["digestId"] is None and rerun_done["stats"]["chunks"] is None
        # It ended while reading its window, before any extraction: no chunks, and done.
        assert rerun_done["phase"] == "READING"
        assert rerun_done["progress"] == {"chunksDone": 0, "chunksTotal": 0, "fraction": 1.0}

        listing = await gql(
            client,
            "{ digests(first: 5) { nodes { id title excerpt itemCounts { decisions } } pageInfo { hasNextPage endCursor } } }",
        )
        assert [n["id"] for n in listing["digests"]["nodes"]] == [done["digestId"]]
        missing = (await gql(client, trigger, {"id": "999999"}))["triggerDigest"]
        assert "no channel" in missing["message"]


async def assert_pointers_resolve(
    client: httpx.AsyncClient, channel_id: str, digest: dict[str, Any]
) -> None:
    """Every pointer slices the stored message's normalizedText to exactly its resolved text."""
    texts: dict[str, str] = {}
    authors: dict[str, str] = {}
    after = None
    while True:
        page = (
            await gql(
                client,
                "query($c: ID!, $a: String) { messages(filter: {channelId: $c}, first: 100, after: $a) { nodes { messageId author normalizedText } pageInfo { hasNextPage endCursor } } }",
                {"c": channel_id, "a": after},
            )
        )["messages"]
        texts.update({n["messageId"]: n["normalizedText"] for n in page["nodes"]})
        authors.update({n["messageId"]: n["author"] for n in page["nodes"]})
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    pointers = [a["pointer"] for a in digest["artifacts"]] + [
        k["pointer"] for k in digest["knowledgeItems"] if k["pointer"]
    ]
    for pointer in pointers:
        text = texts[pointer["messageId"]]
        assert 0 <= pointer["charStart"] < pointer["charEnd"] <= len(text)
        assert text[pointer["charStart"] : pointer["charEnd"]] == pointer["resolvedText"]
    cited = {
        i
        for field in ("decisions", "actionItems", "openQuestions", "links")
        for item in digest[field]
        for i in item["messageIds"]
    }
    assert cited <= set(texts), "a cited message id does not exist"
    for link in digest["links"]:  # who shared a link: the authors of its messages, each once
        assert link["sharedBy"] == list(dict.fromkeys(authors[m] for m in link["messageIds"]))


@pytest.mark.parametrize("role", ["none", "wrong", "reader"])
async def test_tokens_guard_the_api(db: Any, settings: Settings, role: str) -> None:
    secured = settings.model_copy(
        update={
            "digestd_api_tokens": __import__("pydantic").SecretStr(
                "reader:read-secret-1,writer:write-secret-1"
            )
        }
    )
    app = create_app(secured, AppOptions(run_workers=0))
    token = {"none": None, "wrong": "nope-nope-nope", "reader": "read-secret-1"}[role]
    async with running_server(app) as base_url, httpx.AsyncClient(base_url=base_url) as client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        query = await client.post(
            "/graphql", json={"query": "{ channels { nodes { id } } }"}, headers=headers
        )
        mutation = await client.post(
            "/graphql",
            json={"query": 'mutation { cancelJob(id: "1") { ... on NotFoundError { message } } }'},
            headers=headers,
        )
        if role == "reader":
            assert query.status_code == 200 and "errors" not in query.json()
            body = mutation.json()
            assert body["data"] is None and "writer token" in body["errors"][0]["message"]
        else:
            assert query.status_code == 401 and mutation.status_code == 401
            assert "data" not in query.json()
        writer = await client.post(
            "/graphql",
            json={"query": 'mutation { cancelJob(id: "1") { ... on NotFoundError { message } } }'},
            headers={"Authorization": "Bearer write-secret-1"},
        )
        assert writer.json()["data"]["cancelJob"]["message"] == "no job with id 1"


async def test_abusive_queries_are_refused(db: Any, settings: Settings) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    async with running_server(app) as base_url, httpx.AsyncClient(base_url=base_url) as client:
        deep = "{ digestJobs { nodes { digest { job { digest { job { digest { job { digest { job { digest { id } } } } } } } } } } } }"
        aliases = "{ " + " ".join(f"a{i}: channels {{ nodes {{ id }} }}" for i in range(40)) + " }"
        many_tokens = "{ channels { nodes { " + "id " * 2500 + "} } }"
        # Twice each: the second answer may come through the parse and validation caches,
        # which must refuse exactly as the first time.
        for _ in range(2):
            body = (await client.post("/graphql", json={"query": deep})).json()
            assert "exceeds maximum operation depth" in body["errors"][0]["message"]
            body = (await client.post("/graphql", json={"query": aliases})).json()
            assert "aliases" in body["errors"][0]["message"].lower()
            body = (await client.post("/graphql", json={"query": many_tokens})).json()
            assert "more than 2000 tokens" in body["errors"][0]["message"]
        body = (
            await client.post(
                "/graphql", json={"query": "{ digests(first: 1000) { nodes { id } } }"}
            )
        ).json()
        assert "between 1 and 100" in body["errors"][0]["message"]
        body = (
            await client.post(
                "/graphql", json={"query": '{ digests(after: "garbage") { nodes { id } } }'}
            )
        ).json()
        assert "invalid cursor" in body["errors"][0]["message"]
        body = (
            await client.post("/graphql", json={"query": '{ digest(id: "abc") { id } }'})
        ).json()
        assert "invalid digest id" in body["errors"][0]["message"]
        huge = await client.post(
            "/graphql",
            content=b"x" * (33 * 1024 * 1024),
            headers={"content-type": "application/json"},
        )
        assert huge.status_code == 413
