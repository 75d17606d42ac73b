"""Fallback models, the document digest's own model and LIMITS_DEFAULTED on document digests and
reports, through the runtime's own wiring (settings -> server.runtime) against the fake
OpenAI-compatible endpoint on 127.0.0.1, reached by the real `openai` client, with jobs run by
the real worker on real PostgreSQL.

The fake answers per model name: a primary that answers 500 is replaced by the first fallback
model until its breaker opens (then nothing more is sent to it), the job records which model
answered and why the primary failed (never the server's message), and the answer is keyed by
the answering model; with every model down the offline fallback is as before."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import asyncpg
import pytest

from db import jobs
from db import reports as report_queries
from db.documents import store_document
from db.models import DigestJob
from runner.documents.cache_key import digest_cache_key
from runner.documents.ingest import ingest_text
from runner.documents.job import DocumentJobRunner
from runner.documents.policy import DigestConfig, DigestPolicy, document_source_id
from runner.evaluation.fake_report_model import report_model
from runner.extract.offline import OfflineExtractor
from runner.llm.fake import FakeLLM, completion, error
from runner.reports.job import ReportJobRunner
from runner.triggers import trigger_document_digest, trigger_report
from runner.worker import Worker, WorkerConfig
from server.runtime import report_runner, summarizer_factory
from server.settings import Settings
from tests.support.database import add_channel, messages
from tests.support.documents import DOCUMENT_TEXT, quoting_digest
from tests.support.reports import OPS, QUESTION

PRIMARY = "gpt-4o-mini"
BACKUP = "gpt-4o"
SECRET_MESSAGE = "overloaded: upstream shard 7 said no"
DIGEST_CONFIG = DigestConfig(policy=DigestPolicy.ALWAYS)


class Models:
    """Per-model behaviour of the fake endpoint: the models that answer 500, and those whose
    answers break the tool's schema."""

    def __init__(self) -> None:
        self.down: set[str] = set()
        self.garbage: set[str] = set()  # models whose arguments break the schema
        self.endpoint = FakeLLM(self.respond)

    def respond(self, body: dict[str, Any]) -> Any:
        if body["model"] in self.down:
            return error(500, SECRET_MESSAGE)
        if body["model"] in self.garbage:
            return completion(tool="emit_document_digest", arguments={"summary": 5})
        if body["tool_choice"]["function"]["name"] == "emit_document_digest":
            return quoting_digest(body)
        return report_model()(body)

    def sent_to(self, model: str) -> int:
        return sum(1 for request in self.endpoint.requests if request["model"] == model)


@pytest.fixture
async def models() -> AsyncIterator[tuple[Models, str]]:
    fake = Models()
    async with fake.endpoint.serve() as base_url:  # a fresh port: fresh breakers
        yield fake, base_url


def llm_settings(settings: Settings, base_url: str, **update: Any) -> Settings:
    return settings.model_copy(
        update={
            "digest_extractor": "llm",
            "digest_llm_base_url": base_url,
            "digest_llm_max_retries": 0,
            "digest_reduce_model": PRIMARY,
            **update,
        }
    )


async def digest(
    db: asyncpg.Pool, database_url: str, runner: DocumentJobRunner, query: str
) -> DigestJob:
    worker = Worker(db, database_url, WorkerConfig(), OfflineExtractor, documents=runner)
    text = f"{DOCUMENT_TEXT}\n\nHandbook edition {uuid.uuid4().hex}."
    async with db.acquire() as connection:
        row, _ = await store_document(connection, ingest_text(text).as_record())
        job, _ = await trigger_document_digest(
            connection, row.id, query, config=DIGEST_CONFIG, max_attempts=3
        )
    assert await worker.run_once()
    async with db.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
    assert done is not None
    return done


def documents(settings: Settings) -> DocumentJobRunner:
    return DocumentJobRunner(DIGEST_CONFIG, summarizer_factory(settings))


def codes(job: DigestJob) -> list[str]:
    return [warning["code"] for warning in job.warnings]


def warning(job: DigestJob, code: str) -> str:
    return next(str(w["message"]) for w in job.warnings if w["code"] == code)


async def test_a_failing_document_model_hands_over_to_the_fallback_model_until_all_are_down(
    db: asyncpg.Pool, database_url: str, settings: Settings, models: tuple[Models, str]
) -> None:
    fake, base_url = models
    configured = llm_settings(settings, base_url, digest_llm_fallback_models=f" {BACKUP} ,")
    runner = documents(configured)
    fake.down = {PRIMARY}

    # The primary answers 500 (no retries): the fallback model answers, the job succeeds and
    # says which model answered and why the primary did not, never with the server's words.
    jobs_done = []
    for number in range(8):
        done = await digest(db, database_url, runner, f"How is topic {number} reviewed?")
        assert done.status == "succeeded" and done.stats["summarizer"] == "llm", done
        assert done.stats["model"] == BACKUP and done.stats["summary_offline"] is False
        message = warning(done, "LLM_FALLBACK_MODEL_USED")
        assert f"fallback model {BACKUP!r} answered" in message and PRIMARY in message
        assert SECRET_MESSAGE not in message and "overloaded" not in message
        jobs_done.append((done, message))
    first, later = jobs_done[0][1], jobs_done[-1][1]
    assert "HTTP 500" in first
    # Five failures of five opened the primary's own breaker: nothing more is sent to it, and
    # the fallback model (with a breaker of its own) still answers.
    assert "its circuit breaker is open" in later
    assert fake.sent_to(PRIMARY) == 5 and fake.sent_to(BACKUP) == 8

    # The digest is keyed by the model that answered, never served as the primary's.
    done = jobs_done[0][0]
    async with db.acquire() as connection:
        row = await connection.fetchrow(
            "SELECT d.cache_key, d.query, j.document_id FROM document_digests d "
            "JOIN digest_jobs j ON j.id = d.job_id WHERE d.id = $1",
            done.document_digest_id,
        )
        document = await connection.fetchrow(
            "SELECT source_text_hash FROM documents WHERE id = $1", row["document_id"]
        )
    summarizer: Any = runner.summarizer_factory()
    source_id = document_source_id(row["document_id"])
    keys = {
        model: digest_cache_key(
            source_id,
            document["source_text_hash"],
            row["query"],
            DIGEST_CONFIG,
            summarizer.fingerprint(model),
        )
        for model in (PRIMARY, BACKUP)
    }
    assert row["cache_key"] == keys[BACKUP] != keys[PRIMARY]

    # Every model down: the offline digest, PARTIAL, as without fallback models.
    fake.down = {PRIMARY, BACKUP}
    down = await digest(db, database_url, runner, "Who reviews caching?")
    assert down.status == "partial" and down.stats["summary_offline"] is True, down
    assert codes(down)[0] == "SUMMARY_EXTRACTED_OFFLINE"
    assert "LLM_FALLBACK_MODEL_USED" not in codes(down)
    assert fake.sent_to(BACKUP) == 9


async def test_invalid_output_twice_hands_over_to_the_fallback_model(
    db: asyncpg.Pool, database_url: str, settings: Settings, models: tuple[Models, str]
) -> None:
    fake, base_url = models
    configured = llm_settings(settings, base_url, digest_llm_fallback_models=BACKUP)
    fake.garbage = {PRIMARY}
    done = await digest(db, database_url, documents(configured), "How is caching reviewed?")
    assert done.status == "succeeded" and done.stats["model"] == BACKUP, done
    assert warning(done, "LLM_FALLBACK_MODEL_USED") == (
        f"fallback model {BACKUP!r} answered ({PRIMARY!r} failed: invalid output twice)"
    )
    # The primary was sent the request and its re-ask; the fallback answered at once.
    assert fake.sent_to(PRIMARY) == 2 and fake.sent_to(BACKUP) == 1


async def test_the_document_digest_model_setting_is_the_model_asked(
    db: asyncpg.Pool, database_url: str, settings: Settings, models: tuple[Models, str]
) -> None:
    fake, base_url = models
    configured = llm_settings(settings, base_url, digest_doc_model="gpt-4.1-mini")
    done = await digest(db, database_url, documents(configured), "How is caching reviewed?")
    assert done.status == "succeeded" and done.warnings == [], done
    assert [request["model"] for request in fake.endpoint.requests] == ["gpt-4.1-mini"]
    assert done.stats["model"] == "gpt-4.1-mini"


async def test_an_unknown_document_model_is_a_limits_defaulted_warning(
    db: asyncpg.Pool, database_url: str, settings: Settings, models: tuple[Models, str]
) -> None:
    _, base_url = models
    configured = llm_settings(settings, base_url, digest_reduce_model="house-model-7b")
    done = await digest(db, database_url, documents(configured), "How is caching reviewed?")
    assert done.status == "succeeded" and codes(done) == ["LIMITS_DEFAULTED"], done
    assert warning(done, "LIMITS_DEFAULTED") == (
        "no known limits for model 'house-model-7b': assumed a context of 32768 tokens and "
        "1500 output tokens; set DIGEST_REDUCE_CONTEXT_TOKENS to make it exact"
    )
    # The operator's setting makes it exact: no warning.
    sized = llm_settings(
        settings,
        base_url,
        digest_reduce_model="house-model-7b",
        digest_reduce_context_tokens=8192,
    )
    exact = await digest(db, database_url, documents(sized), "How is caching reviewed?")
    assert exact.status == "succeeded" and exact.warnings == [], exact


async def report(
    db: asyncpg.Pool, database_url: str, runner: ReportJobRunner, question: str = QUESTION
) -> DigestJob:
    ops = await add_channel(db, f"ops-{uuid.uuid4().hex[:8]}", messages(OPS))
    worker = Worker(db, database_url, WorkerConfig(), OfflineExtractor, reports=runner)
    async with db.acquire() as connection:
        job, _ = await trigger_report(
            connection, question, max_attempts=3, channel_ids=[ops], document_ids=[]
        )
    assert await worker.run_once()
    async with db.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
    assert done is not None
    return done


async def test_a_failing_report_model_hands_over_to_the_fallback_model(
    db: asyncpg.Pool, database_url: str, settings: Settings, models: tuple[Models, str]
) -> None:
    fake, base_url = models
    configured = llm_settings(settings, base_url, digest_llm_fallback_models=BACKUP)
    runner = report_runner(configured)
    fake.down = {PRIMARY}
    done = await report(db, database_url, runner)
    assert done.status == "succeeded" and done.report_id is not None, done
    assert done.stats["model"] == BACKUP
    message = warning(done, "LLM_FALLBACK_MODEL_USED")
    assert message == f"fallback model {BACKUP!r} answered ({PRIMARY!r} failed: HTTP 500)"
    async with db.acquire() as connection:
        (row,) = await report_queries.reports_by_ids(connection, [done.report_id])
    # Written and keyed as the fallback model's report.
    assert row.writer == done.stats["writer"] == f"llm:{BACKUP}:report-1:60"
    assert fake.sent_to(PRIMARY) == 1 and fake.sent_to(BACKUP) >= 1

    fake.down = {PRIMARY, BACKUP}
    down = await report(db, database_url, runner)
    assert down.status == "partial" and "llm_writer_failed" in codes(down), down


@pytest.mark.parametrize(
    ("update", "expected"),
    [
        ({"digest_reduce_model": "house-model-7b"}, ["LIMITS_DEFAULTED"]),
        ({"digest_reduce_model": "house-model-7b", "digest_reduce_context_tokens": 65536}, []),
    ],
)
async def test_an_unknown_report_model_is_a_limits_defaulted_warning(
    db: asyncpg.Pool,
    database_url: str,
    settings: Settings,
    models: tuple[Models, str],
    update: dict[str, Any],
    expected: list[str],
) -> None:
    _, base_url = models
    done = await report(db, database_url, report_runner(llm_settings(settings, base_url, **update)))
    assert done.status == "succeeded", done
    found: Callable[[str], bool] = lambda code: code == "LIMITS_DEFAULTED"  # noqa: E731
    assert [code for code in codes(done) if found(code)] == expected
    if expected:
        assert warning(done, "LIMITS_DEFAULTED").startswith(
            "no known limits for model 'house-model-7b': assumed a context of 32768 tokens"
        )
        assert warning(done, "LIMITS_DEFAULTED").endswith(
            "; set DIGEST_REDUCE_CONTEXT_TOKENS to make it exact"
        )
