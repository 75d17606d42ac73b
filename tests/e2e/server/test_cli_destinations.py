"""`digestd destination` and `schedule add --deliver` as an operator runs them (real processes,
the test Postgres): secrets read from stdin, never printed back nor listed; a generated signing
secret shown once; a schedule linked to a destination by name; an unknown name refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import asyncpg

from tests.support.database import add_channel, messages
from tests.support.paths import REPO_ROOT
from tests.support.processes import digestd, environment

URL = "https://hooks.example.test/services/T000/B000/private-token-123"
SECRET = "whsec-cli-0123456789abcdef"


def _with_stdin(
    database_url: str, home: Path, text: str, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        input=text,
        env=environment(database_url, home),
        timeout=120,
    )


async def test_destinations_take_their_secrets_from_stdin_and_never_show_them(
    db: asyncpg.Pool, database_url: str, tmp_path: Path
) -> None:
    await add_channel(db, "ops", messages([("ann", "The deploy runs at nine.")]))
    added = _with_stdin(
        database_url,
        tmp_path,
        f"{URL}\n{SECRET}\n",
        "destination",
        "add",
        "hook",
        "--kind",
        "webhook",
        "--url",
        "-",
        "--secret",
        "-",
        "--event",
        "job.failed",
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout == "destination 1  hook  webhook  hooks.example.test  events job.failed\n"
    generated = digestd(
        database_url,
        tmp_path,
        "destination",
        "add",
        "team",
        "--kind",
        "webhook",
        "--url",
        "http://127.0.0.1:9/x",
        "--json",
    )
    assert generated.returncode == 0, generated.stderr
    shown = json.loads(generated.stdout)["destination"]
    assert len(shown["signingSecret"]) >= 40 and shown["hint"] == "127.0.0.1"

    listed = digestd(database_url, tmp_path, "destination", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    names = [d["name"] for d in json.loads(listed.stdout)["destinations"]]
    assert names == ["team", "hook"]
    for output in (added, listed):
        assert SECRET not in output.stdout + output.stderr
        assert "private-token" not in output.stdout + output.stderr
    assert shown["signingSecret"] not in listed.stdout

    scheduled = digestd(
        database_url,
        tmp_path,
        "schedule",
        "add",
        "ops",
        "0 9 * * 1-5",
        "--deliver",
        "hook",
    )
    assert scheduled.returncode == 0, scheduled.stderr
    async with db.acquire() as connection:
        linked = await connection.fetch(
            "SELECT d.name FROM schedule_destinations s JOIN destinations d "
            "ON d.id = s.destination_id"
        )
    assert [r["name"] for r in linked] == ["hook"]
    unknown = digestd(
        database_url, tmp_path, "schedule", "add", "ops", "0 10 * * *", "--deliver", "nope"
    )
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == "digestd schedule: no destination named 'nope'"

    bad = digestd(database_url, tmp_path, "destination", "add", "x", "--kind", "webhook")
    assert bad.returncode == 2
    assert "needs the secret(s) url" in bad.stderr
    deleted = digestd(database_url, tmp_path, "destination", "delete", "team")
    assert deleted.returncode == 0 and "destination team deleted" in deleted.stderr
