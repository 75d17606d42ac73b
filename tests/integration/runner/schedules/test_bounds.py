"""What a schedule may cost (runner/schedules/cron.py, runner/schedules/store.py, runner/schedules/tick.py): slots at
least a minimum interval apart (refused at create, and never fired more often by the tick), no
job for a channel with no new message (the run is recorded skipped), a cap of schedules per
channel (held under concurrent creates), retention of the runs that queued nothing, and real
IANA zones only. Real PostgreSQL and the real worker."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import asyncpg
import pytest

from db import jobs
from runner.schedules import store as schedules
from runner.schedules.cron import InvalidSchedule, parse_schedule
from runner.schedules.store import ScheduleLimits, ScheduleRefused, TooManySchedules
from runner.schedules.tick import fire_due_schedules, prune_schedule_runs
from runner.triggers import TriggerRefused
from schema.types.ids import CHANNEL, global_id
from tests.support.database import BASE_TIME, Msg, add_channel, messages
from tests.support.digests import make_worker
from tests.support.schema import gql

EVERY_SECOND = ScheduleLimits(min_interval=timedelta(seconds=1))
CREATE = """
mutation($channel: ID!, $cron: String!, $tz: String!) {
  createSchedule(channelId: $channel, cron: $cron, timezone: $tz) {
    __typename ... on Schedule { cron } ... on InvalidInputError { message code reason }
  }
}"""


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


async def _make_due(pool: asyncpg.Pool, schedule_id: int, minutes_ago: int = 1) -> datetime:
    """Its slot moved `minutes_ago` into the past (distinct per firing: one run per slot)."""
    async with pool.acquire() as connection:
        slot: datetime = await connection.fetchval(
            "UPDATE schedules SET next_run_at = date_trunc('second', now()) "
            "- make_interval(mins => $2) WHERE id = $1 RETURNING next_run_at",
            schedule_id,
            minutes_ago,
        )
    return slot


async def _fire(pool: asyncpg.Pool, limits: ScheduleLimits = ScheduleLimits()) -> list[int]:
    async with pool.acquire() as connection:
        fired = await fire_due_schedules(connection, max_attempts=3, limits=limits)
    return [f.schedule_id for f in fired]


async def test_a_cron_whose_slots_come_closer_than_the_minimum_is_refused_naming_cron(
    db: asyncpg.Pool,
) -> None:
    channel_id = await _channel(db)
    async with db.acquire() as connection:
        for cron, apart in (
            ("* * * * * *", "1 second apart"),
            ("*/10 * * * * *", "10 seconds apart"),
            ("* * * * *", "1 minute apart"),
            ("*/2 * * * *", "2 minutes apart"),
            ("0,1 9 * * *", "1 minute apart"),  # once a day, but two slots a minute apart
        ):
            with pytest.raises(ScheduleRefused) as refused:
                await schedules.create_schedule(connection, channel_id, cron, "UTC")
            assert (refused.value.field, refused.value.code) == ("cron", "invalid_cron")
            assert refused.value.message.startswith(f"cron: {cron!r} has slots {apart}")
            assert "at most every 5 minutes" in refused.value.message
        assert await connection.fetchval("SELECT count(*) FROM schedules") == 0
        # At the minimum, and under a lowered one, they are accepted.
        await schedules.create_schedule(connection, channel_id, "*/5 * * * *", "UTC")
        await schedules.create_schedule(connection, channel_id, "* * * * * *", "UTC", EVERY_SECOND)
    # Through the API (the server's limits: the defaults here): a typed refusal naming `cron`.
    made = (
        await gql(db, CREATE, channel=global_id(CHANNEL, channel_id), cron="* * * * * *", tz="UTC")
    )["createSchedule"]
    assert (made["__typename"], made["code"], made["reason"]) == (
        "InvalidInputError",
        "BAD_USER_INPUT",
        "invalid_cron",
    )
    assert made["message"].startswith("cron: '* * * * * *' has slots 1 second apart")


async def test_the_tick_never_fires_a_schedule_more_often_than_the_minimum(
    db: asyncpg.Pool,
) -> None:
    """An every-second schedule stored before the minimum existed (or under a lower one): the
    tick moves it to its first slot at least the minimum after the slot it fired."""
    channel_id = await _channel(db)
    async with db.acquire() as connection:
        schedule_id = (
            await schedules.create_schedule(
                connection, channel_id, "* * * * * *", "UTC", EVERY_SECOND
            )
        ).id
    slot = await _make_due(db, schedule_id)
    assert await _fire(db) == [schedule_id]
    async with db.acquire() as connection:
        next_run_at = await connection.fetchval(
            "SELECT next_run_at FROM schedules WHERE id = $1", schedule_id
        )
        now = await connection.fetchval("SELECT now()")
    assert next_run_at >= slot + timedelta(minutes=5) and next_run_at > now
    assert await _fire(db) == []  # not due again for the next four minutes and more


async def test_a_quiet_channels_slot_queues_no_job_and_is_recorded_skipped(
    db: asyncpg.Pool, database_url: str
) -> None:
    channel_id = await _channel(db)
    worker = make_worker(db, database_url)
    async with db.acquire() as connection:
        schedule_id = (
            await schedules.create_schedule(connection, channel_id, "0 9 * * *", "UTC")
        ).id
    await _make_due(db, schedule_id, 30)
    assert await _fire(db) == [schedule_id]
    assert await worker.run_once()  # the first scheduled digest reads the two messages

    # Nothing new by the next slot: no job at all, a skipped run; the last job is kept.
    await _make_due(db, schedule_id, 20)
    assert await _fire(db) == [schedule_id]
    assert not await worker.run_once()
    async with db.acquire() as connection:
        runs = await connection.fetch(
            "SELECT job_id, job_created, skipped FROM schedule_runs WHERE schedule_id = $1 "
            "ORDER BY slot",
            schedule_id,
        )
        assert await connection.fetchval("SELECT count(*) FROM digest_jobs") == 1
        first_job = await connection.fetchval("SELECT id FROM digest_jobs")
        last_job = await connection.fetchval(
            "SELECT last_job_id FROM schedules WHERE id = $1", schedule_id
        )
    assert [tuple(r) for r in runs] == [(first_job, True, False), (None, False, True)]
    assert last_job == first_job

    # A new message: the next slot queues a digest again.
    later = Msg("m9", "cid", BASE_TIME + timedelta(hours=1), "The freeze starts on Thursday.")
    await add_channel(db, "ops", [later])
    await _make_due(db, schedule_id, 10)
    assert await _fire(db) == [schedule_id]
    assert await worker.run_once()
    async with db.acquire() as connection:
        job = await jobs.job_by_id(
            connection,
            await connection.fetchval(
                "SELECT last_job_id FROM schedules WHERE id = $1", schedule_id
            ),
        )
    assert job is not None and job.id != first_job and job.digest_id is not None


async def test_a_channel_has_at_most_the_capped_number_of_schedules_even_when_created_at_once(
    db: asyncpg.Pool,
) -> None:
    channel_id = await _channel(db)
    other_id = await _channel(db, "web")
    limits = ScheduleLimits(per_channel=3)

    async def create(channel: int) -> int | TriggerRefused:
        async with db.acquire() as connection:
            try:
                return (
                    await schedules.create_schedule(connection, channel, "0 9 * * *", "UTC", limits)
                ).id
            except TriggerRefused as refused:
                return refused

    results = await asyncio.gather(*(create(channel_id) for _ in range(6)))
    made = [r for r in results if isinstance(r, int)]
    refused = [r for r in results if isinstance(r, TooManySchedules)]
    assert (len(made), len(refused)) == (3, 3), results
    assert refused[0].code == "too_many_schedules"
    assert refused[0].message.startswith("the channel already has 3 schedules")
    assert isinstance(await create(other_id), int)  # per channel: another channel has room
    async with db.acquire() as connection:
        await schedules.delete_schedule(connection, made[0])
    assert isinstance(await create(channel_id), int)  # a deleted one frees its place
    assert isinstance(await create(channel_id), TooManySchedules)


async def test_the_tick_prunes_old_runs_that_queued_nothing_and_keeps_the_rest(
    db: asyncpg.Pool, database_url: str
) -> None:
    channel_id = await _channel(db)
    async with db.acquire() as connection:
        schedule_id = (
            await schedules.create_schedule(connection, channel_id, "0 9 * * *", "UTC")
        ).id
        digested, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )
    assert await make_worker(db, database_url).run_once()
    async with db.acquire() as connection:
        empty, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_id, {}, max_attempts=3
        )
    assert await make_worker(db, database_url).run_once()  # nothing new: ends without a digest
    async with db.acquire() as connection:
        assert (await jobs.job_by_id(connection, digested.id)).digest_id is not None  # type: ignore[union-attr]
        assert (await jobs.job_by_id(connection, empty.id)).digest_id is None  # type: ignore[union-attr]
        rows = [  # (days ago, job, skipped)
            (30, None, True),
            (30, empty.id, False),
            (30, digested.id, False),
            (2, None, True),
            (2, empty.id, False),
        ]
        for number, (days, job_id, skipped) in enumerate(rows):
            await connection.execute(
                "INSERT INTO schedule_runs (schedule_id, slot, fired_at, fired_by, job_id, "
                "job_created, skipped) VALUES ($1, now() - make_interval(days => $2, secs => $3), "
                "now() - make_interval(days => $2), 'test', $4, $5, $6)",
                schedule_id,
                days,
                number,
                job_id,
                job_id is not None,
                skipped,
            )
        assert await prune_schedule_runs(connection, 7) == 2
        assert await prune_schedule_runs(connection, 7) == 0
        kept = await connection.fetch(
            "SELECT (now() - fired_at) > interval '7 days' AS old, job_id, skipped "
            "FROM schedule_runs ORDER BY fired_at, id"
        )
    assert [tuple(r) for r in kept] == [
        (True, digested.id, False),
        (False, None, True),
        (False, empty.id, False),
    ]


@pytest.mark.parametrize("zone", ["localtime", "Factory", "posixrules", "Mars/Olympus_Mons"])
def test_only_real_iana_zones_are_accepted(zone: str) -> None:
    with pytest.raises(InvalidSchedule) as refused:
        parse_schedule("0 9 * * *", zone)
    assert refused.value.field == "timezone" and "IANA time zone" in refused.value.reason


async def test_a_stored_localtime_schedule_is_paused_by_the_tick(db: asyncpg.Pool) -> None:
    channel_id = await _channel(db)
    async with db.acquire() as connection:
        schedule_id = (
            await schedules.create_schedule(connection, channel_id, "0 9 * * *", "UTC")
        ).id
        await connection.execute(  # as stored before such names were refused
            "UPDATE schedules SET timezone = 'localtime', next_run_at = now() - interval '1 minute' "
            "WHERE id = $1",
            schedule_id,
        )
    assert await _fire(db) == []
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT paused FROM schedules WHERE id = $1", schedule_id)
        assert await connection.fetchval("SELECT count(*) FROM digest_jobs") == 0
