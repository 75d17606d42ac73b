"""Reports across channels and documents (db/migrations/0005_reports.sql, 0007_report_fidelity.sql)."""

from datetime import datetime
from typing import Any

from sqlmodel import SQLModel

from db.models.columns import bigint, jsonb, timestamptz


class Report(SQLModel, table=True):
    __tablename__ = "reports"

    id: int = bigint(primary_key=True)
    job_id: int | None = bigint()
    question: str
    request: dict[str, Any] = jsonb()
    cache_key: str
    title: str
    sections: list[dict[str, Any]] = jsonb()
    sources: list[dict[str, Any]] = jsonb()
    markdown: str
    audit: dict[str, Any] = jsonb()
    writer: str
    fidelity: dict[str, Any] = jsonb()
    created_at: datetime = timestamptz()


class ReportDigestItem(SQLModel):
    """A claim of a digest read as report evidence (`report_digest_items`): its kind
    (decision, action_item, open_question, topic, knowledge), text and cited message ids."""

    digest_id: int
    created_at: datetime
    kind: str
    position: int
    text: str
    message_ids: list[str]
