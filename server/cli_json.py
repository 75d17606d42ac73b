"""`--json` output of every command that prints data (`import`, `digest`, `add-doc`, `report`,
`schedule`, and the reads: `channels`, `digests`, `show`, `open`, `conversations`): one JSON
object on one line of stdout, ending with a newline, with the names and the global ids the GraphQL
API uses, so a script reads the same fields whichever way it asked and can pass any id on to the
API. Progress and diagnostics stay on stderr."""

from __future__ import annotations

import sys
from typing import Any

from db.models import DigestJob
from schema.types.enums import JobPhase, JobStatus
from schema.types.ids import (
    DIGEST,
    DIGEST_JOB,
    DOCUMENT_DIGEST,
    REPORT,
    global_id,
    optional_global_id,
)
from server.cli_text import json_text, warn


def job_json(job: DigestJob) -> dict[str, Any]:
    return {
        "id": global_id(DIGEST_JOB, job.id),
        "kind": job.kind,
        # The enums' names, as the API spells them (schema/types/enums.py is the one mapping).
        "status": JobStatus(job.status).name,
        "phase": JobPhase(job.phase).name,
        "chunksDone": job.chunks_done,
        "chunksTotal": job.chunks_total,
        "fraction": job.progress_fraction,
        "attempts": job.attempts,
        "error": job.error,
        "resultMessage": job.result_message,
        # Why a job ended PARTIAL (chunks read offline, bounds left out, ...), as the API's
        # DigestJob.warnings: a script must not have to ask the API to learn it.
        "warnings": [
            {"code": str(flag.get("code", "")), "message": str(flag.get("message", ""))}
            for flag in job.warnings or []
        ],
        "digestId": optional_global_id(DIGEST, job.digest_id),
        "documentDigestId": optional_global_id(DOCUMENT_DIGEST, job.document_digest_id),
        "reportId": optional_global_id(REPORT, job.report_id),
        "stats": job.stats or {},
    }


def emit(value: dict[str, Any]) -> None:
    """One object, one line ending with a newline, on stdout; no raw control character in it
    (server/cli_text.py), whatever the strings it carries held."""
    sys.stdout.write(json_text(value) + "\n")
    sys.stdout.flush()


def refuse(command: str, message: str, as_json: bool, status: int = 2) -> int:
    """A command's error: `command: message` on stderr, and with --json the object
    `{"error": message}` on stdout too, so a script reading stdout always gets one object."""
    warn(f"{command}: {message}")
    if as_json:
        emit({"error": message})
    return status
