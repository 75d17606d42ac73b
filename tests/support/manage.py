"""The management operations as a client sends them: tokens of every role, deletions, a chat
export upload, and counting a channel's rows in SQL to see what a deletion left."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from typing import Any

import asyncpg
import httpx

ROLE_TOKENS = "reader:reader-token-1,writer:writer-token-1,admin:admin-token-1"
READER, WRITER, ADMIN = "reader-token-1", "writer-token-1", "admin-token-1"

DELETE_CHANNEL = """mutation($id: ID!) { deleteChannelData(id: $id) { __typename
  ... on DeletedChannel { deletedId name messages digests schedules jobs }
  ... on NotFoundError { message } ... on InvalidInputError { message reason } } }"""
DELETE_DIGEST = """mutation($id: ID!) { deleteDigest(id: $id) { __typename
  ... on DeletedDigest { deletedId channelId uncoveredMessages }
  ... on NotFoundError { message } ... on InvalidInputError { message reason } } }"""
IMPORT = """mutation($input: ChatExportInput!) { importChatExport(input: $input) { __typename
  ... on ChatImport { format formatDetected accepted rejected repaired inserted updated unchanged
    channels { id name messageCount } skipped { reason count } errors { location reason }
    stopped message }
  ... on InvalidInputError { message code } } }"""

# Every table that holds rows of one channel, and how to count that channel's rows in it.
CHANNEL_ROWS = {
    "messages": "SELECT count(*) FROM messages WHERE channel_id = $1",
    "message_revisions": "SELECT count(*) FROM message_revisions r JOIN messages m "
    "ON m.id = r.message_id WHERE m.channel_id = $1",
    "digests": "SELECT count(*) FROM digests WHERE channel_id = $1",
    "knowledge_items": "SELECT count(*) FROM knowledge_items WHERE channel_id = $1",
    "digest_messages": "SELECT count(*) FROM digest_messages dm JOIN digests d "
    "ON d.id = dm.digest_id WHERE d.channel_id = $1",
    "digest_jobs": "SELECT count(*) FROM digest_jobs WHERE channel_id = $1",
    "schedules": "SELECT count(*) FROM schedules WHERE channel_id = $1",
    "conversations": "SELECT count(*) FROM conversations WHERE channel_id = $1",
    "channel_items": "SELECT count(*) FROM channel_items WHERE channel_id = $1",
    "entities": "SELECT count(*) FROM entities WHERE channel_id = $1",
    "topic_profiles": "SELECT count(*) FROM topic_profiles WHERE channel_id = $1",
}


async def channel_rows(pool: asyncpg.Pool, channel_id: int) -> dict[str, int]:
    async with pool.acquire() as connection:
        return {
            table: int(await connection.fetchval(sql, channel_id))
            for table, sql in CHANNEL_ROWS.items()
        }


async def post(
    http: httpx.AsyncClient, query: str, variables: dict[str, Any], token: str
) -> dict[str, Any]:
    """The whole answer (data and errors), for refusals the gql helper would fail on."""
    response = await http.post(
        "/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {token}"},
    )
    body: dict[str, Any] = response.json()
    return body


def export_input(content: bytes, **fields: Any) -> dict[str, Any]:
    return {"contentBase64": base64.b64encode(content).decode(), **fields}


def slack_zip() -> bytes:
    """A Slack export's zip: channels general (two messages) and random (one)."""

    def day(*texts: str) -> bytes:
        return json.dumps(
            [
                {"type": "message", "user": "U1", "text": text, "ts": f"1577923200.00000{n}"}
                for n, text in enumerate(texts, start=1)
            ]
        ).encode()

    members = {
        "channels.json": json.dumps(
            [{"id": "C1", "name": "general"}, {"id": "C2", "name": "random"}]
        ).encode(),
        "users.json": json.dumps([{"id": "U1", "name": "ann"}]).encode(),
        "general/2020-01-02.json": day("deploy today", "tell bob"),
        "random/2020-01-02.json": day("lunch?"),
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()
