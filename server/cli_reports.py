"""`digestd report "QUESTION" --channel NAME --doc ID [--since T] [--until T] [--wait] [--json]`:
queue a report across channels and documents and, with --wait, run it here and print its
Markdown (with --json: one object with the job and the report, ids as the API gives them)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import Any

from db import reports as report_queries
from db.jobs import TERMINAL, JobStatus
from db.models import Report
from runner.triggers import SubjectNotFound, TriggerRefused, trigger_report
from schema.types.ids import DOCUMENT, REPORT, cli_row_id, global_id
from server.cli_json import emit, job_json, refuse
from server.cli_text import say, warn
from server.runtime import Runtime

COMMAND = "digestd report"


def report_json(row: Report) -> dict[str, Any]:
    return {
        "id": global_id(REPORT, row.id),
        "question": row.question,
        "title": row.title,
        "markdown": row.markdown,
        "sections": row.sections,
        "sources": row.sources,
        "audit": row.audit,
        "writer": row.writer,
        "fidelity": row.fidelity.get("fidelity", []),
        "warnings": row.fidelity.get("warnings", []),
        "dropped_content_ids": row.fidelity.get("dropped_content_ids", []),
        # Stored before per-item records existed: the empty defaults of the current version.
        "content_fidelity_schema_version": row.fidelity.get(
            "content_fidelity_schema_version",
            report_queries.EMPTY_FIDELITY["content_fidelity_schema_version"],
        ),
        "content_fidelity": row.fidelity.get("content_fidelity", {}),
        "content_archive_hashes": row.fidelity.get("content_archive_hashes", {}),
        "research": row.fidelity.get("research"),
    }


async def report(
    runtime: Runtime,
    args: argparse.Namespace,
    channel_ids: list[int],
    since: datetime | None,
    until: datetime | None,
) -> int:
    document_ids: list[int] = []
    for text in args.doc:
        row_id = cli_row_id(text, DOCUMENT)
        if row_id is None:
            return refuse(COMMAND, f"--doc {text!r} is not a document id", args.json)
        document_ids.append(row_id)
    try:
        async with runtime.pool.acquire() as connection:
            job, created = await trigger_report(
                connection,
                args.question,
                channel_ids=channel_ids,
                document_ids=document_ids,
                since=since,
                until=until,
                max_attempts=runtime.settings.digestd_max_attempts,
            )
    except (SubjectNotFound, TriggerRefused) as refused:
        return refuse(COMMAND, refused.message, args.json)
    print(
        f"job {job.id} {JobStatus.QUEUED if created else 'already ' + job.status}", file=sys.stderr
    )
    if not args.wait:
        if args.json:
            emit({"created": created, "job": job_json(job)})
        return 0
    if job.status not in TERMINAL:
        job = await runtime.run_until_done(job.id, run_worker=not args.no_worker)
    rows: list[Report] = []
    if job.report_id is not None:
        async with runtime.pool.acquire() as connection:
            rows = await report_queries.reports_by_ids(connection, [job.report_id])
    # PARTIAL: the model failed and the offline report was written instead; a report all the same.
    code = 0 if job.status in (JobStatus.SUCCEEDED, JobStatus.PARTIAL) and rows else 1
    if args.json:
        emit(
            {
                "created": created,
                "job": job_json(job),
                "report": report_json(rows[0]) if rows else None,
            }
        )
        return code
    if not rows:
        print(f"job {job.id} {job.status}: {job.error or job.result_message or ''}")
        return code
    say(rows[0].markdown)
    stats, audit = job.stats or {}, rows[0].audit
    origin = "served from the cache" if stats.get("cache_hit") else "written"
    print(
        f"job {job.id} {job.status}: report {job.report_id} {origin}; "
        f"{audit.get('kept')} sentences, {audit.get('sources')} sources, "
        f"{audit.get('dropped')} dropped",
        file=sys.stderr,
    )
    research = rows[0].fidelity.get("research")
    if research and not stats.get("cache_hit"):
        print(research_line(research), file=sys.stderr)
    for warning in rows[0].fidelity.get("warnings", []):
        warn(f"warning {warning.get('code')}: {warning.get('message')}")
    return code


def research_line(research: dict[str, Any]) -> str:
    """`2 sub-questions (rules), 2 cited; refinement added 1 unit, 1 cited`: what the report's
    gathering did, in one line."""
    subs = research.get("sub_questions", [])
    cited = sum(1 for sub in subs if sub.get("cited"))
    line = f"{len(subs)} sub-question(s) ({research.get('method')}), {cited} cited"
    refinement = research.get("refinement", {})
    if refinement.get("ran"):
        line += (
            f"; refinement added {refinement.get('added', 0)} unit(s), "
            f"{refinement.get('added_cited', 0)} cited"
        )
    digests = research.get("document_digests", [])
    if digests:
        line += f"; {len(digests)} document digest(s) used as evidence"
    return line
