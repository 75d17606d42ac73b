"""The options of each job kind, typed. A job row keeps its options as a JSON object; each kind
parses it once where its run begins (or builds it where the job is triggered) and reads
attributes after, instead of looking keys up in a dict all along the run.

The stored JSON is the contract with rows already in the database and with the SQL that keys
active jobs on it (db/queries.sql: a channel's `since`/`until`, a document's `query_hash`, a
report's `request_hash`), so `stored()` writes exactly what was always written: a key that is
unset is absent, never null, and a time is its canonical UTC ISO string
(`runner.digests.window.window_options`). Keys a model does not know are ignored when reading.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer

from runner.documents.cache_key import query_hash


def _stored_time(value: object) -> object:
    """A stored time (an ISO string; "" as none) as a datetime, the way it was always read."""
    if value == "":
        return None
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _time_text(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


# An optional time, parsed with datetime.fromisoformat and written back with isoformat, not
# pydantic's own format (which writes "Z" for UTC): the string is part of an active job's key.
OptionalTime = Annotated[
    datetime | None, BeforeValidator(_stored_time), PlainSerializer(_time_text)
]


class JobOptions(BaseModel):
    """The options of one job kind: `parse` a row's JSON, `stored()` the JSON to write."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    @classmethod
    def parse(cls, stored: Mapping[str, Any] | None) -> Self:
        return cls.model_validate(dict(stored or {}))

    def stored(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class CoverageSlice(JobOptions):
    """One slice of a channel's backlog (runner/digests/split.py): the coverage job that split
    it (`batch`), its place among the slices (1-based `index` of `count`) and its contiguous
    bounds, the first and last uncovered message in (ts, id) order, both included, with how
    many uncovered messages lay between them when it was cut. Written once by the split: the
    whole object is part of the slice job's active slot (migration 0018)."""

    batch: int
    index: int
    count: int
    first_at: OptionalTime
    first_id: int
    last_at: OptionalTime
    last_id: int
    messages: int

    @property
    def first(self) -> tuple[datetime, int]:
        assert self.first_at is not None
        return (self.first_at, self.first_id)

    @property
    def last(self) -> tuple[datetime, int]:
        assert self.last_at is not None
        return (self.last_at, self.last_id)


class ChannelDigestOptions(JobOptions):
    """A channel digest: a chunk budget (None: the worker's), and a catch-up window
    [since, until) when either bound is given (none: the channel's uncovered messages), or one
    slice of a backlog larger than the window cap (`slice`)."""

    chunk_tokens: int | None = None
    since: OptionalTime = None
    until: OptionalTime = None
    slice: CoverageSlice | None = None

    @property
    def catch_up(self) -> bool:
        return self.since is not None or self.until is not None


class DocumentDigestOptions(JobOptions):
    """A document digest: the normalized query and its hash (the key of the active job and of
    the digest cache), and, for a document of a batch, when the batch's time budget ends
    (`batch_deadline`, UTC: past it the model gives way to the offline summary). The row is
    written by `db.documents.trigger_document_digest`."""

    query: str = ""
    query_hash: str = ""
    batch_deadline: OptionalTime = None


class ReportOptions(JobOptions):
    """A report: the normalized question, its sources, an optional window over message times,
    and `request_hash`, the hash of everything else (the key of the active report job)."""

    question: str = ""
    channel_ids: tuple[int, ...] = ()
    document_ids: tuple[int, ...] = ()
    since: OptionalTime = None
    until: OptionalTime = None
    request_hash: str = ""

    @classmethod
    def for_request(
        cls,
        question: str,
        channel_ids: list[int],
        document_ids: list[int],
        window: Mapping[str, str],
    ) -> ReportOptions:
        """The options of a report request, with its hash; `window` is the canonical
        since/until of `runner.digests.window.window_options`."""
        request = cls.parse(
            {
                "question": question,
                "channel_ids": channel_ids,
                "document_ids": document_ids,
                **window,
            }
        )
        return request.model_copy(
            update={"request_hash": query_hash(json.dumps(request.request(), sort_keys=True))}
        )

    def request(self) -> dict[str, Any]:
        """The request as stored, without its hash (kept on the report row)."""
        return {k: v for k, v in sorted(self.stored().items()) if k != "request_hash"}


__all__ = [
    "ChannelDigestOptions",
    "CoverageSlice",
    "DocumentDigestOptions",
    "JobOptions",
    "OptionalTime",
    "ReportOptions",
]
