"""The API over HTTP as a client uses it: GraphQL requests with tokens, job polling, the sample channel as API input, and the requests the edge tests send."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from tests.support.paths import SAMPLE

DIGEST_QUERY = """
query($id: ID!) {
  digest(id: $id) {
    id title overview signalQuality { level reason } messageCount extractor
    itemCounts { decisions actionItems openQuestions links artifacts knowledgeItems }
    decisions { text messageIds flags { code } }
    actionItems { text owner messageIds }
    openQuestions { text messageIds }
    links { url messageIds sharedBy }
    artifacts { kind title pointer { messageId charStart charEnd resolvedText } }
    knowledgeItems { key kind title verbatim content text messageIds
      pointer { messageId charStart charEnd matchKind resolvedText } flags { code message } }
    rejections { stage field reason }
    job { id status }
  }
}
"""


async def gql(
    client: httpx.AsyncClient,
    query: str,
    variables: dict[str, Any] | None = None,
    token: str | None = None,
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = await client.post(
        "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert "errors" not in body, body["errors"]
    data: dict[str, Any] = body["data"]
    return data


def sample_messages() -> list[dict[str, Any]]:
    rows = [
        json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    return [
        {
            "id": r["id"],
            "author": r["author"],
            "ts": r["ts"],
            "text": r["text"],
            "replyTo": r.get("reply_to"),
        }
        for r in rows
    ]


async def poll_job(client: httpx.AsyncClient, job_id: str, timeout: float = 60) -> dict[str, Any]:
    query = "query($id: ID!) { job(id: $id) { id status phase progress { chunksDone chunksTotal fraction } error resultMessage digestId stats { messages chunks chunksFromCache llmCalls itemsRejected } } }"
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        job = (await gql(client, query, {"id": job_id}))["job"]
        if job["status"] in ("SUCCEEDED", "PARTIAL", "FAILED", "CANCELLED"):
            finished: dict[str, Any] = job
            return finished
        assert asyncio.get_running_loop().time() < deadline, f"job stuck: {job}"
        await asyncio.sleep(0.1)


READER = {"Authorization": "Bearer reader-token-1"}


WRITER = {"Authorization": "Bearer writer-token-1"}


# What a client must never see: internal messages of Python, graphql-core or Postgres.
LEAKS = (
    "Traceback",
    "max() arg",
    "codec",
    "tsquery",
    "recursion",
    "invalid byte sequence",
    "None",
    "overflow",
    "OverflowError",
)


INGEST = """mutation($c: ChannelInput!, $m: [MessageInput!]!) { ingestMessages(channel: $c, messages: $m) {
  ... on IngestResult { accepted rejected channel { id } } ... on InvalidInputError { message } } }"""


async def post(
    http: httpx.AsyncClient,
    query: str,
    variables: dict[str, Any] | None = None,
    headers: dict[str, str] = WRITER,
) -> httpx.Response:
    return await http.post(
        "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
    )


async def post_raw(
    http: httpx.AsyncClient, body: str | bytes, headers: dict[str, str] = WRITER
) -> httpx.Response:
    return await http.post(
        "/graphql", content=body, headers={**headers, "content-type": "application/json"}
    )
