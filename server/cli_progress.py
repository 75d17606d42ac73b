"""The progress `digestd digest --wait` shows while its job runs: a live bar on a terminal (tqdm),
plain lines otherwise (a log, a pipe, CI), both on stderr.

How far along a job is comes from one function, `job_fraction`: the job row's overall fraction,
the API's `progress.fraction`; the display never lets the shown fraction go backwards either."""

from __future__ import annotations

import sys
from typing import TextIO

from db.jobs import TERMINAL
from db.models import DigestJob


def job_fraction(job: DigestJob) -> float:
    """How much of `job` is done, from 0 to 1: the overall fraction the worker records (the one
    `progress.fraction` gives in the API: phases weighted, never going back), full once the job
    has ended."""
    if job.status in TERMINAL:
        return 1.0
    return min(max(job.progress_fraction, 0.0), 1.0)


def progress_line(job: DigestJob, fraction: float) -> str:
    """`[ 42%] job 7: running map 3/7`: the fraction, the status, the phase while it runs (a
    queued or ended job's phase says nothing its status does not) and the chunk count."""
    parts = [f"job {job.id}: {job.status}", job.phase if job.status == "running" else None]
    if job.chunks_total:
        parts.append(f"{job.chunks_done}/{job.chunks_total}")
    return f"[{fraction:4.0%}] " + " ".join(part for part in parts if part)


class JobProgress:
    """Shows a job's progress as its row changes: `update(job)` after each read of the row."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._live = self._stream.isatty() if live is None else live
        self._shown = 0.0
        self._last_line = ""
        self._bar: object | None = None

    @property
    def shown(self) -> float:
        return self._shown

    def update(self, job: DigestJob) -> None:
        self._shown = max(self._shown, job_fraction(job))
        if self._live:
            self._draw(job)
            return
        line = progress_line(job, self._shown)
        if line != self._last_line:  # one line per change, not one per poll
            print(line, file=self._stream, flush=True)
            self._last_line = line

    def _draw(self, job: DigestJob) -> None:
        from tqdm import tqdm

        if self._bar is None:
            self._bar = tqdm(
                total=100,
                file=self._stream,
                bar_format="{desc} {percentage:3.0f}%|{bar}| {elapsed}",
                dynamic_ncols=True,
            )
        bar = self._bar
        assert isinstance(bar, tqdm)
        bar.n = round(self._shown * 100, 1)
        # The status in the description, padded so the bar does not shift as the words change.
        bar.set_description_str(progress_line(job, self._shown).partition("] ")[2].ljust(32), False)
        bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            from tqdm import tqdm

            assert isinstance(self._bar, tqdm)
            self._bar.close()
            self._bar = None
