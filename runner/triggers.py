"""Trigger a digest or a report: the one path from "digest this" to a queued job, shared by the
API (`triggerDigest`, `triggerDocumentDigest`, `triggerDocumentDigests`, `triggerReport`), the CLI (`digestd digest`,
`digestd add-doc`, `digestd report`) and the schedule tick.

Each trigger checks its subject and options, builds the job's options and queues it through
`db.jobs.enqueue_job`, which returns the active job holding the same slot instead of a second
one and wakes the workers (NOTIFY). A refusal is a `TriggerRefused` (or `SubjectNotFound`) whose
message is written for the client; each caller words it its own way (a typed GraphQL result, a
CLI line). Not a job runner: the API and the CLI import this, never `runner/jobs/`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg

from db import channels as channel_queries
from db import documents as document_queries
from db import jobs as job_queries
from db import reports as report_queries
from db.jobs import JobKind
from db.models import DigestJob
from runner.core.job_options import ChannelDigestOptions, ReportOptions
from runner.digests.window import window_options
from runner.documents.cache_key import normalize_query, query_hash
from runner.documents.canonical import CanonicalDocument
from runner.documents.policy import (
    DigestConfig,
    choose_documents,
    document_eligibility,
    document_source_id,
    ineligible_reason,
)
from runner.errors import InputError

MIN_CHUNK_TOKENS = 200
MAX_CHUNK_TOKENS = 32000
MAX_QUERY_CHARS = 1000
MAX_REPORT_SOURCES = 50
MAX_BATCH_DOCUMENTS = 50  # each is read whole to rank it


class TriggerRefused(InputError):
    """The digest cannot be queued; `message` says why, `code` is stable to branch on."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class SubjectNotFound(TriggerRefused):
    """The channel, document or schedule named does not exist. `subject` ("channel",
    "document", "schedule") and `row_id` say which, so the API can name it by the id its client
    sent (a global id) rather than by the row id."""

    def __init__(self, subject: str, row_id: int) -> None:
        super().__init__(f"no {subject} with id {row_id}")
        self.subject = subject
        self.row_id = row_id


def channel_digest_options(
    *,
    chunk_tokens: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> ChannelDigestOptions:
    """The options of a channel job: a chunk budget, and a catch-up window when since and/or
    until is given. Raises TriggerRefused; pure, so a CLI checks them before opening anything."""
    if chunk_tokens is not None and not MIN_CHUNK_TOKENS <= chunk_tokens <= MAX_CHUNK_TOKENS:
        raise TriggerRefused(
            f"options.chunkTokens must be {MIN_CHUNK_TOKENS} to {MAX_CHUNK_TOKENS}"
        )
    try:
        window = window_options(since, until)
    except ValueError as error:
        raise TriggerRefused(str(error), code="invalid_window") from None
    return ChannelDigestOptions.parse({"chunk_tokens": chunk_tokens, **window})


async def trigger_channel_digest(
    connection: asyncpg.Connection,
    channel_id: int,
    *,
    chunk_tokens: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    max_attempts: int,
) -> tuple[DigestJob, bool]:
    """Queue a digest of the channel (its uncovered messages, or the catch-up window), or return
    the active job for the same window. Returns (job, created)."""
    options = channel_digest_options(chunk_tokens=chunk_tokens, since=since, until=until)
    if await channel_queries.channel_by_id(connection, channel_id) is None:
        raise SubjectNotFound("channel", channel_id)
    return await job_queries.enqueue_job(
        connection, JobKind.CHANNEL, channel_id, options.stored(), max_attempts=max_attempts
    )


async def trigger_document_digest(
    connection: asyncpg.Connection,
    document_id: int,
    query: str,
    *,
    config: DigestConfig,
    max_attempts: int,
) -> tuple[DigestJob, bool]:
    """Queue a digest of the document for `query` (normalized), or return the active job for
    the same query. Refused when the query is too long or the digest policy makes the document
    ineligible (the job checks again: the policy may change before it runs)."""
    if len(query) > MAX_QUERY_CHARS:
        raise TriggerRefused(f"query is too long: at most {MAX_QUERY_CHARS} characters")
    row = await document_queries.document_by_id(connection, document_id)
    if row is None:
        raise SubjectNotFound("document", document_id)
    document = CanonicalDocument.from_record(document_queries.document_record(row))
    eligibility = document_eligibility(document, document_source_id(document_id), config)
    if not eligibility.eligible:
        raise TriggerRefused(
            # The caller named the document: its row id would mean nothing to an API client.
            f"the document is {ineligible_reason(document, eligibility, config)}",
            code=f"not_eligible:{eligibility.reason}",
        )
    normalized = normalize_query(query)
    return await document_queries.trigger_document_digest(
        connection, document_id, normalized, query_hash(normalized), max_attempts=max_attempts
    )


async def trigger_document_digests(
    connection: asyncpg.Connection,
    document_ids: list[int],
    query: str,
    *,
    config: DigestConfig,
    max_attempts: int,
) -> tuple[list[DigestJob], list[tuple[int, str]]]:
    """Digest several documents for one query: rank them on their raw text for the query, queue
    a digest of each of the first `max_sources` eligible ones (best first; an active job for
    the same document and query is returned instead) and return the jobs with the documents
    left out and why. Refused when a document does not exist, with too many documents or none,
    or when the query is too long. The batch's time budget (`config.timeout`) starts now: each
    queued job carries its end as `batch_deadline`, past which its model gives way to the
    offline summary (an active job returned instead keeps its own options)."""
    if len(query) > MAX_QUERY_CHARS:
        raise TriggerRefused(f"query is too long: at most {MAX_QUERY_CHARS} characters")
    document_ids = list(dict.fromkeys(document_ids))
    if not document_ids:
        raise TriggerRefused("choose at least one document", code="no_sources")
    if len(document_ids) > MAX_BATCH_DOCUMENTS:
        raise TriggerRefused(f"at most {MAX_BATCH_DOCUMENTS} documents in one request")
    documents = []
    for document_id in document_ids:
        row = await document_queries.document_by_id(connection, document_id)
        if row is None:
            raise SubjectNotFound("document", document_id)
        record = document_queries.document_record(row)
        documents.append((document_id, CanonicalDocument.from_record(record)))
    choice = choose_documents(documents, query, config)
    normalized = normalize_query(query)
    deadline = datetime.now(UTC) + timedelta(seconds=config.timeout)
    queued = []
    for document_id in choice.chosen:
        job, _created = await document_queries.trigger_document_digest(
            connection,
            document_id,
            normalized,
            query_hash(normalized),
            max_attempts=max_attempts,
            batch_deadline=deadline,
        )
        queued.append(job)
    return queued, choice.skipped


async def trigger_report(
    connection: asyncpg.Connection,
    question: str,
    *,
    channel_ids: list[int],
    document_ids: list[int],
    since: datetime | None = None,
    until: datetime | None = None,
    max_attempts: int,
) -> tuple[DigestJob, bool]:
    """Queue a report answering `question` from the channels' messages in [since, until) and the
    documents, or return the active job for the same request. Refused without a question or a
    source, with too many sources, or with a source that does not exist."""
    normalized = normalize_query(question)
    if not normalized:
        raise TriggerRefused("question must not be empty", code="empty_question")
    if len(normalized) > MAX_QUERY_CHARS:
        raise TriggerRefused(f"question is too long: at most {MAX_QUERY_CHARS} characters")
    channel_ids, document_ids = list(dict.fromkeys(channel_ids)), list(dict.fromkeys(document_ids))
    if not channel_ids and not document_ids:
        raise TriggerRefused("choose at least one channel or document", code="no_sources")
    if len(channel_ids) + len(document_ids) > MAX_REPORT_SOURCES:
        raise TriggerRefused(f"at most {MAX_REPORT_SOURCES} channels and documents in one report")
    try:
        window = window_options(since, until)
    except ValueError as error:
        raise TriggerRefused(
            str(error).replace("options.", "sources."), code="invalid_window"
        ) from None
    found = {c.id for c in await channel_queries.channels_by_ids(connection, channel_ids)}
    if missing := [i for i in channel_ids if i not in found]:
        raise SubjectNotFound("channel", missing[0])
    found = {d.id for d in await document_queries.documents_by_ids(connection, document_ids)}
    if missing := [i for i in document_ids if i not in found]:
        raise SubjectNotFound("document", missing[0])
    options = ReportOptions.for_request(normalized, channel_ids, document_ids, window)
    return await report_queries.trigger_report(
        connection, options.stored(), max_attempts=max_attempts
    )
