"""Report jobs whose evidence does not fit the writer model, run by the real worker on real
PostgreSQL against the fake OpenAI-compatible model (the real `openai` client): a small context
window forces cutting and dropping, and the stored report carries the per-item fidelity records,
the warnings and the archive hashes; protected evidence the model cannot take even as headlines
ends the job PARTIAL with the extractive report and the fitting's records. The API reads the
per-item records and archive hashes back over HTTP."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from db import jobs
from db import reports as report_queries
from db.models import DigestJob
from db.reports import EMPTY_FIDELITY
from runner.core.fidelity import FIDELITY_SCHEMA_VERSION, TOP_ITEMS_CONDENSED, FidelityLevel
from runner.documents.archive import read_archive
from runner.evaluation.fake_report_model import fake_report_writer, request_sources
from runner.extract.offline import OfflineExtractor
from runner.reports.extractive import EXTRACTOR_VERSION
from runner.reports.job import ReportJobRunner
from runner.reports.llm_writer import EVIDENCE_ARCHIVE_SOURCE, LLMReportWriter
from runner.triggers import trigger_report
from runner.worker import Worker, WorkerConfig
from schema.types.ids import REPORT, global_id
from tests.support.api import gql
from tests.support.database import add_channel, messages
from tests.support.reports import QUESTION

# Long messages on the question's subject: 120 of them never fit a 8,000-token model.
ROWS = [
    (
        f"user{i}",
        f"The database migration rollback step {i} is approved by the on-call lead after "
        f"review {i} of the written plan, with the checks of the release team listed in the "
        f"runbook and the approval recorded in the change ticket {i}.",
    )
    for i in range(120)
]


async def _run(
    pool: asyncpg.Pool, database_url: str, writer: LLMReportWriter, question: str
) -> DigestJob:
    channel = await add_channel(pool, "ops", messages(ROWS))
    runner = ReportJobRunner(llm_writer=writer)
    worker = Worker(pool, database_url, WorkerConfig(), OfflineExtractor, reports=runner)
    async with pool.acquire() as connection:
        job, _ = await trigger_report(
            connection, question, max_attempts=3, channel_ids=[channel], document_ids=[]
        )
    assert await worker.run_once()
    async with pool.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
    assert done is not None
    return done


async def test_a_small_context_drops_evidence_and_the_stored_report_says_what_happened_to_each(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    writer, model = fake_report_writer(reduce_context_tokens=8000)
    writer.archive_dir = tmp_path
    done = await _run(db, database_url, writer, QUESTION)
    assert done.status == "succeeded" and done.report_id is not None, done.error
    async with db.acquire() as connection:
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id])
    stored: dict[str, Any] = row.fidelity
    assert stored["content_fidelity_schema_version"] == FIDELITY_SCHEMA_VERSION
    codes = [w["code"] for w in stored["warnings"]]
    assert "CONTENT_DROPPED" in codes and "CONTENT_TRUNCATED" in codes
    records = {
        item: record["phases"]["synthesis"] for item, record in stored["content_fidelity"].items()
    }
    assert len(records) == 60  # every unit within the cap
    dropped = [item for item, r in records.items() if r["level"] == "dropped"]
    assert dropped and set(dropped) <= set(stored["dropped_content_ids"])
    assert all(records[item]["final_tokens"] == 0 for item in dropped)
    sent = request_sources(model.requests[0])
    given = [item for item, r in records.items() if r["level"] != "dropped"]
    assert len(sent) == len(given) >= 3
    # The top units by priority are given, never dropped.
    by_rank = sorted(records, key=lambda item: records[item]["rank"])
    assert all(records[item]["level"] != "dropped" for item in by_rank[:TOP_ITEMS_CONDENSED])
    for item, record in records.items():
        assert record["original_tokens"] > 0 and "reason" in record
        if record["level"] == "full":
            assert item not in stored["content_archive_hashes"]
            continue
        digest = stored["content_archive_hashes"][item]
        assert record["archive_hash"] == digest
        assert read_archive(tmp_path, EVIDENCE_ARCHIVE_SOURCE, digest)
    # The job's warnings name the degradation too.
    job_codes = {w["code"] for w in done.warnings or []}
    assert {"CONTENT_DROPPED", "CONTENT_TRUNCATED"} <= job_codes


async def test_protected_evidence_that_cannot_fit_ends_partial_with_the_fitting_recorded(
    db: asyncpg.Pool, database_url: str
) -> None:
    # Every message holds the quoted phrase: all 120 are protected, and 120 headlines are
    # far over what a 8,000-token model can take.
    writer, model = fake_report_writer(reduce_context_tokens=8000)
    question = 'How is "the on-call lead" involved in database migration rollbacks?'
    done = await _run(db, database_url, writer, question)
    assert done.status == "partial" and done.report_id is not None, done.error
    assert model.requests == []  # refused before anything was sent
    async with db.acquire() as connection:
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id])
    assert row.writer == EXTRACTOR_VERSION and row.audit["kept"] > 0
    codes = [w["code"] for w in row.fidelity["warnings"]]
    assert "PROTECTED_OVERFLOW" in codes and codes[-1] == "llm_writer_failed"
    assert "the evidence that must be kept needs" in row.fidelity["warnings"][-1]["message"]
    records = row.fidelity["content_fidelity"]
    assert records and all(r["phases"]["synthesis"]["protected"] for r in records.values())
    assert not row.fidelity["dropped_content_ids"] or all(
        item not in records for item in row.fidelity["dropped_content_ids"]
    )


async def test_the_offline_writer_stores_the_empty_fidelity_defaults(
    db: asyncpg.Pool, database_url: str
) -> None:
    channel = await add_channel(db, "ops", messages(ROWS[:5]))
    worker = Worker(db, database_url, WorkerConfig(), OfflineExtractor, reports=ReportJobRunner())
    async with db.acquire() as connection:
        job, _ = await trigger_report(
            connection, QUESTION, max_attempts=3, channel_ids=[channel], document_ids=[]
        )
    assert await worker.run_once()
    async with db.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
        assert done is not None and done.report_id is not None
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id])
    # What the research steps did is stored beside the fitting's records, which stay empty.
    assert {k: v for k, v in row.fidelity.items() if k != "research"} == EMPTY_FIDELITY
    assert row.fidelity["research"]["method"] == "rules"
    assert EMPTY_FIDELITY["content_fidelity_schema_version"] == FIDELITY_SCHEMA_VERSION


ITEM_FIDELITY = """
query($id: ID!) {
  report(id: $id) {
    droppedContentIds
    contentFidelitySchemaVersion
    contentFidelity { contentId phase }
    contentFidelityItems {
      contentId level
      phases {
        contentId phase level reason originalTokens finalTokens rank protected warnings
        archiveHash recordedAt
      }
    }
    contentArchiveHashes { contentId hash }
  }
}
"""


async def test_the_api_reads_back_each_units_fidelity_and_archive_hash(
    db: asyncpg.Pool, database_url: str, tmp_path: Path, api: httpx.AsyncClient
) -> None:
    writer, _ = fake_report_writer(reduce_context_tokens=8000)
    writer.archive_dir = tmp_path
    before = datetime.now(UTC).replace(microsecond=0)
    done = await _run(db, database_url, writer, QUESTION)
    assert done.status == "succeeded" and done.report_id is not None, done.error
    async with db.acquire() as connection:
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id])
    variables = {"id": global_id(REPORT, done.report_id)}
    report = (await gql(api, ITEM_FIDELITY, variables, token="reader-token-1"))["report"]
    assert report["contentFidelitySchemaVersion"] == FIDELITY_SCHEMA_VERSION
    grouped = report["contentFidelityItems"]
    # Every unit the fitting considered was gathered first: its phases in order, and it ends
    # as its synthesis record says (no final fit ran here).
    assert [[p["phase"] for p in g["phases"]] for g in grouped] == [["gathering", "synthesis"]] * 60
    assert all(g["level"] == g["phases"][-1]["level"] for g in grouped)
    gathered = [g["phases"][0] for g in grouped]
    assert {(p["level"], p["reason"], p["rank"]) for p in gathered} == {("FULL", "gathered", None)}
    flat = [(i["contentId"], i["phase"]) for i in report["contentFidelity"]]
    assert flat == [(g["contentId"], p["phase"]) for g in grouped for p in g["phases"]]
    items = [g["phases"][-1] for g in grouped]
    assert len(items) == 60 and [i["rank"] for i in items] == list(range(1, 61))
    stored = {
        item: record["phases"]["synthesis"]
        for item, record in row.fidelity["content_fidelity"].items()
    }
    assert {i["contentId"] for i in items} == set(stored)
    levels = {i["level"] for i in items}
    assert {"TRUNCATED", "DROPPED"} <= levels <= {level.name for level in FidelityLevel}
    for item in items:
        record = stored[item["contentId"]]
        assert item["phase"] == "synthesis" and item["level"] == record["level"].upper()
        assert (item["reason"], item["originalTokens"], item["finalTokens"]) == (
            record["reason"],
            record["original_tokens"],
            record["final_tokens"],
        )
        assert item["protected"] is False and item["warnings"] == record["warnings"]
        assert item["archiveHash"] == record.get("archive_hash")
        recorded = datetime.fromisoformat(item["recordedAt"])
        assert before <= recorded <= datetime.now(UTC)
    dropped = [i["contentId"] for i in items if i["level"] == "DROPPED"]
    assert set(dropped) <= set(report["droppedContentIds"])
    assert all("CONTENT_DROPPED" in i["warnings"] for i in items if i["level"] == "DROPPED")
    hashes = {h["contentId"]: h["hash"] for h in report["contentArchiveHashes"]}
    assert hashes == row.fidelity["content_archive_hashes"] and hashes
    assert set(hashes) == {i["contentId"] for i in items if i["level"] != "FULL"}
