"""Digest schedules in the database (runner/schedules/store.py, runner/schedules/tick.py): slots computed
from the database's clock, a tick that fires each due schedule once and catches up once after
downtime, paused schedules that never fire, and the job a firing queues being an ordinary
channel digest (tests/integration/runner/schedules/test_bounds.py: what a quiet channel's slot does instead)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import asyncpg
import pytest

from db import jobs
from db import schedules as schedule_queries
from db.models import Schedule
from runner.schedules import store as schedules
from runner.schedules.cron import parse_schedule
from runner.schedules.store import ScheduleRefused
from runner.schedules.tick import fire_due_schedules
from runner.triggers import SubjectNotFound
from server.runtime import Runtime
from server.settings import Settings
from tests.support.database import add_channel, messages

DAYS_DOWN = 3


async def _channel(pool: asyncpg.Pool, name: str = "ops") -> int:
    return await add_channel(
        pool,
        name,
        messages(
            [
                ("ann", "The database migration runs on Friday evening after the freeze."),
                ("bob", "Rollbacks of the database migration need approval from the on-call lead."),
            ]
        ),
    )


async def _create(pool: asyncpg.Pool, channel_id: int, cron: str, timezone: str = "UTC") -> int:
    async with pool.acquire() as connection:
        return (await schedules.create_schedule(connection, channel_id, cron, timezone)).id


async def _make_due(pool: asyncpg.Pool, schedule_id: int, ago: timedelta) -> datetime:
    """Move the schedule's slot into the past, as if no worker had run since: the slot."""
    async with pool.acquire() as connection:
        slot: datetime = await connection.fetchval(
            "UPDATE schedules SET next_run_at = now() - $2::interval WHERE id = $1 "
            "RETURNING next_run_at",
            schedule_id,
            ago,
        )
    return slot


async def _fire(pool: asyncpg.Pool) -> list[int]:
    async with pool.acquire() as connection:
        return [f.schedule_id for f in await fire_due_schedules(connection, max_attempts=3)]


async def _row(pool: asyncpg.Pool, schedule_id: int) -> Schedule:
    async with pool.acquire() as connection:
        (row,) = await schedule_queries.schedules_by_ids(connection, [schedule_id])
    return row


async def _runs(pool: asyncpg.Pool, schedule_id: int) -> list[asyncpg.Record]:
    async with pool.acquire() as connection:
        return list(
            await connection.fetch(
                "SELECT slot, job_id, job_created FROM schedule_runs WHERE schedule_id = $1 "
                "ORDER BY slot",
                schedule_id,
            )
        )


async def test_a_new_schedule_is_due_at_its_next_slot_after_the_databases_now(
    db: asyncpg.Pool,
) -> None:
    channel_id = await _channel(db)
    async with db.acquire() as connection:
        row = await schedules.create_schedule(
            connection, channel_id, " 0 9 * * 1-5", "Europe/Berlin"
        )
        now = await schedule_queries.database_now(connection)
    assert (row.cron, row.timezone, row.paused, row.last_run_at) == (
        "0 9 * * 1-5",
        "Europe/Berlin",
        False,
        None,
    )
    assert row.next_run_at == parse_schedule("0 9 * * 1-5", "Europe/Berlin").next_after(now)
    local = row.next_run_at.astimezone(ZoneInfo("Europe/Berlin"))
    assert (local.hour, local.minute) == (9, 0) and local.weekday() < 5
    assert await _fire(db) == []  # not due yet


async def test_bad_input_and_unknown_subjects_are_refused(db: asyncpg.Pool) -> None:
    channel_id = await _channel(db)
    async with db.acquire() as connection:
        with pytest.raises(ScheduleRefused) as refused:
            await schedules.create_schedule(connection, channel_id, "0 9 * *", "UTC")
        assert (refused.value.field, refused.value.code) == ("cron", "invalid_cron")
        with pytest.raises(ScheduleRefused) as refused:
            await schedules.create_schedule(connection, channel_id, "0 9 * * *", "Europe/Berlinn")
        assert (refused.value.field, refused.value.code) == ("timezone", "invalid_timezone")
        with pytest.raises(SubjectNotFound, match="no channel with id 999"):
            await schedules.create_schedule(connection, 999, "0 9 * * *", "UTC")
        for change in (
            schedules.pause_schedule,
            schedules.resume_schedule,
            schedules.delete_schedule,
        ):
            with pytest.raises(SubjectNotFound, match="no schedule with id 42"):
                await change(connection, 42)
        assert await connection.fetchval("SELECT count(*) FROM schedules") == 0


async def test_after_downtime_a_schedule_catches_up_once_then_waits_for_its_next_slot(
    db: asyncpg.Pool,
) -> None:
    channel_id = await _channel(db)
    schedule_id = await _create(db, channel_id, "0 9 * * *", "Europe/Berlin")
    # No worker ran for three days: three 09:00 slots passed.
    missed = await _make_due(db, schedule_id, timedelta(days=DAYS_DOWN))

    assert await _fire(db) == [schedule_id]
    assert await _fire(db) == []  # caught up once, not once per missed slot

    row = await _row(db, schedule_id)
    async with db.acquire() as connection:
        now = await schedule_queries.database_now(connection)
        job = await jobs.job_by_id(connection, row.last_job_id or 0)
    assert row.next_run_at == parse_schedule("0 9 * * *", "Europe/Berlin").next_after(now)
    assert now - timedelta(minutes=1) < (row.last_run_at or now) <= now
    runs = await _runs(db, schedule_id)
    assert [(r["slot"], r["job_created"]) for r in runs] == [(missed, True)]
    # An ordinary coverage digest of the channel: no options, no window.
    assert job is not None and (job.kind, job.channel_id, job.options) == (
        "channel",
        channel_id,
        {},
    )


async def test_a_firing_joins_the_channels_active_digest_instead_of_queuing_a_second(
    db: asyncpg.Pool,
) -> None:
    channel_id = await _channel(db)
    async with db.acquire() as connection:
        active, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )
    schedule_id = await _create(db, channel_id, "*/5 * * * *")
    await _make_due(db, schedule_id, timedelta(seconds=1))
    assert await _fire(db) == [schedule_id]
    assert (await _row(db, schedule_id)).last_job_id == active.id
    assert [(r["job_id"], r["job_created"]) for r in await _runs(db, schedule_id)] == [
        (active.id, False)
    ]
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM digest_jobs") == 1


async def test_paused_schedules_never_fire_and_resume_from_now_without_catching_up(
    db: asyncpg.Pool,
) -> None:
    channel_id = await _channel(db)
    schedule_id = await _create(db, channel_id, "0 9 * * *", "Europe/Berlin")
    async with db.acquire() as connection:
        paused = await schedules.pause_schedule(connection, schedule_id)
        assert paused.paused and (await schedules.pause_schedule(connection, schedule_id)).paused
    await _make_due(db, schedule_id, timedelta(days=2))
    assert await _fire(db) == []

    async with db.acquire() as connection:
        resumed = await schedules.resume_schedule(connection, schedule_id)
        now = await schedule_queries.database_now(connection)
        assert not resumed.paused and resumed.next_run_at > now  # the paused days are not caught up
        again = await schedules.resume_schedule(connection, schedule_id)  # not paused: unchanged
        assert again.next_run_at == resumed.next_run_at
    assert await _fire(db) == []

    async with db.acquire() as connection:
        deleted = await schedules.delete_schedule(connection, schedule_id)
        assert deleted.id == schedule_id
        assert await schedule_queries.schedules_by_ids(connection, [schedule_id]) == []


async def test_a_schedule_another_transaction_is_firing_is_skipped_not_waited_for(
    db: asyncpg.Pool,
) -> None:
    channel_id = await _channel(db)
    schedule_id = await _create(db, channel_id, "*/5 * * * *")
    await _make_due(db, schedule_id, timedelta(seconds=30))
    async with db.acquire() as holder:
        transaction = holder.transaction()
        await transaction.start()
        assert [d.id for d in await schedule_queries.due_schedules(holder, 10)] == [schedule_id]
        # Another worker's tick meanwhile: the locked schedule is skipped at once.
        async with asyncio.timeout(5):
            assert await _fire(db) == []
        await transaction.rollback()  # the holder died before moving it: still due
    assert await _fire(db) == [schedule_id]
    assert await _fire(db) == []


async def test_a_schedule_whose_zone_vanished_is_paused_by_the_tick(db: asyncpg.Pool) -> None:
    channel_id = await _channel(db)
    schedule_id = await _create(db, channel_id, "0 9 * * *")
    async with db.acquire() as connection:
        # As if the system's zone data had lost the name since the schedule was made.
        await connection.execute(
            "UPDATE schedules SET timezone = 'Gone/Zone', next_run_at = now() - interval '1 minute' "
            "WHERE id = $1",
            schedule_id,
        )
    assert await _fire(db) == []
    row = await _row(db, schedule_id)
    assert row.paused and await _runs(db, schedule_id) == []
    async with db.acquire() as connection:
        with pytest.raises(ScheduleRefused, match="timezone"):
            await schedules.resume_schedule(connection, schedule_id)


async def test_deleting_the_channel_deletes_its_schedules(db: asyncpg.Pool) -> None:
    channel_id = await _channel(db)
    schedule_id = await _create(db, channel_id, "0 9 * * *")
    async with db.acquire() as connection:
        await connection.execute("DELETE FROM channels WHERE id = $1", channel_id)
        assert await schedule_queries.schedules_by_ids(connection, [schedule_id]) == []


async def test_a_process_running_job_loops_also_ticks_and_one_running_none_does_not(
    db: asyncpg.Pool, settings: Settings
) -> None:
    channel_id = await _channel(db)
    schedule_id = await _create(db, channel_id, "0 9 * * *")
    await _make_due(db, schedule_id, timedelta(minutes=5))
    runtime = Runtime(settings.model_copy(update={"digestd_schedule_tick_seconds": 0.1}))
    await runtime.open()
    try:
        idle = runtime.runner(0)  # `digestd serve --no-runner`: no job loop, no tick
        idle.start()
        await asyncio.sleep(1.0)
        await idle.stop(timeout=5)
        assert await _runs(db, schedule_id) == []

        runner = runtime.runner(1)
        runner.start()
        try:
            async with asyncio.timeout(30):
                while not await _runs(db, schedule_id):
                    await asyncio.sleep(0.1)
            assert runner.running
        finally:
            await runner.stop(timeout=10)
    finally:
        await runtime.close()
    assert len(await _runs(db, schedule_id)) == 1


async def test_a_schedule_that_cannot_fire_stays_due_and_the_others_fire(db: asyncpg.Pool) -> None:
    """Its slot already has a run (what UNIQUE (schedule_id, slot) exists to refuse): that
    firing is rolled back to its savepoint, job included, and the other schedule fires."""
    blocked_id = await _create(db, await _channel(db, "ops"), "0 9 * * *")
    other_id = await _create(db, await _channel(db, "web"), "0 9 * * *")
    slot = await _make_due(db, blocked_id, timedelta(minutes=1))
    await _make_due(db, other_id, timedelta(minutes=1))
    async with db.acquire() as connection:
        await connection.execute(
            "INSERT INTO schedule_runs (schedule_id, slot, job_created, fired_by) "
            "VALUES ($1, $2, false, 'elsewhere')",
            blocked_id,
            slot,
        )
    assert await _fire(db) == [other_id]
    blocked = await _row(db, blocked_id)
    assert (blocked.next_run_at, blocked.last_job_id) == (slot, None)  # still due, untouched
    async with db.acquire() as connection:
        jobs_of = await connection.fetch("SELECT channel_id FROM digest_jobs")
    assert [r["channel_id"] for r in jobs_of] == [(await _row(db, other_id)).channel_id]
