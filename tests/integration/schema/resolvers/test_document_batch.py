"""`triggerDocumentDigests`: several documents for one query in one request. They are ranked on
their raw text (quality, relevance to the query, length), a digest job is queued for each of
the first `max_sources` eligible ones, best first, and the others come back as skipped with
why; the jobs then digest each document for the query. Real PostgreSQL and the real worker."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import asyncpg

from db import jobs
from db.documents import store_document
from runner.documents.ingest import ingest_text
from runner.documents.job import DocumentJobRunner
from runner.documents.policy import DigestConfig, DigestPolicy
from runner.extract.offline import OfflineExtractor
from runner.worker import Worker, WorkerConfig
from schema import build_schema
from schema.context import ApiConfig, Context, Role
from schema.types.ids import DIGEST_JOB, DOCUMENT, global_id, parse_id
from tests.support.documents import DOCUMENT_TEXT

CONFIG = DigestConfig(policy=DigestPolicy.AUTO, min_chars=1000, max_sources=2)
TRIGGER = """
mutation($ids: [ID!]!, $query: String!) {
  triggerDocumentDigests(documentIds: $ids, query: $query) {
    __typename
    ... on DocumentDigestBatch { jobs { id documentId status } skipped { documentId reason } }
    ... on NotFoundError { message }
    ... on InvalidInputError { message reason }
  }
}"""
QUERY = "How are load tests run?"


async def _trigger(pool: asyncpg.Pool, ids: Sequence[str]) -> dict[str, Any]:
    context = Context(pool=pool, role=Role.WRITER, config=ApiConfig(digest_config=CONFIG))
    result = await build_schema().execute(
        TRIGGER, variable_values={"ids": ids, "query": QUERY}, context_value=context
    )
    assert result.errors is None, result.errors
    assert result.data is not None
    answer: dict[str, Any] = result.data["triggerDocumentDigests"]
    return answer


async def test_several_documents_are_ranked_and_the_best_ones_digested(
    db: asyncpg.Pool, database_url: str
) -> None:
    edition = uuid.uuid4().hex
    texts = {
        "partly": f"{DOCUMENT_TEXT}\n\nEdition {edition}.",  # "load tests": 2 of 3 terms
        "unrelated": " ".join(["Gardening notes on tomatoes, soil and watering."] * 40)
        + f" Edition {edition}.",
        "best": " ".join(["Load tests run nightly against the staging cluster."] * 40)
        + f" Edition {edition}.",  # all three terms
        "short": f"Load tests run. Edition {edition}.",  # under min_chars
    }
    ids: dict[str, int] = {}
    async with db.acquire() as connection:
        for name, text in texts.items():
            row, _ = await store_document(connection, ingest_text(text).as_record())
            ids[name] = row.id
    sent = [global_id(DOCUMENT, ids[name]) for name in texts]

    batch = await _trigger(db, sent)
    assert batch["__typename"] == "DocumentDigestBatch", batch
    assert [job["documentId"] for job in batch["jobs"]] == [
        global_id(DOCUMENT, ids["best"]),
        global_id(DOCUMENT, ids["partly"]),
    ]
    assert all(job["status"] == "QUEUED" for job in batch["jobs"])
    assert batch["skipped"] == [
        {"documentId": global_id(DOCUMENT, ids["unrelated"]), "reason": "max_sources"},
        {"documentId": global_id(DOCUMENT, ids["short"]), "reason": "too_small"},
    ]
    # The same request again while they are queued: the same jobs, not new ones.
    again = await _trigger(db, sent)
    assert [job["id"] for job in again["jobs"]] == [job["id"] for job in batch["jobs"]]

    runner = DocumentJobRunner(config=CONFIG)
    worker = Worker(db, database_url, WorkerConfig(), OfflineExtractor, documents=runner)
    assert await worker.run_once() and await worker.run_once()
    job_ids = [parse_id(job["id"], DIGEST_JOB) for job in batch["jobs"]]
    async with db.acquire() as connection:
        done = await jobs.jobs_by_ids(connection, job_ids)
    assert {job.document_id for job in done} == {ids["best"], ids["partly"]}
    for job in done:
        assert job.status == "succeeded" and job.document_digest_id is not None, job
        assert job.options["query"] == QUERY

    missing = await _trigger(db, [*sent, global_id(DOCUMENT, 10**12)])
    assert missing["__typename"] == "NotFoundError", missing
    empty = await _trigger(db, [])
    assert empty == {
        "__typename": "InvalidInputError",
        "message": empty["message"],
        "reason": "no_sources",
    }
