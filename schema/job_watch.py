"""What the jobProgress subscription needs from the process: a way to wait until a job may have
changed. The server's hub (server/job_events.py, one LISTEN connection per process) provides it;
the schema only names the shape, so it never opens connections of its own."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol


class JobWatch(Protocol):
    async def changed(self) -> None:
        """Return once the job may have changed since the last return: an event for it arrived
        (several arriving meanwhile count once), the events were interrupted, or, while none
        can arrive, the fallback interval passed. The caller then re-reads the job."""


class JobEvents(Protocol):
    def watch(self, job_id: int) -> AbstractAsyncContextManager[JobWatch]:
        """Watch one job for as long as the context lasts; it watches from its start, so a job
        read inside it misses no later change."""
