"""Schedules under several workers, measured: several real `digestd worker` processes on one
database, ten schedules firing every second (a fast clock: cron's seconds field) and a daily one
left due for three days. Each slot fires exactly once, counted per slot in schedule_runs with its
unique (schedule_id, slot) constraint dropped for the run, so the count measures the locking alone
(FOR UPDATE SKIP LOCKED and the database's now()), not the constraint that backs it up. The daily
schedule is caught up once; every job is an ordinary channel digest, and the quiet channels' later
slots queue none (their runs are recorded skipped). The minimum interval between slots is lowered to
a second for these runs (DIGESTD_SCHEDULE_MIN_INTERVAL_SECONDS)."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path

import asyncpg

from runner.schedules import store as schedules
from runner.schedules.cron import parse_schedule
from runner.schedules.store import ScheduleLimits
from tests.support.database import add_channel, messages
from tests.support.processes import cli_environment, start_cli, wait_exit

WORKERS = 3
# Many schedules make a tick's transaction long enough that ticks of different workers overlap:
# without the row locks, a slot would then be fired by two of them (checked by removing
# FOR UPDATE SKIP LOCKED from due_schedules: slots fired twice).
FAST_SCHEDULES = 10
# Slots each fast schedule fires while all workers run (about as many seconds): counted in the
# database, not a stretch of wall-clock time a loaded machine may fill with fewer ticks.
FAST_SLOTS = 10
DROP_UNIQUE = "ALTER TABLE schedule_runs DROP CONSTRAINT schedule_runs_one_per_slot"
ADD_UNIQUE = (
    "ALTER TABLE schedule_runs ADD CONSTRAINT schedule_runs_one_per_slot UNIQUE (schedule_id, slot)"
)
EVERY_SECOND = ScheduleLimits(min_interval=timedelta(seconds=1))


async def _wait_for(check: Callable[[], Awaitable[bool]], timeout: float, logs: list[Path]) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(
                "timed out; worker logs:\n" + "\n".join(p.read_text() for p in logs)
            )
        await asyncio.sleep(0.2)


async def _each_fired(
    pool: asyncpg.Pool, schedule_ids: list[int], slots: int, after: datetime
) -> bool:
    """Whether every schedule of `schedule_ids` has fired at least `slots` slots after `after`."""
    async with pool.acquire() as connection:
        rows = await connection.fetch(
            "SELECT schedule_id, count(*) AS fired FROM schedule_runs "
            "WHERE schedule_id = ANY($1::bigint[]) AND slot > $2 GROUP BY schedule_id",
            schedule_ids,
            after,
        )
    fired = {row["schedule_id"]: row["fired"] for row in rows}
    return all(fired.get(schedule_id, 0) >= slots for schedule_id in schedule_ids)


async def test_several_worker_processes_fire_each_slot_exactly_once(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    quiet = [
        await add_channel(
            db,
            f"ops-{i}",
            messages(
                [
                    ("ann", f"The database migration {i} runs on Friday evening after the freeze."),
                    ("bob", f"Rollbacks of migration {i} need approval from the on-call lead."),
                ]
            ),
        )
        for i in range(FAST_SCHEDULES)
    ]
    web = await add_channel(
        db, "web", messages([("cid", "The review of the frontend moved to Tuesday.")])
    )
    async with db.acquire() as connection:
        fast_ids = [
            (
                await schedules.create_schedule(
                    connection, channel, "* * * * * *", "UTC", EVERY_SECOND
                )
            ).id
            for channel in quiet
        ]
        daily = (await schedules.create_schedule(connection, web, "0 9 * * *", "Europe/Berlin")).id
        missed_slot = await connection.fetchval(
            "UPDATE schedules SET next_run_at = next_run_at - interval '3 days' WHERE id = $1 "
            "RETURNING next_run_at",
            daily,
        )
        await connection.execute(DROP_UNIQUE)
    environment = cli_environment(
        DATABASE_URL=database_url,
        DIGESTD_HOME=str(tmp_path / "home"),
        DIGEST_EXTRACTOR="offline",
        DIGESTD_SCHEDULE_TICK_SECONDS="0.1",
        DIGESTD_POLL_SECONDS="0.2",
        DIGESTD_EXTRACT_PROCESSES="0",
        DIGESTD_DB_POOL_SIZE="3",
        DIGESTD_SCHEDULE_MIN_INTERVAL_SECONDS="1",
    )
    logs = [tmp_path / f"worker{i}.log" for i in range(WORKERS)]
    workers = [start_cli(["worker"], environment, log) for log in logs]
    try:

        async def all_started() -> bool:
            return all("digestd worker: 1 loop(s)" in log.read_text() for log in logs)

        await _wait_for(all_started, 90, logs)
        async with db.acquire() as connection:
            started = await connection.fetchval("SELECT now()")

        async def fired_enough() -> bool:
            return await _each_fired(db, fast_ids, FAST_SLOTS, started)

        await _wait_for(fired_enough, 180, logs)
        async with db.acquire() as connection:
            stopped = await connection.fetchval(
                "UPDATE schedules SET paused = true WHERE cron = '* * * * * *' RETURNING now()"
            )
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            assert await wait_exit(worker, 60) == 0
        async with db.acquire() as connection:
            runs = await connection.fetch(
                "SELECT schedule_id, slot, fired_at, job_id, job_created, fired_by, skipped "
                "FROM schedule_runs ORDER BY schedule_id, slot"
            )
            channel_jobs = await connection.fetch(
                "SELECT id, channel_id, kind, options, status, result_message, digest_id "
                "FROM digest_jobs ORDER BY id"
            )
            daily_row = await connection.fetchrow(
                "SELECT next_run_at, last_run_at FROM schedules WHERE id = $1", daily
            )
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        async with db.acquire() as connection:
            await connection.execute("TRUNCATE schedule_runs")
            await connection.execute(ADD_UNIQUE)
    text = "\n".join(log.read_text() for log in logs)
    for trouble in ("schedule tick failed", "could not fire", "Traceback"):
        assert trouble not in text, text

    fast = [r for r in runs if r["schedule_id"] in fast_ids]
    per_slot = Counter((r["schedule_id"], r["slot"]) for r in fast)
    twice = {key: n for key, n in per_slot.items() if n > 1}
    assert twice == {}, f"{len(twice)} slots fired more than once, e.g. {list(twice.items())[:3]}"
    assert all(slot.microsecond == 0 for _, slot in per_slot)  # whole seconds: cron slots
    # While all workers ran, every schedule kept firing, one slot a firing: the run lasted until
    # each had FAST_SLOTS slots. (The first slot, due since the schedule was made, fired once
    # when the first worker came up. Under load a tick can come more than a second late: that
    # slot is caught up once by the next firing, so a second may be skipped, never doubled;
    # hence slots are counted, not seconds.)
    measured = Counter(s for s, slot in per_slot if started < slot <= stopped)
    assert set(measured) == set(fast_ids)
    assert min(measured.values()) >= FAST_SLOTS, measured
    firers = Counter(r["fired_by"] for r in fast)
    assert len(firers) >= 2, f"one process fired everything: {firers}"

    # Each job a firing created belongs to exactly one firing; the channels have no job besides.
    created = Counter(r["job_id"] for r in fast if r["job_created"])
    assert set(created.values()) == {1}
    quiet_jobs = [j for j in channel_jobs if j["channel_id"] in quiet]
    assert {j["id"] for j in quiet_jobs} == set(created)
    assert all((j["kind"], j["options"]) == ("channel", {}) for j in quiet_jobs)
    finished = [j for j in quiet_jobs if j["status"] == "succeeded"]
    digested = Counter(j["channel_id"] for j in finished if j["digest_id"] is not None)
    assert set(digested.values()) <= {1}  # a channel's first digest read its two messages
    # Once a quiet channel is digested, its slots queue nothing: runs recorded skipped. (A
    # firing that saw the messages uncovered just before the digest committed may queue one
    # more job, which ends "no new messages".)
    nothing_new = [j for j in finished if j["digest_id"] is None]
    assert all(j["result_message"] == "no new messages" for j in nothing_new)
    skipped = [r for r in fast if r["skipped"]]
    assert skipped and all((r["job_id"], r["job_created"]) == (None, False) for r in skipped)
    assert len(quiet_jobs) <= 2 * FAST_SCHEDULES < len(fast)

    # The daily schedule, three days overdue: fired once, now due at tomorrow's 09:00 Berlin.
    slow = [r for r in runs if r["schedule_id"] == daily]
    assert [(r["slot"], r["job_created"]) for r in slow] == [(missed_slot, True)]
    assert daily_row["next_run_at"] == parse_schedule("0 9 * * *", "Europe/Berlin").next_after(
        daily_row["last_run_at"]
    )
    assert daily_row["next_run_at"] > daily_row["last_run_at"] > missed_slot + timedelta(days=2)
    seconds = (stopped - started).total_seconds()
    print(
        f"\n{WORKERS} workers, {FAST_SCHEDULES} every-second schedules: {len(fast)} firings on "
        f"{len(per_slot)} slots, 0 slots twice; in the {seconds:.1f} s all workers ran, "
        f"{min(measured.values())}..{max(measured.values())} slots per schedule; by process "
        f"{sorted(firers.values(), reverse=True)}; {len(created)} jobs queued, "
        f"{len(fast) - len(created) - len(skipped)} firings joined an active job, "
        f"{len(skipped)} skipped (no new messages); {len(nothing_new)} jobs ended 'no new messages'"
    )


async def test_a_worker_killed_while_firing_costs_no_slot_and_fires_none_twice(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    """SIGKILL one of two worker processes while every-second schedules fire: a tick it was in
    the middle of rolls back with its connection (the row locks go with it), so the survivor
    fires every later slot, once (the unique constraint stays off, as above)."""
    quiet = [
        await add_channel(
            db, f"crash-{i}", messages([("ann", f"Deploy {i} waits for the freeze.")])
        )
        for i in range(FAST_SCHEDULES)
    ]
    async with db.acquire() as connection:
        fast_ids = [
            (
                await schedules.create_schedule(
                    connection, channel, "* * * * * *", "UTC", EVERY_SECOND
                )
            ).id
            for channel in quiet
        ]
        await connection.execute(DROP_UNIQUE)
    environment = cli_environment(
        DATABASE_URL=database_url,
        DIGESTD_HOME=str(tmp_path / "home"),
        DIGEST_EXTRACTOR="offline",
        DIGESTD_SCHEDULE_TICK_SECONDS="0.1",
        DIGESTD_POLL_SECONDS="0.2",
        DIGESTD_EXTRACT_PROCESSES="0",
        DIGESTD_DB_POOL_SIZE="3",
        DIGESTD_SCHEDULE_MIN_INTERVAL_SECONDS="1",
    )
    logs = [tmp_path / f"worker{i}.log" for i in range(2)]
    victim, survivor = workers = [start_cli(["worker"], environment, log) for log in logs]
    try:

        async def both_started() -> bool:
            return all("digestd worker: 1 loop(s)" in log.read_text() for log in logs)

        async def victim_fired() -> bool:
            async with db.acquire() as connection:
                return bool(
                    await connection.fetchval(
                        "SELECT count(*) FROM schedule_runs WHERE fired_by LIKE '%:' || $1::text",
                        str(victim.pid),
                    )
                )

        await _wait_for(both_started, 90, logs)
        await _wait_for(victim_fired, 30, logs)
        victim.kill()  # SIGKILL: no shutdown, whatever it was doing
        assert await wait_exit(victim, 30) == -signal.SIGKILL
        async with db.acquire() as connection:
            killed_at = await connection.fetchval("SELECT now()")

        async def survivor_fired() -> bool:
            return await _each_fired(
                db, fast_ids, FAST_SLOTS // 5, killed_at + timedelta(seconds=1)
            )

        await _wait_for(survivor_fired, 120, logs)
        async with db.acquire() as connection:
            stopped = await connection.fetchval(
                "UPDATE schedules SET paused = true WHERE cron = '* * * * * *' RETURNING now()"
            )
        survivor.send_signal(signal.SIGTERM)
        assert await wait_exit(survivor, 60) == 0
        async with db.acquire() as connection:
            runs = await connection.fetch(
                "SELECT schedule_id, slot, fired_by FROM schedule_runs ORDER BY schedule_id, slot"
            )
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        async with db.acquire() as connection:
            await connection.execute("TRUNCATE schedule_runs")
            await connection.execute(ADD_UNIQUE)
    survivor_log = logs[1].read_text()
    for trouble in ("schedule tick failed", "could not fire", "Traceback"):
        assert trouble not in survivor_log, survivor_log
    per_slot = Counter((r["schedule_id"], r["slot"]) for r in runs if r["schedule_id"] in fast_ids)
    assert {key: n for key, n in per_slot.items() if n > 1} == {}
    # After the kill, every schedule keeps firing (at most a slot skipped under load, never one
    # fired twice), and only by the survivor.
    after = [r for r in runs if r["slot"] > killed_at + timedelta(seconds=1)]
    assert {r["fired_by"].rsplit(":", 1)[1] for r in after} == {str(survivor.pid)}
    measured = Counter(r["schedule_id"] for r in after if r["slot"] <= stopped)
    assert set(measured) == set(fast_ids)
    assert min(measured.values()) >= FAST_SLOTS // 5, measured
