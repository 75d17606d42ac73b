"""Hostile imports through the real `digestd import` process: exit codes (0 some accepted, 1 nothing
accepted or stopped part-way, 2 unusable input), one-line errors, special files that must never be
read, a Slack export that must not reach outside its folder, and a database that goes away
mid-import (its connection killed with pg_terminate_backend)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import asyncpg
import pytest

from tests.support.paths import REPO_ROOT, shared_data
from tests.support.processes import environment

TIMEOUT = 90  # a hang (the old FIFO behaviour) fails the test instead of blocking the suite


def digestd(database_url: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", "import", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=environment(database_url, home),
        timeout=TIMEOUT,
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single `digestd: error: ...` line, with no traceback anywhere."""
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("digestd: error: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


async def count_messages(database_url: str, text_like: str = "%") -> int:
    connection = await asyncpg.connect(database_url)
    try:
        return int(
            await connection.fetchval(
                "SELECT count(*) FROM messages WHERE raw_text LIKE $1", text_like
            )
        )
    finally:
        await connection.close()


def _slack_export(root: Path, channels: list[dict[str, str]]) -> None:
    root.mkdir()
    (root / "channels.json").write_text(json.dumps(channels), encoding="utf-8")
    (root / "general").mkdir()
    day = [{"type": "message", "user": "U1", "text": "inside hello", "ts": "1600000000.000100"}]
    (root / "general" / "2020-09-13.json").write_text(json.dumps(day), encoding="utf-8")


def _day(text: str, ts: str) -> str:
    return json.dumps([{"type": "message", "user": "U1", "text": text, "ts": ts}])


async def test_a_fifo_day_file_and_an_escaping_channel_are_skipped_and_the_rest_imported(
    database_url: str, tmp_path: Path
) -> None:
    """Two good channels, a FIFO day file in one of them and a channel named `../outside`: the
    good days are imported, each bad entry is reported with where and why, exit 0. The FIFO is
    never opened (opening it would block the import until TIMEOUT fails the test)."""
    marker = f"good-{uuid.uuid4().hex}"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "2020-09-13.json").write_text(_day(f"outside {marker}", "1600000000.000900"))
    root = tmp_path / "slack"
    _slack_export(
        root,
        [
            {"id": "C1", "name": "general"},
            {"id": "C2", "name": "../outside"},
            {"id": "C3", "name": "random"},
        ],
    )
    (root / "general" / "2020-09-14.json").write_text(
        _day(f"general {marker}", "1600090000.000100")
    )
    os.mkfifo(root / "general" / "2020-09-15.json")
    (root / "random").mkdir()
    (root / "random" / "2020-09-13.json").write_text(_day(f"random {marker}", "1600000000.000300"))

    result = digestd(database_url, tmp_path, str(root))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    output = result.stdout + result.stderr
    assert "3 accepted, 2 rejected" in output, output
    assert "rejected general/2020-09-15.json: is a FIFO (named pipe)" in output, output
    assert "rejected channels.json entry 2: names the channel '../outside'" in output, output
    assert await count_messages(database_url, f"general {marker}") == 1
    assert await count_messages(database_url, f"random {marker}") == 1
    assert await count_messages(database_url, f"outside {marker}") == 0


async def test_a_slack_channel_named_to_escape_the_folder_reads_nothing_outside(
    database_url: str, tmp_path: Path
) -> None:
    marker = f"outside-{uuid.uuid4().hex}"
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = [{"type": "message", "user": "U1", "text": marker, "ts": "1600000000.000200"}]
    (outside / "2020-09-13.json").write_text(json.dumps(secret), encoding="utf-8")

    relative = tmp_path / "relative"
    _slack_export(relative, [{"id": "C1", "name": "general"}, {"id": "C2", "name": "../outside"}])
    absolute = tmp_path / "absolute"
    _slack_export(absolute, [{"id": "C1", "name": str(outside)}])
    linked = tmp_path / "linked"
    _slack_export(linked, [{"id": "C1", "name": "general"}, {"id": "C2", "name": "link"}])
    (linked / "link").symlink_to(outside, target_is_directory=True)
    day_link = tmp_path / "daylink"
    _slack_export(day_link, [{"id": "C1", "name": "general"}])
    (day_link / "general" / "2020-09-15.json").symlink_to(outside / "2020-09-13.json")

    # Each bad entry is skipped with where and why; the good `general` is imported (exit 0),
    # and an export whose only channel is bad imports nothing (exit 1).
    for root, says, status in (
        (relative, "channels.json entry 2: names the channel '../outside'", 0),
        (absolute, f"channels.json entry 1: names the channel {str(outside)!r}", 1),
        (linked, "link: the channel's folder points outside the export folder", 0),
        (day_link, "general/2020-09-15.json: points outside the export folder", 0),
    ):
        result = digestd(database_url, tmp_path, str(root))
        assert result.returncode == status, (root, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr + result.stdout
        assert f"rejected {says}" in result.stdout + result.stderr, (root, result.stdout)
    assert await count_messages(database_url, marker) == 0


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "folder"])
def test_a_special_file_given_directly_says_what_it_is_and_is_never_read(
    database_url: str, tmp_path: Path, special: str
) -> None:
    if special == "fifo":
        path, says = tmp_path / "pipe.jsonl", "is a FIFO (named pipe)"
        os.mkfifo(path)
    elif special == "folder":
        path, says = tmp_path, "is a folder"
    else:
        path, says = Path(special), "is a character device"
    for extra in ([], ["--format", "jsonl"]):
        result = digestd(database_url, tmp_path, str(path), *extra)
        assert result.returncode == 2, result.stderr
        line = one_error_line(result)
        assert f"{path} {says}" in line and "does not exist" not in line, line


def test_a_utf16_file_gets_an_encoding_hint(database_url: str, tmp_path: Path) -> None:
    line = '{"id": "1", "author": "ann", "ts": "2021-01-01T00:00:00Z", "text": "hello"}\n'
    with_bom = tmp_path / "bom.jsonl"
    with_bom.write_bytes(line.encode("utf-16"))
    without_bom = tmp_path / "nobom.jsonl"
    without_bom.write_bytes(line.encode("utf-16-le"))
    for path in (with_bom, without_bom):
        result = digestd(database_url, tmp_path, str(path))
        assert result.returncode == 2, result.stderr
        error = one_error_line(result)
        assert "looks like UTF-16" in error and "iconv -f UTF-16 -t UTF-8" in error, error


def test_an_import_with_nothing_accepted_exits_1_and_says_which_format_it_assumed(
    database_url: str, tmp_path: Path
) -> None:
    # An indented JSON object of no known export: read as JSONL, every one of its 8 lines rejected.
    odd = tmp_path / "export.json"
    odd.write_text(json.dumps({"conversation": [{"who": "ann", "said": "hi"}]}, indent=2), "utf-8")
    result = digestd(database_url, tmp_path, str(odd), "--channel", f"q-{uuid.uuid4().hex}")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "0 accepted, 8 rejected" in result.stdout
    error = one_error_line(result)
    assert "read as jsonl (detected from its content)" in error and "--format" in error, error

    # A forced format says so; a file where something is accepted exits 0.
    lines = tmp_path / "chat.log"
    lines.write_text(
        '{"id": "1", "author": "ann", "ts": "2021-01-01T00:00:00Z", "text": "hi"}\n', "utf-8"
    )
    forced = digestd(database_url, tmp_path, str(lines), "--format", "irc")
    assert forced.returncode == 1, forced.stdout + forced.stderr
    assert "read as irc (as --format said)" in one_error_line(forced)
    channel = f"ok-{uuid.uuid4().hex}"
    good = digestd(database_url, tmp_path, str(lines), "--format", "jsonl", "--channel", channel)
    assert good.returncode == 0 and "1 accepted, 0 rejected" in good.stdout, good.stderr


def test_a_qmsum_meeting_imports_one_message_per_turn(database_url: str, tmp_path: Path) -> None:
    meeting = shared_data("meetings/qmsum/TS3004a.json")
    result = digestd(database_url, tmp_path, str(meeting), "--channel", f"m-{uuid.uuid4().hex}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "435 accepted, 0 rejected" in result.stdout


async def test_a_database_that_goes_away_mid_import_gives_one_line_and_exit_1(
    database_url: str, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex
    path = tmp_path / "big.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for number in range(150_000):
            out.write(
                json.dumps(
                    {
                        "id": f"{tag}-{number}",
                        "author": "ann",
                        "text": f"message {number}",
                        "ts": 1_600_000_000 + number,
                    }
                )
                + "\n"
            )
    process = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "import", str(path), "--channel", f"dies-{tag}"],
        cwd=REPO_ROOT,
        env=environment(database_url, tmp_path),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    killed = 0
    admin = await asyncpg.connect(database_url)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not killed and process.poll() is None and time.monotonic() < deadline:
            # The import's writer: the connection that writes a batch once one is full (a
            # first import COPYs straight into messages, later ones go through staging).
            killed = await admin.fetchval(
                """SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
                   FROM pg_stat_activity
                   WHERE pid <> pg_backend_pid() AND state = 'active'
                     AND (query ILIKE '%message_staging%' OR query ILIKE 'COPY "messages"%')"""
            )
            await asyncio.sleep(0.01)
    finally:
        await admin.close()
    stdout, stderr = process.communicate(timeout=TIMEOUT)
    result = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    assert killed, "the import ended before its connection could be killed"
    assert process.returncode == 1, stderr
    error = one_error_line(result)
    assert error.startswith("digestd: error: database connection lost after "), error
    stored_count = int(error.split("after ")[1].split(" messages")[0].replace(",", ""))
    assert 0 <= stored_count < 150_000
    assert await count_messages(database_url, "message %") >= stored_count


def test_base_date_dates_a_log_of_times_only_and_a_bad_one_is_refused(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "ops.log"
    log.write_text(
        "[09:00] <ana> the deploy failed at the migration step\n[09:01] <kenji> rerun it\n"
    )
    channel = f"ops-{uuid.uuid4().hex[:8]}"
    dated = digestd(
        database_url,
        tmp_path,
        str(log),
        "--channel",
        channel,
        "--base-date",
        "2024-05-06",
        "--json",
    )
    assert dated.returncode == 0, dated.stderr
    report = json.loads(dated.stdout)
    assert report["accepted"] == 2 and report["repaired"] == 0, report
    bad = digestd(database_url, tmp_path, str(log), "--base-date", "06/05/2024")
    assert bad.returncode == 2
    assert "'06/05/2024' is not a date in YYYY-MM-DD" in bad.stderr
