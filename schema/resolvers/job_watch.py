"""What the jobProgress subscription needs from the process: the states of a job as they change.
The server's hub (server/job_events.py, one LISTEN connection per process) provides them, reading
each job once per change for all its watches; the schema only names the shape, so it never opens
connections of its own."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from db.models import DigestJob


class WatchClosed(Exception):
    """The process stopped following jobs (it is shutting down): the watch has no more states."""


class JobWatch(Protocol):
    async def next_state(self) -> DigestJob | None:
        """The job's row: on the first call as it is now, then, on each later call, once it
        changed since the row last returned (states in between may be skipped: the newest
        wins). None when there is no such job (any more). Raises the read's error when reading
        the job failed, and WatchClosed when the process stops following jobs."""


class JobEvents(Protocol):
    def watch(self, job_id: int) -> AbstractAsyncContextManager[JobWatch]:
        """Watch one job for as long as the context lasts; it watches from its start, so no
        change after the first state it returns goes unseen."""
