"""A channel backlog over the window cap is split into coverage slices that two `digestd worker`
processes take at once; a worker killed mid-slice loses nothing (another retakes its slice), a
re-trigger returns the job that split the backlog, and every message is covered exactly once."""

from __future__ import annotations

import signal
from pathlib import Path

import asyncpg
import pytest

from db import jobs
from db.models import DigestJob
from runner.importers.ingest import import_path
from runner.llm.fake import FakeLLM
from tests.support.paths import shared_data
from tests.support.processes import llm_worker_environment, start_cli
from tests.support.worker import job_row, slow_model, wait_for

# Small enough that a real 1,500-line IRC log makes three slices.
CAP = 500


async def _slices(db: asyncpg.Pool, channel_id: int, batch: int) -> list[DigestJob]:
    async with db.acquire() as connection:
        return await jobs.slices_of_batch(connection, channel_id, batch)


async def _trigger(db: asyncpg.Pool, channel_id: int) -> tuple[DigestJob, bool]:
    async with db.acquire() as connection:
        return await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )


# Two worker processes start and digest three slices: minutes on a busy machine.
@pytest.mark.timeout(1200)
async def test_two_worker_processes_cover_a_sliced_backlog_exactly_once_despite_a_kill(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    report = await import_path(
        db, shared_data("chat/ubuntu_irc/2010-08-17_18.raw.txt"), channel="ubuntu"
    )
    channel_id = next(iter(report.channels.values()))
    async with db.acquire() as connection:
        total = int(
            await connection.fetchval(
                "SELECT count(*) FROM messages WHERE channel_id = $1", channel_id
            )
        )
    assert total > 2 * CAP
    expected_slices = -(-total // CAP)
    async with FakeLLM(slow_model(0.15)).serve() as base_url:
        environment = llm_worker_environment(
            database_url,
            tmp_path / "home",
            base_url,
            DIGESTD_CHUNK_TOKENS="1500",
            DIGESTD_MAX_WINDOW_MESSAGES=str(CAP),
        )
        parent, created = await _trigger(db, channel_id)
        assert created
        workers = [start_cli(["worker"], environment, tmp_path / f"worker-{n}.log") for n in (1, 2)]
        try:

            def alive() -> None:
                for n, process in enumerate(workers, 1):
                    log = (tmp_path / f"worker-{n}.log").read_text()[-2000:]
                    assert process.poll() is None, log

            async def split() -> bool:
                alive()
                return (await job_row(db, parent.id)).status == "succeeded"

            # Generous waits: two worker processes start slowly on a busy machine.
            await wait_for(split, 240, "a worker to split the backlog")
            batch = await job_row(db, parent.id)
            assert batch.digest_id is None and len(batch.stats["slices"]) == expected_slices
            slices = await _slices(db, channel_id, parent.id)
            assert [s.id for s in slices] == batch.stats["slices"]
            bounds = [s.options["slice"] for s in slices]
            assert [b["index"] for b in bounds] == list(range(1, expected_slices + 1))
            assert sum(b["messages"] for b in bounds) == total
            assert all(b["messages"] <= CAP and b["batch"] == parent.id for b in bounds)

            # Triggering again while the slices run queues nothing: the batch is the answer.
            again, created = await _trigger(db, channel_id)
            assert again.id == parent.id and not created

            async def two_workers_busy() -> bool:
                alive()
                held = {
                    s.worker_id
                    for s in await _slices(db, channel_id, parent.id)
                    if s.status == "running"
                }
                return len(held) == 2

            await wait_for(two_workers_busy, 240, "both workers to hold a slice at once")
            # Kill the first worker mid-slice: its slice's lease runs out and the other retakes it.
            victim = workers[0]
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            pid = f":{victim.pid}:"
            killed = [
                s
                for s in await _slices(db, channel_id, parent.id)
                if s.status == "running" and s.worker_id and pid in s.worker_id
            ]
            survivor = workers[1]

            async def all_done() -> bool:
                assert survivor.poll() is None, (tmp_path / "worker-2.log").read_text()[-2000:]
                done = await _slices(db, channel_id, parent.id)
                return all(s.status not in ("queued", "running") for s in done)

            await wait_for(all_done, 480, "the surviving worker to finish every slice")
        finally:
            for process in workers:
                if process.poll() is None:
                    process.send_signal(signal.SIGKILL)
                    process.wait()
    finished = await _slices(db, channel_id, parent.id)
    assert [s.status for s in finished] == ["succeeded"] * expected_slices, [
        (s.status, s.error) for s in finished
    ]
    assert len({s.digest_id for s in finished}) == expected_slices
    # A slice takes seconds: the one the victim held was still running when it died.
    assert killed
    retaken = next(s for s in finished if s.id == killed[0].id)
    assert retaken.attempts == 2 and pid not in (retaken.worker_id or "")
    async with db.acquire() as connection:
        uncovered = await connection.fetchval(
            "SELECT count(*) FROM messages WHERE channel_id = $1"
            " AND covered_revision IS DISTINCT FROM revision",
            channel_id,
        )
        read_twice = await connection.fetchval(
            "SELECT count(*) FROM (SELECT dm.message_id FROM digest_messages dm"
            " JOIN digests d ON d.id = dm.digest_id WHERE d.channel_id = $1"
            " GROUP BY dm.message_id HAVING count(*) > 1) twice",
            channel_id,
        )
        digests = await connection.fetch(
            "SELECT id, message_count, left_out = '[]'::jsonb AS whole FROM digests"
            " WHERE channel_id = $1",
            channel_id,
        )
        covering = await connection.fetch(
            "SELECT covered_by_digest_id AS digest, count(*) AS n FROM messages"
            " WHERE channel_id = $1 GROUP BY 1",
            channel_id,
        )
    assert uncovered == 0 and read_twice == 0
    assert len(digests) == expected_slices
    assert sum(d["message_count"] for d in digests) == total
    assert all(d["whole"] for d in digests)
    # Each slice's digest covers exactly the messages of its slice.
    by_digest = {row["digest"]: row["n"] for row in covering}
    assert sorted(by_digest.values()) == sorted(s.options["slice"]["messages"] for s in finished)

    # The backlog drained: the next trigger is a new job with nothing left to read.
    after, created = await _trigger(db, channel_id)
    assert created and after.id != parent.id
