"""`digestd schedule` as an operator runs it (real processes, the test Postgres): add a weekday
schedule in a zone, list it, pause, resume and delete it by id; bad cron, zone, channel and id
are one line on stderr (with --json, an error object) and exit status 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import asyncpg

from schema.types.ids import SCHEDULE, global_id
from tests.support.database import add_channel, messages
from tests.support.processes import digestd


async def test_add_list_pause_resume_delete(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    await add_channel(db, "ops", messages([("ann", "The deploy runs at nine.")]))
    await add_channel(db, "web", messages([("bob", "The review moved to Tuesday.")]))

    added = digestd(
        database_url, tmp_path, "schedule", "add", "ops", "0 9 * * 1-5", "--tz", "Europe/Berlin"
    )
    assert added.returncode == 0, added.stderr
    assert re.fullmatch(
        r"schedule 1  ops  '0 9 \* \* 1-5' Europe/Berlin  next \d{4}-\d\d-\d\d 09:00:00 CES?T "
        r"\(0[78]:00 UTC\)  never ran\n",
        added.stdout,
    ), added.stdout
    assert "schedule 1 added" in added.stderr
    as_json = digestd(database_url, tmp_path, "schedule", "add", "web", "*/30 8-18 * * *", "--json")
    assert as_json.returncode == 0, as_json.stderr
    web = json.loads(as_json.stdout)["schedule"]
    assert (web["id"], web["cron"], web["timezone"], web["paused"]) == (
        global_id(SCHEDULE, 2),
        "*/30 8-18 * * *",
        "UTC",
        False,
    )

    listed = digestd(database_url, tmp_path, "schedule", "list")
    assert listed.returncode == 0, listed.stderr
    assert [line.split("  ")[:2] for line in listed.stdout.splitlines()] == [
        ["schedule 2", "web"],
        ["schedule 1", "ops"],
    ]
    only_ops = json.loads(
        digestd(database_url, tmp_path, "schedule", "list", "--channel", "ops", "--json").stdout
    )
    assert [s["id"] for s in only_ops["schedules"]] == [global_id(SCHEDULE, 1)]

    paused = digestd(database_url, tmp_path, "schedule", "pause", "1")
    assert paused.returncode == 0 and "  paused  never ran" in paused.stdout, paused.stdout
    resumed = digestd(
        database_url, tmp_path, "schedule", "resume", global_id(SCHEDULE, 1), "--json"
    )
    assert json.loads(resumed.stdout)["resume"]["paused"] is False
    deleted = digestd(database_url, tmp_path, "schedule", "delete", "1")
    assert deleted.returncode == 0 and "schedule 1 deleted" in deleted.stderr
    left = json.loads(digestd(database_url, tmp_path, "schedule", "list", "--json").stdout)
    assert [s["id"] for s in left["schedules"]] == [global_id(SCHEDULE, 2)]


async def test_refusals_are_one_line_and_exit_2(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    await add_channel(db, "ops", messages([("ann", "The deploy runs at nine.")]))
    cases = [
        (("add", "ops", "0 9 * *"), "digestd schedule: cron: 4 fields in '0 9 * *'; expected 5"),
        (
            ("add", "ops", "0 9 * * *", "--tz", "Berlin"),
            "digestd schedule: --tz: 'Berlin' is not an IANA time zone name",
        ),
        (("add", "nope", "0 9 * * *"), "digestd schedule: no channel 'nope'"),
        (("pause", "7"), "digestd schedule: no schedule with id 7"),
        (("delete", "x7"), "digestd schedule: 'x7' is not a schedule id"),
    ]
    for args, says in cases:
        result = digestd(database_url, tmp_path, "schedule", *args)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith(says) and result.stderr.count("\n") == 1, result.stderr
        assert "Traceback" not in result.stderr
    refused = digestd(database_url, tmp_path, "schedule", "add", "ops", "99 * * * *", "--json")
    assert refused.returncode == 2
    assert json.loads(refused.stdout)["error"].startswith("cron: bad minute field")
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM schedules") == 0
