"""A report's question split into sub-questions, evidence gathered for each and refined once
for the part the first answer left open, and a stored document digest's evidence used instead
of the document cut again (never the same span twice), by the real worker on real PostgreSQL;
with a model, the sub-questions come from one tool call to the fake endpoint (the real `openai`
client), and a bad answer falls back to the rules with a warning."""

from __future__ import annotations

import json
from typing import Any

import asyncpg

from db import documents as document_queries
from db import jobs
from db import reports as report_queries
from db.documents import store_document
from db.models import DigestJob
from db.models import Report as ReportRow
from runner.core.fidelity import FIDELITY_SCHEMA_VERSION, ordered_phases
from runner.documents.cache_key import query_hash
from runner.documents.canonical import CanonicalDocument
from runner.documents.ingest import ingest_text
from runner.documents.locators import make_locator, resolve_locator
from runner.documents.payload import DigestPayload, EvidenceSnippet, serialize_payload
from runner.evaluation.fake_report_model import fake_report_writer, quoting_answer, report_model
from runner.extract.offline import OfflineExtractor
from runner.llm.fake import FakeLLM, completion
from runner.reports.job import ReportJobRunner
from runner.reports.llm_decompose import DECOMPOSE_TOOL, DecomposeCall, ModelDecomposer
from runner.reports.llm_writer import LLMReportWriter
from runner.triggers import trigger_report
from runner.worker import Worker, WorkerConfig
from schema.types.ids import REPORT, global_id
from tests.support.database import add_channel, messages
from tests.support.reports import OPS
from tests.support.schema import gql

QUESTION = "How are database migration rollbacks approved and who pays the cloud hosting bill?"
APPROVAL = (
    "Database migration rollbacks are approved by the on-call lead before the release window. "
    "Every approved rollback of a database migration is recorded with its written plan."
)
BILL = "The cloud hosting bill is paid by the finance team at the end of every month."
# About approvals too, but outside the digest's snippet: the document cut again would quote it.
AUDIT = "Database migration rollbacks are approved again in the yearly audit of the releases."
HANDBOOK = f"Release handbook\n\n{APPROVAL}\n\n{AUDIT}\n\n{BILL}\n"


async def _run(
    pool: asyncpg.Pool,
    database_url: str,
    request: dict[str, Any],
    question: str = QUESTION,
    writer: LLMReportWriter | None = None,
    decomposer: ModelDecomposer | None = None,
) -> tuple[DigestJob, ReportRow]:
    runner = ReportJobRunner(llm_writer=writer, decomposer=decomposer)
    worker = Worker(pool, database_url, WorkerConfig(), OfflineExtractor, reports=runner)
    async with pool.acquire() as connection:
        job, _ = await trigger_report(connection, question, max_attempts=3, **request)
    assert await worker.run_once()
    async with pool.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
        assert done is not None and done.report_id is not None, done
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id])
    return done, row


async def _handbook_with_digest(pool: asyncpg.Pool) -> tuple[int, int, str]:
    """The handbook, and a stored digest of it for QUESTION whose one snippet (two sentences)
    is about approvals only: (document id, digest id, snippet locator)."""
    async with pool.acquire() as connection:
        row, _ = await store_document(
            connection, ingest_text(HANDBOOK, title="Release handbook").as_record()
        )
        document = CanonicalDocument.from_record(document_queries.document_record(row))
        text = document.canonical_text
        start = text.index(APPROVAL)
        locator = make_locator(text, start, start + len(APPROVAL), APPROVAL)
        payload = DigestPayload(
            query_hash=query_hash(QUESTION)[:8],
            summary="Rollbacks are approved by the on-call lead.",
            original_chars=len(text),
            digest_chars=len(APPROVAL),
            compression_ratio=round(len(APPROVAL) / len(text), 4),
            source_text_hash=document.source_text_hash,
            evidence_snippets=[EvidenceSnippet(APPROVAL, locator, 0.9)],
        )
        digest_id, _ = await document_queries.insert_document_digest(
            connection,
            None,
            {
                "document_id": row.id,
                "query": QUESTION,
                "query_hash": query_hash(QUESTION),
                "cache_key": f"digest:1.0:doc-{row.id}:test",
                "payload": json.loads(serialize_payload(payload)),
                "summarizer": "offline",
                "evidence_mode": "query",
                "original_tokens": 60,
                "final_tokens": 20,
                "tokens_estimated": False,
                "warnings": [],
                "duration_ms": 1,
            },
        )
    return row.id, digest_id, locator


def _document_spans(row: ReportRow) -> list[str]:
    return [
        span["locator"]
        for source in row.sources
        if source["kind"] == "document"
        for span in source["spans"]
    ]


def _report_id(row: ReportRow) -> str:
    return global_id(REPORT, row.id)


def _sentences(row: ReportRow) -> list[str]:
    return [s["text"] for section in row.sections for s in section["sentences"]]


async def test_sub_questions_refinement_and_a_digests_evidence_used_once(
    db: asyncpg.Pool, database_url: str
) -> None:
    ops = await add_channel(db, "ops", messages(OPS))
    document_id, digest_id, snippet = await _handbook_with_digest(db)
    done, row = await _run(db, database_url, {"channel_ids": [ops], "document_ids": [document_id]})
    assert done.status == "succeeded", done.error
    research = row.fidelity["research"]
    assert research["method"] == "rules"
    assert [s["text"] for s in research["sub_questions"]] == [
        "How are database migration rollbacks approved",
        "who pays the cloud hosting bill?",
    ]
    # The digest's snippet stands for the document: nothing about the bill was gathered first,
    # so the second sub-question was open, and the refinement read the rest of the document.
    assert research["document_digests"] == [
        {"document_id": document_id, "digest_id": digest_id, "snippets": 1, "snippets_left_out": 0}
    ]
    refinement = research["refinement"]
    assert refinement["ran"] is True and refinement["added"] >= 1
    assert refinement["added_cited"] >= 1
    assert [p["reason"] for p in refinement["open_points"]] == ["no_cited_evidence"]
    assert [s["cited"] for s in research["sub_questions"]] == [True, True]
    assert BILL in _sentences(row)
    # The snippet's sentences stand for the approval part (not the document's other sentence
    # about it), and no document span is cited twice or overlaps another.
    assert AUDIT not in _sentences(row)
    spans = _document_spans(row)
    assert len(spans) == len(set(spans))
    async with db.acquire() as connection:
        (document,) = await document_queries.documents_by_ids(connection, [document_id])
    text = CanonicalDocument.from_record(document_queries.document_record(document)).canonical_text
    resolved = sorted(resolve_locator(locator, text) for locator in spans)
    assert all(a[1] <= b[0] for a, b in zip(resolved, resolved[1:], strict=False))
    snippet_start, snippet_end = resolve_locator(snippet, text)
    approvals = [(a, b) for a, b in resolved if "approv" in text[a:b]]
    assert approvals and all(snippet_start <= a and b <= snippet_end for a, b in approvals)
    # The API shows what was done as the report's `research`.
    shown = await gql(db, "query($id: ID!) { report(id: $id) { research } }", id=_report_id(row))
    assert shown["report"]["research"] == research
    # Each step was a step of the job's map: two sub-questions and the refinement round.
    assert done.chunks_total == 3 and done.chunks_done == 3
    assert done.stats["sub_questions"] == 2 and done.stats["evidence_refined"] >= 1


def _decomposing(sub_questions: list[str]) -> Any:
    """A model answering the sub-question tool with `sub_questions`, the report tool faithfully."""

    def respond(body: dict[str, Any]) -> Any:
        if body["tools"][0]["function"]["name"] == DECOMPOSE_TOOL:
            return completion(tool=DECOMPOSE_TOOL, arguments={"sub_questions": sub_questions})
        return report_model(quoting_answer)(body)

    return respond


async def test_the_models_sub_questions_are_used_and_a_bad_answer_falls_back_to_the_rules(
    db: asyncpg.Pool, database_url: str
) -> None:
    ops = await add_channel(db, "ops", messages(OPS))
    request = {"channel_ids": [ops], "document_ids": []}
    asked = ["Who approves database migration rollbacks?", "Who pays the cloud hosting bill?"]
    writer, endpoint = fake_report_writer(FakeLLM(_decomposing(asked)))
    decomposer = ModelDecomposer(DecomposeCall(writer.call.caller, writer.call.model))
    done, row = await _run(db, database_url, request, writer=writer, decomposer=decomposer)
    assert done.status == "succeeded", done.error
    assert row.fidelity["research"]["method"] == "model"
    assert [s["text"] for s in row.fidelity["research"]["sub_questions"]] == asked
    assert done.stats["decompose_llm_calls"] == 1
    tools = [body["tools"][0]["function"]["name"] for body in endpoint.requests]
    assert tools == [DECOMPOSE_TOOL, "emit_report"]

    # A sub-question about something the question never asked: the rules' split, warned.
    writer, _ = fake_report_writer(FakeLLM(_decomposing(["What is the weather in Paris?"])))
    decomposer = ModelDecomposer(DecomposeCall(writer.call.caller, writer.call.model))
    other = "Who approves database migration rollbacks, and who pays the cloud hosting bill?"
    done, row = await _run(db, database_url, request, other, writer, decomposer)
    assert done.status == "succeeded", done.error
    research = row.fidelity["research"]
    assert research["method"] == "rules" and len(research["sub_questions"]) == 2
    codes = [w["code"] for w in row.fidelity["warnings"]]
    assert "decomposition_fallback" in codes
    assert "decomposition_fallback" in [w["code"] for w in done.warnings]


async def test_each_unit_the_writer_considered_records_the_phases_it_passed_through(
    db: asyncpg.Pool, database_url: str
) -> None:
    ops = await add_channel(db, "ops", messages(OPS))
    document_id, _, _ = await _handbook_with_digest(db)
    writer, _ = fake_report_writer()
    done, row = await _run(
        db, database_url, {"channel_ids": [ops], "document_ids": [document_id]}, writer=writer
    )
    assert done.status == "succeeded", done.error
    stored = row.fidelity
    assert stored["content_fidelity_schema_version"] == FIDELITY_SCHEMA_VERSION
    records = stored["content_fidelity"]
    # The database's JSON keeps no key order: a reader orders the phases.
    phases = {item: tuple(ordered_phases(record["phases"])) for item, record in records.items()}
    # Gathered for a sub-question, or added by the refinement; then fitted for the writer.
    assert set(phases.values()) == {("gathering", "synthesis"), ("refinement", "synthesis")}
    refined = [item for item, names in phases.items() if names[0] == "refinement"]
    assert len(refined) == stored["research"]["refinement"]["added"] >= 1
    for item, record in records.items():
        first = record["phases"][phases[item][0]]
        assert first["level"] == "full" and first["warnings"] == []
        assert first["reason"] == ("open_point" if item in refined else "gathered")
        assert first["timestamp"] <= record["phases"]["synthesis"]["timestamp"]
        if item not in refined:
            assert set(first["sub_questions"]) <= {1, 2} and first["sub_questions"]
    # The API groups them by unit, phases in order.
    query = """query($id: ID!) { report(id: $id) {
        contentFidelityItems { contentId level phases { phase level reason } } } }"""
    shown = await gql(db, query, id=_report_id(row))
    items = shown["report"]["contentFidelityItems"]
    assert {i["contentId"]: tuple(p["phase"] for p in i["phases"]) for i in items} == phases
