"""`digestd show digest|report|document ID`: print a stored digest, report or document digest as
the Markdown the commands that make them print (runner/exports/markdown.py; a report's stored Markdown),
or with --json one object with the API's field names and that Markdown.

ID is a number or the global id the API shows. For `document` it is the document digest's id
(`add-doc` prints it); a document's own global id shows that document's newest digest."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import asyncpg

from db import digests as digest_queries
from db import documents as document_queries
from db import reports as report_queries
from db.models import DocumentDigest
from runner.documents.payload import DigestPayload, validate_payload_dict
from runner.exports.markdown import render_digest, render_document_digest
from schema.types.ids import (
    CHANNEL,
    DIGEST,
    DIGEST_JOB,
    DOCUMENT,
    DOCUMENT_DIGEST,
    REPORT,
    cli_row_id,
    global_id,
    optional_global_id,
)
from server.cli_json import emit, refuse
from server.cli_reads import digest_json, iso
from server.cli_reports import report_json
from server.cli_runtime import with_runtime
from server.cli_text import say
from server.runtime import Runtime
from server.settings import Settings

COMMAND = "digestd show"
TYPES = {"digest": DIGEST, "report": REPORT, "document": DOCUMENT_DIGEST}


async def _digest(connection: asyncpg.Connection, row_id: int, as_json: bool) -> int:
    row = await digest_queries.digest_by_id(connection, row_id)
    if row is None:
        return refuse(COMMAND, f"no digest {row_id}", as_json, status=1)
    markdown = await render_digest(connection, row_id)
    if as_json:
        channel = global_id(CHANNEL, row.channel_id)
        emit({"digest": {**digest_json(row), "channelId": channel, "markdown": markdown}})
    else:
        say(markdown)
    return 0


async def _report(connection: asyncpg.Connection, row_id: int, as_json: bool) -> int:
    rows = await report_queries.reports_by_ids(connection, [row_id])
    if not rows:
        return refuse(COMMAND, f"no report {row_id}", as_json, status=1)
    if as_json:
        emit({"report": report_json(rows[0])})
    else:
        say(rows[0].markdown)
    return 0


def document_digest_json(row: DocumentDigest, markdown: str) -> dict[str, Any]:
    validate_payload_dict(row.payload)  # validated on read, like every stored payload
    return {
        "id": global_id(DOCUMENT_DIGEST, row.id),
        "documentId": global_id(DOCUMENT, row.document_id),
        "query": row.query,
        "createdAt": iso(row.created_at),
        "jobId": optional_global_id(DIGEST_JOB, row.job_id),
        "payload": DigestPayload.from_dict(row.payload).to_dict(),
        "markdown": markdown,
    }


async def _document_digest(
    connection: asyncpg.Connection, text: str, row_id: int | None, as_json: bool
) -> int:
    if row_id is not None:
        rows = await document_queries.document_digests_by_ids(connection, [row_id])
        missing = f"no document digest {row_id}"
    else:  # a document's global id: its newest digest
        document_id = cli_row_id(text, DOCUMENT)
        if document_id is None:
            return refuse(COMMAND, f"{text!r} is not a document digest id", as_json)
        rows = await document_queries.latest_digests_of_documents(connection, [document_id], 1)
        missing = f"document {document_id} has no digest (add-doc --query digests it)"
    if not rows:
        return refuse(COMMAND, missing, as_json, status=1)
    markdown = await render_document_digest(connection, rows[0])
    if as_json:
        emit({"documentDigest": document_digest_json(rows[0], markdown)})
    else:
        say(markdown)
    return 0


def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    row_id = cli_row_id(args.id, TYPES[args.kind])
    if row_id is None and args.kind != "document":
        return refuse(COMMAND, f"{args.id!r} is not a {args.kind} id", args.json)

    async def body(runtime: Runtime) -> int:
        async with runtime.pool.acquire() as connection:
            if args.kind == "digest":
                assert row_id is not None
                return await _digest(connection, row_id, args.json)
            if args.kind == "report":
                assert row_id is not None
                return await _report(connection, row_id, args.json)
            return await _document_digest(connection, args.id, row_id, args.json)

    return asyncio.run(with_runtime(settings, body))
