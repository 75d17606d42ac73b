"""Progress a person can trust, on real jobs: a real worker runs a channel digest (the LLM
extractor against the fake model, slowed so the map takes a while), a report and a document
digest on a real PostgreSQL, while every state the job's row is written in is recorded (a
trigger) and a client follows the job over the jobProgress subscription and polls it.

Whatever a client reads: the job has a phase from its creation on, the chunk total is known when
the map starts and never changes, the overall fraction never goes back and ends at 1, and an
estimate of the time left shows up before the end."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import httpx

from db.documents import store_document, trigger_document_digest
from runner.core.progress import JobPhase
from runner.documents.cache_key import query_hash
from runner.documents.ingest import ingest_text
from runner.documents.job import DocumentJobRunner
from runner.documents.policy import DigestConfig, DigestPolicy
from runner.extract.offline import OfflineExtractor
from runner.llm.fake import FakeLLM
from runner.triggers import trigger_report
from runner.worker import Worker, WorkerConfig
from schema.types.ids import DIGEST_JOB, global_id
from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.database import add_channel, messages
from tests.support.jobs import recorded_job_states
from tests.support.servers import running_server
from tests.support.subscriptions import run_worker, socket, subscribe, until_complete
from tests.support.worker import llm_settings, sample_messages, slow_model, trigger

STATES = """subscription($id: ID!) {
  jobProgress(id: $id) {
    status phase progress { chunksDone chunksTotal fraction etaSeconds } startedAt finishedAt
  }
}"""
POLL = """query($id: ID!) {
  job(id: $id) {
    kind status phase progress { chunksDone chunksTotal fraction etaSeconds }
    startedAt finishedAt durationSeconds
  }
}"""
ORDER = [phase.value for phase in JobPhase]


def assert_never_back(values: list[Any]) -> None:
    assert values == sorted(values), values


async def test_a_channel_digest_reports_progress_a_person_can_trust(
    db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id = await add_channel(db, "team-platform", sample_messages())
    fake = FakeLLM(slow_model(0.15))
    app = create_app(settings, AppOptions(run_workers=0))
    async with (
        recorded_job_states(db) as recorded,
        fake.serve() as model_url,
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=30) as client,
    ):
        job_id = await trigger(db, channel_id)
        node_id = global_id(DIGEST_JOB, job_id)
        async with socket(base_url, init={}) as ws:
            await subscribe(ws, "1", node_id, STATES)
            # Read while the worker runs, so the server never waits on a full socket.
            worker = asyncio.create_task(run_worker(llm_settings(settings, model_url)))
            seen = [p["data"]["jobProgress"] for p in await until_complete(ws, "1", timeout=90)]
            await worker
        polled = (
            await client.post("/graphql", json={"query": POLL, "variables": {"id": node_id}})
        ).json()["data"]["job"]
        rows = await recorded.of(job_id)

    # Every state written, in order: a phase from the insert on, the phases in their order.
    assert rows[0]["status"] == "queued" and rows[0]["phase"] == "queued"
    assert rows[0]["progress_fraction"] == 0.0
    phases = [row["phase"] for row in rows]
    assert None not in phases
    assert_never_back([ORDER.index(phase) for phase in phases])
    assert list(dict.fromkeys(phases)) == ORDER  # each one, none skipped
    mapping = [i for i, row in enumerate(rows) if row["phase"] == "map"]
    total = rows[mapping[0]]["chunks_total"]
    assert total >= 3 and rows[mapping[0]]["chunks_done"] == 0
    assert all(row["chunks_total"] == total for row in rows[mapping[0] :])
    assert_never_back([row["chunks_done"] for row in rows])
    assert rows[mapping[-1]]["chunks_done"] == total
    assert_never_back([row["progress_fraction"] for row in rows])
    assert rows[-1]["status"] == "succeeded" and rows[-1]["progress_fraction"] == 1.0

    # What the subscriber saw: the same, from QUEUED on, and a time left before the end.
    assert seen[0]["status"] == "QUEUED" and seen[0]["phase"] == "QUEUED"
    assert all(state["phase"] is not None for state in seen)
    assert_never_back([state["progress"]["fraction"] for state in seen])
    assert [s["progress"]["chunksTotal"] for s in seen if s["phase"] == "MAP"][0] == total
    assert seen[-1]["status"] == "SUCCEEDED" and seen[-1]["progress"]["fraction"] == 1.0
    estimates = [s["progress"]["etaSeconds"] for s in seen[:-1] if s["status"] == "RUNNING"]
    assert any(eta is not None and eta >= 0 for eta in estimates), seen
    assert seen[-1]["progress"]["etaSeconds"] is None  # an ended job has no time left

    # Polling answers the end state, with the job's times and kind.
    assert polled["kind"] == "channel" and polled["status"] == "SUCCEEDED"
    assert polled["phase"] == "STORE"
    assert polled["progress"] == {
        "chunksDone": total,
        "chunksTotal": total,
        "fraction": 1.0,
        "etaSeconds": None,
    }
    assert polled["startedAt"] and polled["finishedAt"] and polled["durationSeconds"] > 0


async def test_a_report_and_a_document_digest_pass_their_phases_to_one(
    db: asyncpg.Pool, database_url: str
) -> None:
    ops = await add_channel(
        db,
        "ops",
        messages(
            [
                ("bob", "The database migration runs on Friday evening after the freeze."),
                ("cid", "Rollbacks of the database migration need approval from the lead."),
            ]
        ),
    )
    text = (
        "Migration runbook\n\nEvery database migration has a rollback plan. A rollback is "
        "approved by the on-call lead and recorded in the incident log.\n\n" * 4
    )
    async with recorded_job_states(db) as recorded:
        async with db.acquire() as connection:
            document, _ = await store_document(connection, ingest_text(text).as_record())
            report, _ = await trigger_report(
                connection,
                "How are rollbacks approved?",
                channel_ids=[ops],
                document_ids=[document.id],
                max_attempts=3,
            )
            question = "rollback approval"
            digest, _ = await trigger_document_digest(
                connection, document.id, question, query_hash(question), max_attempts=3
            )
        worker = Worker(
            db,
            database_url,
            WorkerConfig(lease_seconds=30.0),
            extractor_factory=OfflineExtractor,
            # A short document is digested too: the policy that would skip it is not tested here.
            documents=DocumentJobRunner(DigestConfig(policy=DigestPolicy.ALWAYS)),
        )
        assert await worker.run_once() and await worker.run_once()
        runs = {job.kind: await recorded.of(job.id) for job in (report, digest)}

    expected = {
        # A report splits its question (threading), gathers and refines (map), writes (reduce).
        "report": ["queued", "reading", "threading", "map", "reduce", "store"],
        "document": ["queued", "reading", "map", "store"],
    }
    for kind, rows in runs.items():
        assert rows[-1]["status"] == "succeeded", kind
        assert list(dict.fromkeys(row["phase"] for row in rows)) == expected[kind]
        assert_never_back([row["progress_fraction"] for row in rows])
        assert rows[0]["progress_fraction"] == 0.0 and rows[-1]["progress_fraction"] == 1.0
