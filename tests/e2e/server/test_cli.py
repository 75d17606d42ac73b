"""`digestd import` and `digestd digest --wait` as a user runs them (a real process, the test
Postgres): progress lines, a re-run with nothing new, and a reader that goes away early."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

from tests.support.paths import REPO_ROOT, SAMPLE
from tests.support.processes import digestd, environment


def test_digest_wait_shows_progress_and_a_rerun_says_there_is_nothing_new(
    database_url: str, tmp_path: Path
) -> None:
    channel = f"cli-{uuid.uuid4().hex[:8]}"
    imported = digestd(database_url, tmp_path, "import", str(SAMPLE), "--channel", channel)
    assert imported.returncode == 0, imported.stderr
    assert "70 accepted, 0 rejected" in imported.stdout

    first = digestd(database_url, tmp_path, "digest", channel, "--wait")
    assert first.returncode == 0, first.stderr
    progress = first.stderr.splitlines()
    job = progress[0].removesuffix(" queued")
    assert progress[-1] == f"[100%] {job}: succeeded 1/1", progress
    # The job's row is read while the job runs, not only once it has ended: the first line shows
    # it before the worker took it; the shown fraction never goes backwards.
    assert progress[1] == f"[  0%] {job}: queued", progress
    shown = [int(line[1:4]) for line in progress[1:]]
    assert shown == sorted(shown) and shown[-1] == 100, progress
    assert first.stdout.startswith("# ") and "70 messages" in first.stdout
    # The overview and highlights as Markdown with numbered footnotes, each source once.
    notes = re.findall(
        r"^\[\^(\d+)\]: .+, \d{4}-\d\d-\d\d \d\d:\d\d UTC, \".+\" \(message m\d+\)$",
        first.stdout,
        re.MULTILINE,
    )
    assert notes and [int(n) for n in notes] == list(range(1, len(notes) + 1))
    markers = {int(n) for n in re.findall(r"\[\^(\d+)\](?!:)", first.stdout)}
    assert markers == set(range(1, len(notes) + 1))

    again = digestd(database_url, tmp_path, "digest", channel, "--wait")
    assert again.returncode == 0, again.stderr
    # No phase and no 0/0 chunk counter for a job that had nothing to do; the channel's latest
    # digest is shown instead of nothing.
    assert again.stderr.splitlines()[-1].endswith(": succeeded"), again.stderr
    assert again.stdout.splitlines()[0].endswith("succeeded: no new messages")
    assert "the channel's latest digest" in again.stdout and "70 messages" in again.stdout


def test_a_reader_that_goes_away_ends_the_command_without_a_traceback(
    database_url: str, tmp_path: Path
) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "server.cli",
            "import",
            str(SAMPLE),
            "--channel",
            f"cli-{uuid.uuid4().hex[:8]}",
        ],
        cwd=REPO_ROOT,
        env=environment(database_url, tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # like `digestd import FILE | head -0`
    errors = process.stderr.read()
    assert process.wait(timeout=120) == 1
    assert "Traceback" not in errors and "BrokenPipeError" not in errors, errors
