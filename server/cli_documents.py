"""`digestd add-doc PATH_OR_URL... [--title T] [--query Q] [--wait] [--json]`: ingest documents,
optionally queue digests of them for a query and, with --wait, run them here and print each digest
as Markdown (with --json: the DigestPayload). Several documents for one query are ranked for it
and the best `DIGESTD_DOC_MAX_SOURCES` digested; the others are named with why."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from db import documents as document_queries
from db.jobs import JobStatus
from runner.core.display_names import name_problem
from runner.documents.canonical import CanonicalDocument
from runner.documents.errors import DocumentError
from runner.documents.ingest import ingest_bytes, ingest_url
from runner.documents.payload import DigestPayload, validate_payload_dict
from runner.exports.markdown import render_document_digest
from runner.triggers import TriggerRefused, trigger_document_digest, trigger_document_digests
from schema.types.ids import DOCUMENT, global_id
from server.cli_json import emit, job_json, refuse
from server.cli_text import say
from server.runtime import Runtime, digest_config, fetch_policy
from server.settings import Settings

MAX_FILE_BYTES = 10 * 1024 * 1024


async def _canonical(
    source: str, args: argparse.Namespace, settings: Settings
) -> CanonicalDocument:
    problem = name_problem(args.title) if args.title else None
    if problem:  # typed: refused, where a title read from the document is made one line
        raise ValueError(f"--title {problem}")
    path = Path(source)
    if path.is_file():
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"{path} is over {MAX_FILE_BYTES} bytes")
        data = path.read_bytes()
        return await asyncio.to_thread(
            ingest_bytes,
            data,
            None,
            title=args.title,
            password=args.password,
            file_name=path.name,  # the title of a document that names none itself
        )
    if "://" in source:  # every scheme goes to the fetcher, which refuses all but http(s)
        return await ingest_url(
            source, policy=fetch_policy(settings), title=args.title, password=args.password
        )
    raise ValueError(f"{source} is neither a file nor a URL")


async def _wait(
    runtime: Runtime, job_id: int, run_worker: bool, result: dict[str, Any] | None
) -> int:
    """Run or wait for the job; print its payload (or, with --json, add job and payload to
    `result` and print that one object)."""
    job = await runtime.run_until_done(job_id, run_worker)
    code = 0 if job.status == JobStatus.SUCCEEDED else 1
    if job.document_digest_id is None:
        if result is not None:
            emit({**result, "job": job_json(job), "payload": None})
            return code
        print(f"job {job_id} {job.status}: {job.error or job.result_message or ''}")
        return code
    async with runtime.pool.acquire() as connection:
        rows = await document_queries.document_digests_by_ids(connection, [job.document_digest_id])
        # Validated on read (jsonb keeps its own key order; the JSON keeps the schema's).
        validate_payload_dict(rows[0].payload)
        if result is not None:
            payload = DigestPayload.from_dict(rows[0].payload).to_dict()
            emit({**result, "job": job_json(job), "payload": payload})
            return 0
        say(await render_document_digest(connection, rows[0]))
    stats = job.stats or {}
    origin = "served from the cache" if stats.get("cache_hit") else "digested"
    print(f"job {job_id} {job.status}: digest {job.document_digest_id} {origin}", file=sys.stderr)
    # Why a digest is PARTIAL (the model failed and the offline rules wrote the summary).
    for flag in job.warnings or []:
        print(f"warning {flag.get('code', '')}: {flag.get('message', '')}", file=sys.stderr)
    return 0


async def add_doc(runtime: Runtime, args: argparse.Namespace) -> int:
    if len(args.source) > 1:
        return await _add_docs(runtime, args)
    return await _add_one(runtime, args, args.source[0])


async def _add_docs(runtime: Runtime, args: argparse.Namespace) -> int:
    """Several sources: each stored (a bad one refused, the rest kept), then, with --query, the
    best for the query digested (`trigger_document_digests`), each waited for with --wait."""
    if args.title:
        return refuse("digestd add-doc", "--title names one document: give one source", args.json)
    settings = runtime.settings
    stored: list[int] = []
    for source in args.source:
        try:
            document = await _canonical(source, args, settings)
        except DocumentError as error:
            return refuse("digestd add-doc", f"{source}: {error.code}: {error.reason}", args.json)
        except (OSError, ValueError) as error:
            return refuse("digestd add-doc", str(error), args.json)
        async with runtime.pool.acquire() as connection:
            row, created = await document_queries.store_document(connection, document.as_record())
        stored.append(row.id)
        if not args.json:
            print(f"document {row.id} ({'stored' if created else 'already stored'}): {source}")
    documents = [global_id(DOCUMENT, document_id) for document_id in stored]
    if args.query is None:
        if args.json:
            emit({"documents": documents})
        return 0
    try:
        async with runtime.pool.acquire() as connection:
            jobs, skipped = await trigger_document_digests(
                connection,
                stored,
                args.query,
                config=digest_config(settings),
                max_attempts=settings.digestd_max_attempts,
            )
    except TriggerRefused as refused:
        return refuse("digestd add-doc", str(refused.message), args.json)
    for document_id, reason in skipped:
        print(f"document {document_id} not digested: {reason}", file=sys.stderr)
    for job in jobs:
        print(f"job {job.id} {job.status}: document {job.document_id}", file=sys.stderr)
    if not args.wait:
        if args.json:
            emit(
                {
                    "documents": documents,
                    "jobs": [job_json(job) for job in jobs],
                    "skipped": [
                        {"document": global_id(DOCUMENT, document_id), "reason": reason}
                        for document_id, reason in skipped
                    ],
                }
            )
        return 0
    code = 0
    for job in jobs:  # best first, as ranked; with --json one object (a line) per digest
        shown = {"documents": documents} if args.json else None
        code = max(code, await _wait(runtime, int(job.id), not args.no_worker, shown))
    return code


async def _add_one(runtime: Runtime, args: argparse.Namespace, source: str) -> int:
    settings = runtime.settings
    try:
        document = await _canonical(source, args, settings)
    except DocumentError as error:
        problem = f"{source}: {error.code}: {error.reason}"
        return refuse("digestd add-doc", problem, args.json)
    except (OSError, ValueError) as error:
        return refuse("digestd add-doc", str(error), args.json)
    async with runtime.pool.acquire() as connection:
        row, created = await document_queries.store_document(connection, document.as_record())
    result: dict[str, Any] | None = None
    if args.json:
        result = {
            "document": {
                "id": global_id(DOCUMENT, row.id),
                "created": created,
                "contentType": document.content_type,
                "chars": len(document.canonical_text),
                "pages": len(document.page_spans or []) or None,
                "sourceTextHash": document.source_text_hash,
                "warnings": [{"code": w.code, "message": w.message} for w in document.warnings],
            }
        }
    else:
        pages = f", {len(document.page_spans)} pages" if document.page_spans else ""
        print(
            f"document {row.id} ({'stored' if created else 'already stored'}): "
            f"{document.content_type}, {len(document.canonical_text)} characters{pages}, "
            f"{document.source_text_hash}"
        )
        for warning in document.warnings:
            print(f"  warning {warning.code}: {warning.message}")
    if args.query is None:
        if result is not None:
            emit(result)
        return 0
    try:
        async with runtime.pool.acquire() as connection:
            job, job_created = await trigger_document_digest(
                connection,
                row.id,
                args.query,
                config=digest_config(settings),
                max_attempts=settings.digestd_max_attempts,
            )
    except TriggerRefused as refused:
        return refuse("digestd add-doc", str(refused.message), args.json)
    print(
        f"job {job.id} {JobStatus.QUEUED if job_created else 'already ' + job.status}",
        file=sys.stderr,
    )
    if not args.wait:
        if result is not None:
            emit({**result, "job": job_json(job), "payload": None})
        return 0
    return await _wait(runtime, int(job.id), run_worker=not args.no_worker, result=result)
