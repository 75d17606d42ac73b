"""The job queue's table, `digest_jobs` (db/migrations 0001, 0002 and 0013; its lifecycle is
db/jobs.py's)."""

from datetime import datetime
from typing import Any

from sqlmodel import SQLModel

from db.models.columns import bigint, double, jsonb, timestamptz


class DigestJob(SQLModel, table=True):
    """A job of either kind: `kind` and `status` hold `db.jobs.JobKind` / `JobStatus` values
    (plain strings here, as the database returns them; both enums compare equal to them)."""

    __tablename__ = "digest_jobs"

    id: int = bigint(primary_key=True)
    kind: str
    channel_id: int | None = bigint()
    options: dict[str, Any] = jsonb()
    status: str
    phase: str  # a runner.core.progress.JobPhase value; 'queued' from the insert on (0013)
    chunks_done: int
    chunks_total: int
    attempts: int
    max_attempts: int
    error: str | None
    result_message: str | None
    stats: dict[str, Any] = jsonb()
    warnings: list[dict[str, Any]] = jsonb()
    digest_id: int | None = bigint()
    worker_id: str | None
    lease_expires_at: datetime | None = timestamptz()
    run_after: datetime = timestamptz()
    cancel_requested: bool
    created_at: datetime = timestamptz()
    started_at: datetime | None = timestamptz()
    finished_at: datetime | None = timestamptz()
    updated_at: datetime = timestamptz()
    document_id: int | None = bigint()
    document_digest_id: int | None = bigint()
    report_id: int | None = bigint()
    progress_fraction: float = double()
