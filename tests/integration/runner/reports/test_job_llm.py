"""Report jobs with the LLM writer, run by the real worker on real PostgreSQL against a fake
OpenAI-compatible model (the real `openai` client, the fake endpoint answering in-process): the
report is stored with its writer, fidelity and audit; an unchanged re-run makes no model call; a
failing model degrades the job to PARTIAL with the offline report; fabricated citations never
reach the stored report. Read back through GraphQL like a client would."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import pytest

from db import jobs
from db import reports as report_queries
from db.documents import store_document
from db.models import DigestJob
from runner.documents.ingest import ingest_text
from runner.evaluation.fake_report_model import fake_report_writer, report_model
from runner.extract.offline import OfflineExtractor
from runner.llm.fake import FakeLLM, error
from runner.reports.extractive import EXTRACTOR_VERSION
from runner.reports.job import ReportJobRunner
from runner.reports.llm_writer import LLMReportWriter
from runner.triggers import trigger_report
from runner.worker import Worker, WorkerConfig
from server.runtime import report_runner
from server.settings import Settings
from tests.support.database import add_channel, messages
from tests.support.reports import (
    FABRICATED,
    GOOD,
    OPS,
    QUESTION,
    UNRELATED,
    assert_audited,
    bad_answer,
    stored_report,
)
from tests.support.schema import gql
from tests.support.servers import free_port

JOB = """
query($id: ID!) {
  job(id: $id) {
    status warnings { code }
    report {
      writer
      audit { proposed kept dropped reAsked }
      fidelity { phase step originalTokens finalTokens reason }
      warnings { code message phase itemIds }
      droppedContentIds
    }
  }
}"""
RUNBOOK = "Every database migration has a rollback plan, approved by the on-call lead."


async def _sources(pool: asyncpg.Pool) -> dict[str, Any]:
    ops = await add_channel(pool, "ops", messages(OPS))
    async with pool.acquire() as connection:
        row, _ = await store_document(connection, ingest_text(RUNBOOK, title="Runbook").as_record())
    return {"channel_ids": [ops], "document_ids": [row.id]}


async def _run(
    pool: asyncpg.Pool, database_url: str, writer: LLMReportWriter | None, request: dict[str, Any]
) -> DigestJob:
    runner = ReportJobRunner(llm_writer=writer)
    worker = Worker(pool, database_url, WorkerConfig(), OfflineExtractor, reports=runner)
    async with pool.acquire() as connection:
        job, _ = await trigger_report(connection, QUESTION, max_attempts=3, **request)
    assert await worker.run_once()
    async with pool.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
    assert done is not None
    return done


def _global(job: DigestJob) -> str:
    from schema.types.ids import DIGEST_JOB, global_id

    return global_id(DIGEST_JOB, job.id)


async def test_an_llm_report_is_stored_with_its_fidelity_and_a_rerun_calls_no_model(
    db: asyncpg.Pool, database_url: str
) -> None:
    request = await _sources(db)
    writer, model = fake_report_writer()
    first = await _run(db, database_url, writer, request)
    assert first.status == "succeeded" and first.report_id is not None, first.error
    assert len(model.requests) == 1 and first.stats["llm_calls"] == 1
    assert first.stats["writer"] == writer.version and first.stats["cache_hit"] is False
    async with db.acquire() as connection:
        (row,) = await report_queries.reports_by_ids(connection, [first.report_id])
        report = await stored_report(connection, row)
    assert row.writer == writer.version == "llm:fake-report-model:report-1:60"
    assert_audited(report, row.markdown)
    assert {s["kind"] for s in row.sources} == {"message", "document"}
    shown = (await gql(db, JOB, id=_global(first)))["job"]["report"]
    assert shown["writer"] == writer.version
    assert shown["fidelity"] == [
        {
            "phase": "synthesis",
            "step": "none",
            "reason": "within_budget",
            "originalTokens": first.stats["evidence_tokens"],
            "finalTokens": first.stats["evidence_tokens"],
        }
    ]
    assert shown["warnings"] == [] and shown["droppedContentIds"] == []

    again = await _run(db, database_url, writer, request)
    assert again.report_id == first.report_id and again.stats["cache_hit"] is True
    assert len(model.requests) == 1, "an unchanged re-run must not call the model"

    # The writer is part of the key: the offline writer on the same request is another report.
    offline = await _run(db, database_url, None, request)
    assert offline.report_id not in (None, first.report_id)
    assert offline.stats["writer"] == EXTRACTOR_VERSION and len(model.requests) == 1


async def test_a_failing_model_degrades_to_the_offline_report_and_a_later_run_asks_again(
    db: asyncpg.Pool, database_url: str
) -> None:
    request = await _sources(db)
    state = {"down": True}

    def respond(body: dict[str, Any]) -> Any:
        if state["down"]:
            return error(500, "overloaded")
        from runner.evaluation.fake_report_model import quoting_answer

        return quoting_answer(body)

    writer, model = fake_report_writer(FakeLLM(report_model(respond)))
    degraded = await _run(db, database_url, writer, request)
    assert degraded.status == "partial" and degraded.report_id is not None, degraded.error
    assert len(model.requests) == 1  # max_retries=0: one attempt
    shown = (await gql(db, JOB, id=_global(degraded)))["job"]
    assert "llm_writer_failed" in [w["code"] for w in shown["warnings"]]
    assert shown["report"]["writer"] == EXTRACTOR_VERSION
    (warning,) = shown["report"]["warnings"]
    assert warning["code"] == "llm_writer_failed" and "(HTTP 500)" in warning["message"]
    assert "Error" not in warning["message"]  # our words, not a class name
    async with db.acquire() as connection:
        (row,) = await report_queries.reports_by_ids(connection, [degraded.report_id])
        assert_audited(await stored_report(connection, row), row.markdown)
    assert row.audit["kept"] > 0  # the validated offline work is there

    state["down"] = False
    recovered = await _run(db, database_url, writer, request)
    assert recovered.status == "succeeded" and recovered.stats["cache_hit"] is False
    assert recovered.report_id != degraded.report_id and len(model.requests) == 2


async def _closed_port_writer(settings: Settings) -> LLMReportWriter:
    """The runtime's writer for an endpoint where nothing listens (a port bound, then freed)."""
    closed = settings.model_copy(
        update={
            "digest_extractor": "llm",
            "digest_llm_base_url": f"http://127.0.0.1:{free_port()}/v1",
            "digest_llm_max_retries": 0,
        }
    )
    writer = report_runner(closed).llm_writer
    assert writer is not None
    return writer


async def _garbage_writer(settings: Settings) -> LLMReportWriter:
    """A model whose every `emit_report` call breaks the schema (a number for the title)."""
    writer, _ = fake_report_writer(FakeLLM(report_model(lambda body: {"title": 5})))
    return writer


@pytest.mark.parametrize("failing", [_garbage_writer, _closed_port_writer])
async def test_a_model_answering_garbage_or_down_still_gives_the_extractive_report(
    db: asyncpg.Pool,
    database_url: str,
    settings: Settings,
    failing: Callable[[Settings], Awaitable[LLMReportWriter]],
) -> None:
    request = await _sources(db)
    job = await _run(db, database_url, await failing(settings), request)
    assert job.status == "partial" and job.report_id is not None, job.error
    shown = (await gql(db, JOB, id=_global(job)))["job"]
    assert shown["report"]["writer"] == EXTRACTOR_VERSION
    assert "llm_writer_failed" in [w["code"] for w in shown["warnings"]]
    async with db.acquire() as connection:
        (row,) = await report_queries.reports_by_ids(connection, [job.report_id])
        assert_audited(await stored_report(connection, row), row.markdown)
    assert row.audit["kept"] > 0


async def test_fabricated_citations_never_reach_the_stored_report(
    db: asyncpg.Pool, database_url: str
) -> None:
    request = await _sources(db)
    writer, model = fake_report_writer(FakeLLM(report_model(bad_answer)))
    done = await _run(db, database_url, writer, request)
    assert done.status == "succeeded" and len(model.requests) == 2
    async with db.acquire() as connection:
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id or 0])
        report = await stored_report(connection, row)
    assert [s.sentence for s in report.sentences()] == [GOOD]
    assert FABRICATED not in row.markdown and UNRELATED not in row.markdown
    assert_audited(report, row.markdown)
    shown = (await gql(db, JOB, id=_global(done)))["job"]
    assert shown["report"]["audit"] == {"proposed": 3, "kept": 1, "dropped": 2, "reAsked": 2}
    codes = {w["code"] for w in shown["warnings"]}
    assert {"sentence_dropped:unknown_source", "sentence_dropped:low_support"} <= codes


def test_the_runtime_gives_report_jobs_the_llm_writer_only_with_an_llm(settings: Settings) -> None:
    assert report_runner(settings).llm_writer is None
    llm = settings.model_copy(
        update={
            "digest_extractor": "llm",
            "digest_llm_base_url": "http://llm.test/v1",
            "digest_reduce_model": "gpt-4o-mini",
        }
    )
    writer = report_runner(llm).llm_writer
    assert writer is not None and writer.version == "llm:gpt-4o-mini:report-1:60"
    assert writer.min_overlap == settings.digestd_min_claim_overlap
