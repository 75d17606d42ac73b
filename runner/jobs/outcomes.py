"""How a job run ends, as types: the worker maps each to exactly one record on the job
(`Worker._record`), so a job kind never decides statuses, retries or backoff itself.

    Finished   → finish_job with its status (a digest served, "no new messages", skipped)
    Stored     → nothing more: the run committed the job's end with its digest
    FailNow    → finish_job FAILED with "code: reason" (retrying would fail the same way)
    RetryLater → fail_job: queued again after a capped backoff while attempts remain
    Cancelled  → finish_job CANCELLED when cancelled by request; nothing when the lease was lost
                 or the worker is shutting down (it releases the job)
    LostLease  → nothing: another worker holds the job

`Cancelled`, `LostLease`, `RetryLater` and `FailNow` are exceptions too, so a checkpoint deep in
the pipeline or a store's lease check can end the run where it stands. `Cancelled` lives in
runner/core/cancel.py: the pipeline raises it and imports no database, not even for a type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runner.core.cancel import Cancelled

if TYPE_CHECKING:  # an annotation only: the pipeline imports this module, and no database
    from db.jobs import JobStatus


class LostLease(Exception):
    """Another worker holds the job now; this worker's result must not be stored."""


class RetryLater(Exception):
    """The attempt failed in a way a later one may not (an endpoint down, a timeout)."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason

    @property
    def error(self) -> str:
        return f"{self.code}: {self.reason}"


class FailNow(Exception):
    """The job cannot succeed (a broken document, a subject gone): FAILED at once, no retry."""

    def __init__(self, code: str | None, reason: str) -> None:
        super().__init__(reason if code is None else f"{code}: {reason}")
        self.code = code
        self.reason = reason

    @property
    def error(self) -> str:
        return self.reason if self.code is None else f"{self.code}: {self.reason}"


@dataclass(frozen=True)
class Finished:
    """The job ends with what it produced (a digest id, or nothing and a message why)."""

    status: JobStatus
    message: str | None = None
    digest_id: int | None = None
    document_digest_id: int | None = None
    report_id: int | None = None
    warnings: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


@dataclass(frozen=True)
class Stored:
    """The run stored its digest and the job's end in one transaction; nothing is left to do.
    `status` is the end it committed (for the metrics)."""

    status: JobStatus


Outcome = Finished | Stored | Cancelled | LostLease | RetryLater | FailNow
