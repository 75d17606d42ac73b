"""The progress `digest --wait` shows: the job row's overall fraction (the API's), never going
backwards on screen, as plain lines off a terminal and as a tqdm bar on one."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest

from db.models import DigestJob
from server.cli_progress import JobProgress, job_fraction, progress_line


def job(
    status: str, phase: str = "queued", done: int = 0, total: int = 0, fraction: float = 0.0
) -> DigestJob:
    """A channel job's row as the database returns it, at this point of its run."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return DigestJob.model_validate(
        {
            **dict.fromkeys(("channel_id", "error", "result_message", "digest_id"), None),
            **dict.fromkeys(("worker_id", "lease_expires_at", "started_at", "finished_at"), None),
            **dict.fromkeys(("document_id", "document_digest_id", "report_id"), None),
            "id": 7,
            "kind": "channel",
            "options": {},
            "status": status,
            "phase": phase,
            "chunks_done": done,
            "chunks_total": total,
            "progress_fraction": fraction,
            "attempts": 1,
            "max_attempts": 3,
            "stats": {},
            "warnings": [],
            "run_after": now,
            "cancel_requested": False,
            "created_at": now,
            "updated_at": now,
        }
    )


def test_the_fraction_is_the_jobs_own_and_full_once_it_ended() -> None:
    assert job_fraction(job("queued")) == 0.0
    assert job_fraction(job("running", "map", 2, 4, 0.47)) == pytest.approx(0.47)
    assert job_fraction(job("running", "store", 4, 4, 1.2)) == 1.0  # never past the end
    assert job_fraction(job("failed", "map", 1, 4, 0.3)) == 1.0  # ended: nothing more to wait for


def test_the_shown_fraction_never_goes_backwards() -> None:
    stream = io.StringIO()
    progress = JobProgress(stream, live=False)
    progress.update(job("running", "map", 3, 4, 0.65))
    shown = progress.shown
    progress.update(job("running", "map", 1, 4, 0.3))  # a row read before a later one
    assert progress.shown == shown
    lines = stream.getvalue().splitlines()
    assert lines == [
        progress_line(job("running", "map", 3, 4), shown),
        progress_line(job("running", "map", 1, 4), shown),
    ]
    assert lines[0].startswith("[ 65%] job 7: running map 3/4")
    assert lines[1] == "[ 65%] job 7: running map 1/4"


def test_plain_lines_change_only_when_the_job_does() -> None:
    stream = io.StringIO()
    progress = JobProgress(stream, live=False)
    for _ in range(3):
        progress.update(job("queued"))
    progress.update(job("succeeded", "store", 1, 1))
    assert stream.getvalue() == "[  0%] job 7: queued\n[100%] job 7: succeeded 1/1\n"


def test_on_a_terminal_a_bar_shows_the_fraction_and_the_phase() -> None:
    stream = io.StringIO()
    progress = JobProgress(stream, live=True)
    progress.update(job("running", "map", 2, 4, 0.45))
    progress.update(job("succeeded", "store", 4, 4, 1.0))
    progress.close()
    drawn = stream.getvalue()
    assert "job 7: running map 2/4" in drawn and " 45%|" in drawn
    assert "job 7: succeeded 4/4" in drawn and "100%|" in drawn
    assert "\r" in drawn  # redrawn in place, not a line per update
