"""Coverage per message: every message is digested once a digest covers it, whatever its timestamp
and whenever it arrived; failed chunks cover nothing; a catch-up window digests exactly a time range
and changes no coverage. Real PostgreSQL, the offline extractor, the real worker."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise

import asyncpg

from db import jobs
from db.models import DigestJob
from runner.core.chunks import Chunk
from runner.core.contract import ChunkSummary
from runner.core.extractor import KnownItem
from runner.extract.offline import OfflineExtractor
from schema.types.ids import DIGEST_JOB, global_id
from tests.support.database import BASE_TIME, Msg, add_channel, messages
from tests.support.digests import (
    TEXTS,
    FailingChunks,
    digest_once,
    make_worker,
    read_ids,
    uncovered,
)
from tests.support.schema import gql


async def test_failed_chunk_messages_are_digested_by_the_next_trigger(
    db: asyncpg.Pool, database_url: str
) -> None:
    items = messages(TEXTS)
    channel_id = await add_channel(db, "ops", items)
    first = await digest_once(db, database_url, channel_id, extractor=FailingChunks({"m20"}))
    assert first.status == "partial", first.error
    second = await digest_once(db, database_url, channel_id)
    # The old mark moved past the failed chunk: "no new messages", nothing digested again.
    assert second.status == "succeeded" and second.digest_id is not None
    assert "m20" in await read_ids(db, second.digest_id)

    left = await read_ids(db, second.digest_id)
    assert "m1" not in left  # the failed chunk's messages, only those
    assert await uncovered(db, channel_id) == []
    async with db.acquire() as connection:
        row = await connection.fetchrow(
            "SELECT left_out FROM digests WHERE id = $1", first.digest_id
        )
    # A chunk holds whole conversations, so its messages need not be contiguous in time: the
    # left-out ranges (in time order) together are exactly the messages read again.
    ranges = row["left_out"]
    assert ranges and all(r["reason"] == "chunk_failed" for r in ranges)
    assert sum(r["message_count"] for r in ranges) == len(left)
    order = [m.external_id for m in items]
    assert ranges[0]["first_message_id"] == left[0] and ranges[-1]["last_message_id"] == left[-1]
    for earlier, later in pairwise(ranges):
        assert order.index(earlier["last_message_id"]) < order.index(later["first_message_id"])


async def test_backfilled_older_messages_are_digested(db: asyncpg.Pool, database_url: str) -> None:
    channel_id = await add_channel(db, "ops", messages(TEXTS[:20]))
    first = await digest_once(db, database_url, channel_id)
    assert first.status == "succeeded"
    # A late export: older timestamps than everything digested so far.
    backfill = messages(TEXTS[20:30], start=BASE_TIME - timedelta(days=30), prefix="old")
    await add_channel(db, "ops", backfill)
    second = await digest_once(db, database_url, channel_id)
    assert second.status == "succeeded" and second.result_message is None
    assert await read_ids(db, second.digest_id) == [m.external_id for m in backfill]
    assert await uncovered(db, channel_id) == []


async def test_reingesting_a_digested_message_in_2030_hides_nothing(
    db: asyncpg.Pool, database_url: str
) -> None:
    items = messages(TEXTS[:20])
    channel_id = await add_channel(db, "ops", items)
    assert (await digest_once(db, database_url, channel_id)).status == "succeeded"
    last = items[-1]
    clock_bug = Msg(last.external_id, last.author, datetime(2030, 1, 1, tzinfo=UTC), last.text)
    newer = messages(TEXTS[20:30], start=BASE_TIME + timedelta(days=1), prefix="new")
    await add_channel(db, "ops", [clock_bug, *newer])
    second = await digest_once(db, database_url, channel_id)
    # The old window started after the mark, now in 2030: "no new messages".
    assert second.digest_id is not None, second.result_message
    assert await read_ids(db, second.digest_id) == [m.external_id for m in newer]
    # The same text at another time is no new revision: it stayed covered.
    assert await uncovered(db, channel_id) == []


async def test_catch_up_window_digests_exactly_the_range_and_keeps_coverage(
    db: asyncpg.Pool, database_url: str
) -> None:
    items = messages(TEXTS)  # one minute apart from BASE_TIME
    channel_id = await add_channel(db, "ops", items)
    since, until = BASE_TIME + timedelta(minutes=10), BASE_TIME + timedelta(minutes=25)
    options = {"since": since.isoformat(), "until": until.isoformat()}
    catch_up = await digest_once(db, database_url, channel_id, options)
    assert catch_up.status == "succeeded"
    expected = [m.external_id for m in items if since <= m.ts < until]
    assert await read_ids(db, catch_up.digest_id) == expected == [f"m{i}" for i in range(11, 26)]
    assert len(await uncovered(db, channel_id)) == len(items)  # coverage unchanged
    async with db.acquire() as connection:
        row = await connection.fetchrow("SELECT * FROM digests WHERE id = $1", catch_up.digest_id)
    assert row["catch_up"] and row["window_since"] == since and row["window_until"] == until

    # The same window again: served from the digest of the same messages.
    again = await digest_once(db, database_url, channel_id, options)
    assert again.digest_id == catch_up.digest_id
    assert again.result_message is not None and "served from it" in again.result_message

    coverage = await digest_once(db, database_url, channel_id)
    assert len(await read_ids(db, coverage.digest_id)) == len(items)
    assert await uncovered(db, channel_id) == []


async def test_a_catch_up_trigger_neither_waits_for_nor_replaces_the_coverage_job(
    db: asyncpg.Pool,
) -> None:
    channel_id = await add_channel(db, "ops", messages(TEXTS[:5]))
    window = {"since": "2024-05-01T09:00:00+00:00", "until": "2024-05-01T10:00:00+00:00"}
    async with db.acquire() as connection:
        coverage, created = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )
        catch_up, created_window = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, window, max_attempts=3
        )
        same, created_again = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, dict(window), max_attempts=3
        )
        repeat, created_repeat = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )
    assert created and created_window and not created_again and not created_repeat
    assert catch_up.id != coverage.id
    assert same.id == catch_up.id and repeat.id == coverage.id


async def _slices(db: asyncpg.Pool, channel_id: int, batch: int) -> list[DigestJob]:
    async with db.acquire() as connection:
        return await jobs.slices_of_batch(connection, channel_id, batch)


async def test_a_backlog_over_the_cap_is_split_into_slices_each_covering_its_own(
    db: asyncpg.Pool, database_url: str
) -> None:
    channel_id = await add_channel(db, "ops", messages(TEXTS[:30]))
    batch = await digest_once(db, database_url, channel_id, max_window_messages=20)
    assert batch.status == "succeeded" and batch.digest_id is None
    assert batch.result_message is not None and "split into 2 slices" in batch.result_message
    first, second = await _slices(db, channel_id, batch.id)
    assert batch.stats["slices"] == [first.id, second.id]
    assert first.options["slice"]["messages"] == 20 and second.options["slice"]["messages"] == 10
    async with db.acquire() as connection:
        # While the slices are queued, triggering again is the batch, not a new digest.
        again, created = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )
        assert again.id == batch.id and not created
    # The API lists a batch's slices through the jobs connection, each saying which it is.
    listed = await gql(
        db,
        """query($b: ID!) { digestJobs(filter: {batchId: $b}) { totalCount nodes {
             id coverageSlice { batchId index count messageCount firstAt lastAt } } } }""",
        b=global_id(DIGEST_JOB, batch.id),
    )
    page = listed["digestJobs"]
    assert page["totalCount"] == 2
    pieces = sorted((node["coverageSlice"] for node in page["nodes"]), key=lambda p: p["index"])
    assert [(p["index"], p["count"], p["messageCount"]) for p in pieces] == [(1, 2, 20), (2, 2, 10)]
    assert {p["batchId"] for p in pieces} == {global_id(DIGEST_JOB, batch.id)}
    for _ in range(2):
        worker = make_worker(db, database_url, None, max_window_messages=20)
        assert await worker.run_once()
    done = await _slices(db, channel_id, batch.id)
    assert [job.status for job in done] == ["succeeded", "succeeded"]
    assert await read_ids(db, done[0].digest_id) == [f"m{i}" for i in range(1, 21)]
    assert await read_ids(db, done[1].digest_id) == [f"m{i}" for i in range(21, 31)]
    assert await uncovered(db, channel_id) == []
    async with db.acquire() as connection:
        left_out = await connection.fetch(
            "SELECT left_out FROM digests WHERE channel_id = $1", channel_id
        )
    assert [row["left_out"] for row in left_out] == [[], []]
    after = await digest_once(db, database_url, channel_id, max_window_messages=20)
    assert after.id != batch.id and after.result_message == "no new messages"


async def test_cancelling_the_job_that_split_the_backlog_cancels_its_slices(
    db: asyncpg.Pool, database_url: str
) -> None:
    channel_id = await add_channel(db, "ops", messages(TEXTS[:30]))
    batch = await digest_once(db, database_url, channel_id, max_window_messages=20)
    first, second = await _slices(db, channel_id, batch.id)
    async with db.acquire() as connection:
        # The first slice is running on some worker; the second is still queued.
        await connection.execute(
            "UPDATE digest_jobs SET status = 'running', worker_id = 'w-elsewhere',"
            " lease_expires_at = now() + interval '1 hour' WHERE id = $1",
            first.id,
        )
    answer = await gql(
        db,
        """mutation($id: ID!) { cancelJob(id: $id) { ... on DigestJob { id status } } }""",
        id=global_id(DIGEST_JOB, batch.id),
    )
    assert answer["cancelJob"] == {"id": global_id(DIGEST_JOB, batch.id), "status": "SUCCEEDED"}
    running, queued = await _slices(db, channel_id, batch.id)
    assert (running.status, running.cancel_requested) == ("running", True)
    assert (queued.status, queued.cancel_requested) == ("cancelled", True)
    assert queued.finished_at is not None
    # Nothing is left for a worker, and nothing was covered.
    assert not await make_worker(db, database_url, None, max_window_messages=20).run_once()
    assert len(await uncovered(db, channel_id)) == 30
    # Another job of the channel is not touched by the batch's cancel.
    async with db.acquire() as connection:
        other = await add_channel(db, "dev", messages(TEXTS[:30]))
        other_batch = await digest_once(db, database_url, other, max_window_messages=20)
        await jobs.cancel_job(connection, batch.id)
        assert [job.status for job in await _slices(db, other, other_batch.id)] == [
            "queued",
            "queued",
        ]


async def test_a_slice_that_gained_messages_leaves_only_its_own_rest(
    db: asyncpg.Pool, database_url: str
) -> None:
    items = messages(TEXTS[:30])
    channel_id = await add_channel(db, "ops", items)
    batch = await digest_once(db, database_url, channel_id, max_window_messages=20)
    # A backfill inside the first slice's bounds after the split: 21 uncovered messages there.
    late = Msg("late", "bob", items[4].ts + timedelta(seconds=30), "A late note on the release.")
    await add_channel(db, "ops", [late])
    first, second = await _slices(db, channel_id, batch.id)
    job = await digest_once_claimed(db, database_url)
    assert job.id == first.id
    async with db.acquire() as connection:
        row = await connection.fetchrow("SELECT left_out FROM digests WHERE id = $1", job.digest_id)
    [capped] = row["left_out"]
    # The cap left m20, the slice's own last message; the second slice is not "left out".
    assert (capped["reason"], capped["message_count"]) == ("window_cap", 1)
    assert (capped["first_message_id"], capped["last_message_id"]) == ("m20", "m20")
    assert (await digest_once_claimed(db, database_url)).id == second.id
    assert await uncovered(db, channel_id) == ["m20"]
    follow_up = await digest_once(db, database_url, channel_id, max_window_messages=20)
    assert await read_ids(db, follow_up.digest_id) == ["m20"]


async def test_a_failing_slice_retries_alone_and_the_others_keep_their_coverage(
    db: asyncpg.Pool, database_url: str
) -> None:
    channel_id = await add_channel(db, "ops", messages(TEXTS[:30]))
    batch = await digest_once(db, database_url, channel_id, max_window_messages=20)
    first, second = await _slices(db, channel_id, batch.id)
    outage = FailingChunks({f"m{i}" for i in range(1, 21)})  # every chunk of the first slice
    assert await make_worker(db, database_url, outage, max_window_messages=20).run_once()
    failed = await jobs_row(db, first.id)
    assert failed.status == "queued" and failed.error is not None  # retried after a backoff
    # The second slice runs meanwhile and keeps its coverage whatever the first one does.
    assert await make_worker(db, database_url, outage, max_window_messages=20).run_once()
    assert (await jobs_row(db, second.id)).status == "succeeded"
    assert await uncovered(db, channel_id) == [f"m{i}" for i in range(1, 21)]
    async with db.acquire() as connection:
        await connection.execute("UPDATE digest_jobs SET run_after = now() WHERE id = $1", first.id)
    assert await make_worker(db, database_url, None, max_window_messages=20).run_once()
    retried = await jobs_row(db, first.id)
    assert retried.status == "succeeded" and retried.attempts == 2
    assert await uncovered(db, channel_id) == []


async def jobs_row(db: asyncpg.Pool, job_id: int) -> DigestJob:
    async with db.acquire() as connection:
        row = await jobs.job_by_id(connection, job_id)
    assert row is not None
    return row


async def test_a_coverage_job_queued_beside_active_slices_reads_nothing(
    db: asyncpg.Pool, database_url: str
) -> None:
    channel_id = await add_channel(db, "ops", messages(TEXTS[:30]))
    batch = await digest_once(db, database_url, channel_id, max_window_messages=20)
    async with db.acquire() as connection:
        # As if its insert had raced the split's commit (the trigger itself holds it back).
        stray = await connection.fetchval(
            "INSERT INTO digest_jobs (kind, channel_id, options, max_attempts, run_after)"
            " VALUES ('channel', $1, '{}', 3, now() - interval '1 hour') RETURNING id",
            channel_id,
        )
    job = await digest_once_claimed(db, database_url)
    assert job.id == stray and job.digest_id is None
    assert job.result_message == f"the backlog is being digested by the slices of job {batch.id}"
    assert len(await uncovered(db, channel_id)) == 30


async def digest_once_claimed(db: asyncpg.Pool, database_url: str) -> DigestJob:
    """Let one worker (cap 20) run the next due job; that job's row after."""
    async with db.acquire() as connection:
        due = await connection.fetchval(
            "SELECT id FROM digest_jobs WHERE status = 'queued' ORDER BY run_after, id LIMIT 1"
        )
    assert await make_worker(db, database_url, None, max_window_messages=20).run_once()
    async with db.acquire() as connection:
        row = await jobs.job_by_id(connection, due)
    assert row is not None
    return row


class EditsMidDigest(OfflineExtractor):
    """The offline extractor; while it maps the first chunk, an import edits `target`."""

    def __init__(self, pool: asyncpg.Pool, target: Msg) -> None:
        super().__init__()
        self.pool, self.target, self.done = pool, target, False

    async def extract_chunk(self, chunk: Chunk, known_items: list[KnownItem]) -> ChunkSummary:
        if not self.done:
            self.done = True
            edited = Msg(
                self.target.external_id, self.target.author, self.target.ts, "edited meanwhile"
            )
            await add_channel(self.pool, "ops", [edited])
        return await super().extract_chunk(chunk, known_items)


async def test_a_message_edited_during_the_digest_stays_uncovered(
    db: asyncpg.Pool, database_url: str
) -> None:
    items = messages(TEXTS[:20])
    channel_id = await add_channel(db, "ops", items)
    job = await digest_once(db, database_url, channel_id, extractor=EditsMidDigest(db, items[4]))
    assert job.status == "succeeded"
    assert await uncovered(db, channel_id) == ["m5"]
    async with db.acquire() as connection:
        row = await connection.fetchrow("SELECT left_out FROM digests WHERE id = $1", job.digest_id)
        # Not covered, but threaded all the same, like every message the digest read.
        unthreaded = await connection.fetchval(
            "SELECT count(*) FROM messages WHERE channel_id = $1 AND conversation_id IS NULL",
            channel_id,
        )
    assert unthreaded == 0
    assert row["left_out"] == [
        {
            "first_message_id": "m5",
            "last_message_id": "m5",
            "message_count": 1,
            "first_at": items[4].ts.isoformat(),
            "last_at": items[4].ts.isoformat(),
            "reason": "edited_during_digest",
        }
    ]
    again = await digest_once(db, database_url, channel_id)
    assert await read_ids(db, again.digest_id) == ["m5"]


async def test_a_capped_catch_up_window_says_what_it_left_out(
    db: asyncpg.Pool, database_url: str
) -> None:
    channel_id = await add_channel(db, "ops", messages(TEXTS))
    options = {
        "since": BASE_TIME.isoformat(),
        "until": (BASE_TIME + timedelta(minutes=30)).isoformat(),
    }
    job = await digest_once(db, database_url, channel_id, options, max_window_messages=25)
    assert await read_ids(db, job.digest_id) == [f"m{i}" for i in range(1, 26)]
    async with db.acquire() as connection:
        row = await connection.fetchrow("SELECT left_out FROM digests WHERE id = $1", job.digest_id)
    [capped] = row["left_out"]
    assert (capped["reason"], capped["message_count"]) == ("window_cap", 5)  # m26..m30, not m40
    assert (capped["first_message_id"], capped["last_message_id"]) == ("m26", "m30")
