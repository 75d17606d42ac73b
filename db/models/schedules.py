"""Digest schedules and their firings (db/migrations/0009_schedules.sql)."""

from datetime import datetime

from sqlmodel import SQLModel

from db.models.columns import bigint, timestamptz


class Schedule(SQLModel, table=True):
    """A cron expression in a time zone that digests a channel; `next_run_at` is its next slot
    (UTC), `last_job_id` the job its last firing queued or joined."""

    __tablename__ = "schedules"

    id: int = bigint(primary_key=True)
    channel_id: int = bigint()
    cron: str
    timezone: str
    paused: bool
    next_run_at: datetime = timestamptz()
    last_run_at: datetime | None = timestamptz()
    last_job_id: int | None = bigint()
    created_at: datetime = timestamptz()


class ScheduleRun(SQLModel, table=True):
    """One firing: the slot it was for, when and by which process (host:pid) it fired, and
    the job it queued (`job_created`) or joined (a digest of the channel was already queued or
    running), or `skipped` with no job (the channel had no new message since its last digest)."""

    __tablename__ = "schedule_runs"

    id: int = bigint(primary_key=True)
    schedule_id: int = bigint()
    slot: datetime = timestamptz()
    fired_at: datetime = timestamptz()
    fired_by: str
    job_id: int | None = bigint()
    job_created: bool
    skipped: bool


class DueSchedule(SQLModel):
    """A schedule the tick locked because its slot has come (`due_schedules`), with the
    database's now(): the clock the next slot is computed from."""

    id: int
    channel_id: int
    cron: str
    timezone: str
    next_run_at: datetime
    database_now: datetime
