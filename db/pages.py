"""Keyset pagination: every list is ordered by (sort column, id) and paged with an opaque cursor
holding the last row's key, so page 10,000 costs what page 1 does and rows inserted while a
client pages are never shown twice nor make it skip a row that existed when it started.

Each list's SQL and its allowed filters are declared here, in one place; filters are fixed
fragments with bind parameters, never text from the request.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import asyncpg
from sqlmodel import SQLModel

from db.models import (
    ChannelItem,
    ChannelWithServer,
    ConversationWithState,
    DeliveryListing,
    Destination,
    Digest,
    DigestJob,
    DocumentListing,
    Entity,
    KnowledgeItemWithMessage,
    MessageFields,
    Person,
    Report,
    Schedule,
    TopicProfile,
    as_rows,
)

MAX_PAGE_SIZE = 100


class InvalidCursor(ValueError):
    """A cursor that this server did not produce (or from another list)."""


class InvalidSearch(ValueError):
    """A full-text search the database would refuse or choke on."""


MAX_CURSOR_CHARS = 200
MAX_ROW_ID = 2**63 - 1  # bigint
MAX_SEARCH_WORDS = 32
_OPERATOR_RUNS = re.compile(r"-{2,}")


def search_text(query: str) -> str:
    """A websearch query Postgres can run: runs of `-` (each one a nested NOT: 400 of them
    overflow the tsquery stack) become one, and at most MAX_SEARCH_WORDS words are allowed."""
    cleaned = _OPERATOR_RUNS.sub("-", query)
    words = cleaned.split()
    if len(words) > MAX_SEARCH_WORDS:
        raise InvalidSearch(f"{len(words)} words or operators, at most {MAX_SEARCH_WORDS}")
    return " ".join(words)


@dataclass(frozen=True)
class KeysetCursor:
    """A list's name and the last row's key: a time (most lists) or a count (entities, by
    mention count), and the row id."""

    list_name: str
    sort_value: datetime | int
    row_id: int

    def encode(self) -> str:
        sort_value = self.sort_value
        payload = json.dumps(
            [
                self.list_name,
                sort_value.isoformat() if isinstance(sort_value, datetime) else sort_value,
                self.row_id,
            ]
        )
        return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str, list_name: str, *, by_count: bool = False) -> KeysetCursor:
        """The cursor in `token`, checked as strictly as an id: a row id outside bigint, a time
        that is not an aware instant, or a sort key of the other kind than the list's (a count
        where it sorts by time, `by_count` False, or a time where it sorts by count) would
        otherwise fail inside the query."""
        try:
            if len(token) > MAX_CURSOR_CHARS or not token.isascii():
                raise ValueError("not a cursor")
            padded = token + "=" * (-len(token) % 4)
            name, sort_value, row_id = json.loads(base64.urlsafe_b64decode(padded))
            if type(row_id) is not int or not 0 <= row_id <= MAX_ROW_ID:
                raise ValueError("row id out of range")
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError("not a cursor")
        except (ValueError, TypeError, OverflowError, RecursionError, binascii.Error):
            raise InvalidCursor("the cursor is not one this API produced") from None
        if name != list_name:
            raise InvalidCursor(f"the cursor belongs to {name}, not {list_name}")
        try:
            if by_count:
                if type(sort_value) is not int or not -MAX_ROW_ID <= sort_value <= MAX_ROW_ID:
                    raise ValueError("not a count")
                return cls(name, sort_value, row_id)
            if not isinstance(sort_value, str):
                raise ValueError("not a time")
            when = datetime.fromisoformat(sort_value)
            if when.tzinfo is None:
                raise ValueError("naive time")
            when.astimezone(UTC)
            return cls(name, when, row_id)
        except (ValueError, TypeError, OverflowError):
            raise InvalidCursor("the cursor is not one this API produced") from None


ListRow = TypeVar("ListRow", bound=SQLModel)


@dataclass(frozen=True)
class ListSpec(Generic[ListRow]):
    name: str
    model: type[
        ListRow
    ]  # the row of `select` (tests/integration/db/test_models.py checks its columns)
    select: str  # SELECT ... FROM ... (no WHERE)
    sort_column: str
    id_column: str
    descending: bool
    filters: dict[str, str]  # filter name → SQL fragment with a single `{}` for its parameter
    sort_by_count: bool = False  # the sort column is a count (bigint), not a time


DIGESTS = ListSpec(
    name="digests",
    model=Digest,
    select="SELECT d.* FROM digests d JOIN channels c ON c.id = d.channel_id",
    sort_column="d.created_at",
    id_column="d.id",
    descending=True,
    filters={
        "server_id": "c.server_id = {}",
        "channel_id": "d.channel_id = {}",
        "since": "d.created_at >= {}",
        "until": "d.created_at < {}",
        "signal_quality": "d.signal_quality = {}",
    },
)

JOBS = ListSpec(
    name="digestJobs",
    model=DigestJob,
    select="SELECT j.* FROM digest_jobs j",
    sort_column="j.created_at",
    id_column="j.id",
    descending=True,
    filters={
        "channel_id": "j.channel_id = {}",
        "document_id": "j.document_id = {}",
        "status": "j.status = {}",
        # A coverage job's slices (runner/digests/split.py); the key is in the job's options.
        "batch_id": "j.options #>> '{{slice,batch}}' = {}::bigint::text",
    },
)

KNOWLEDGE_ITEMS = ListSpec(
    name="knowledgeItems",
    model=KnowledgeItemWithMessage,
    select=(
        "SELECT k.*, m.external_id AS message_external_id FROM knowledge_items k "
        "LEFT JOIN messages m ON m.id = k.message_id"
    ),
    sort_column="k.created_at",
    id_column="k.id",
    descending=True,
    filters={
        "channel_id": "k.channel_id = {}",
        "digest_id": "k.digest_id = {}",
        "kind": "k.kind = {}",
        "query": "k.search @@ websearch_to_tsquery('simple', {})",
        # Whether the channel item it is a mention of is still current (0008); an item no
        # digest stored as a channel item (before 0008) counts as current.
        "current": (
            "NOT EXISTS (SELECT 1 FROM channel_item_mentions cm JOIN channel_items ci "
            "ON ci.id = cm.item_id WHERE cm.digest_id = k.digest_id AND cm.row_id = k.id "
            "AND ci.kind = 'knowledge' AND ci.status <> 'current') = {}"
        ),
    },
)

# Messages without their texts (a page of 100 could carry 40 MB of them): `Message.text` and
# `normalizedText` load the one a query asks for by id.
MESSAGE_COLUMNS = (
    "m.id, m.channel_id, m.external_id, m.author, m.ts, m.reply_to, m.attachments, m.created_at, "
    "m.revision, m.revised_at, m.covered_revision, m.covered_by_digest_id, m.parent_id, "
    "m.conversation_id"
)

MESSAGES = ListSpec(
    name="messages",
    model=MessageFields,
    select=f"SELECT {MESSAGE_COLUMNS} FROM messages m",
    sort_column="m.ts",
    id_column="m.id",
    descending=False,
    filters={
        "channel_id": "m.channel_id = {}",
        "since": "m.ts >= {}",
        "until": "m.ts < {}",
        "conversation_id": "m.conversation_id = {}",
    },
)

CONVERSATIONS = ListSpec(
    name="conversations",
    model=ConversationWithState,
    select="SELECT c.* FROM conversation_states c",
    sort_column="c.first_ts",
    id_column="c.id",
    descending=True,
    filters={
        "channel_id": "c.channel_id = {}",
        "state": "c.state = {}",
        "since": "c.last_ts >= {}",
        "until": "c.first_ts < {}",
    },
)

# Channel items (0008), the newest first (a digest creates its items in the order they were
# said: runner/memory/store.py). `current` (knowledge items) is matched on knowledge_items rows
# instead.
CHANNEL_ITEMS = ListSpec(
    name="channelItems",
    model=ChannelItem,
    select="SELECT i.* FROM channel_items i",
    sort_column="i.created_at",
    id_column="i.id",
    descending=True,
    filters={
        "channel_id": "i.channel_id = {}",
        "kind": "i.kind = {}",
        "status": "i.status = {}",
        "owner": "lower(i.owner) = lower({})",
        # Still waiting on someone: a question nobody answered, an action item not done. A
        # decision in force or a current knowledge item is settled, never open.
        "open": "(i.kind IN ('question', 'action_item') AND i.status = 'open') = {}",
        # Still in the state it was first said in (runner/memory/items.py's OPEN_STATUS).
        "current": "(i.status IN ('open', 'in_force', 'current')) = {}",
    },
)

CHANNELS = ListSpec(
    name="channels",
    model=ChannelWithServer,
    select=(
        "SELECT c.*, s.name AS server_name FROM channels c "
        "LEFT JOIN servers s ON s.id = c.server_id"
    ),
    sort_column="c.created_at",
    id_column="c.id",
    descending=True,
    filters={
        "server_id": "c.server_id = {}",
        # Part of the name, any case, as plain text: `strpos`, so `%` and `_` match themselves.
        "name_contains": "strpos(lower(c.name), lower({})) > 0",
    },
)

# Documents without their canonical text (a page of 100 PDFs would otherwise carry megabytes);
# `Document.canonicalText` loads it by id when asked for.
DOCUMENT_COLUMNS = (
    "d.id, d.source_text_hash, d.content_type, d.title, d.source_url, d.page_spans, d.warnings, "
    "d.created_at, d.author, d.publisher, d.published_at, d.near_duplicate_of, "
    "length(d.canonical_text) AS chars"
)

DOCUMENTS = ListSpec(
    name="documents",
    model=DocumentListing,
    select=f"SELECT {DOCUMENT_COLUMNS} FROM documents d",
    sort_column="d.created_at",
    id_column="d.id",
    descending=True,
    filters={
        "content_type": "d.content_type = {}",
        "since": "d.created_at >= {}",
        "until": "d.created_at < {}",
    },
)

# Reports whole (a report is a few kilobytes of sections, sources and Markdown). The channel and
# document filters test the stored request's id arrays (a JSON array contains a number).
REPORTS = ListSpec(
    name="reports",
    model=Report,
    select="SELECT r.* FROM reports r",
    sort_column="r.created_at",
    id_column="r.id",
    descending=True,
    filters={
        "channel_id": "r.request -> 'channel_ids' @> to_jsonb({}::bigint)",
        "document_id": "r.request -> 'document_ids' @> to_jsonb({}::bigint)",
    },
)


SCHEDULES = ListSpec(
    name="schedules",
    model=Schedule,
    select="SELECT s.* FROM schedules s",
    sort_column="s.created_at",
    id_column="s.id",
    descending=True,
    filters={"channel_id": "s.channel_id = {}", "paused": "s.paused = {}"},
)


# Entities by mention count (ties: newest id first). `key_contains` takes a canonical key
# (runner.entities.mentions.canonical_key of the client's text), so any spelling finds the entity.
# Destinations, newest first: the destination row alone (its secrets are another table).
DESTINATIONS = ListSpec(
    name="destinations",
    model=Destination,
    select="SELECT t.* FROM destinations t",
    sort_column="t.created_at",
    id_column="t.id",
    descending=True,
    filters={"kind": "t.kind = {}"},
)

# Deliveries, newest first, without the content they send.
DELIVERIES = ListSpec(
    name="deliveries",
    model=DeliveryListing,
    select="SELECT d.id, d.delivery_id, d.destination_id, d.event, d.digest_id, d.job_id, "
    "d.state, d.attempts, d.next_attempt_at, d.lease_expires_at, d.leased_by, d.last_error, "
    "d.created_at, d.delivered_at FROM deliveries d",
    sort_column="d.created_at",
    id_column="d.id",
    descending=True,
    filters={"state": "d.state = {}", "destination_id": "d.destination_id = {}"},
)


ENTITIES = ListSpec(
    name="entities",
    model=Entity,
    select="SELECT e.* FROM entities e",
    sort_column="e.mention_count",
    id_column="e.id",
    descending=True,
    sort_by_count=True,
    filters={
        "channel_id": "e.channel_id = {}",
        "key_contains": "strpos(e.key, {}) > 0",
    },
)

# A channel's recurring topics, the most recently seen first.
TOPIC_PROFILES = ListSpec(
    name="topics",
    model=TopicProfile,
    select="SELECT t.* FROM topic_profiles t",
    sort_column="t.last_seen",
    id_column="t.id",
    descending=True,
    filters={"channel_id": "t.channel_id = {}"},
)


@dataclass(frozen=True)
class Page(Generic[ListRow]):
    """Rows in list order, and whether rows of the list lie beyond each end of them."""

    rows: list[ListRow]
    has_next_page: bool
    spec: ListSpec[ListRow]
    has_previous_page: bool = False

    def cursor_of(self, row: ListRow) -> str:
        sort_field = self.spec.sort_column.split(".", 1)[1]
        id_field = self.spec.id_column.split(".", 1)[1]
        return KeysetCursor(
            self.spec.name, getattr(row, sort_field), getattr(row, id_field)
        ).encode()


def _where(
    spec: ListSpec[Any], filters: dict[str, Any], bounds: list[tuple[str, KeysetCursor]]
) -> tuple[str, list[Any]]:
    """The WHERE clause of the list's filters and keyset bounds (operator, cursor): every value
    a bind parameter."""
    clauses: list[str] = []
    params: list[Any] = []
    for name, value in filters.items():
        if value is None:
            continue
        params.append(value)
        clauses.append(spec.filters[name].format(f"${len(params)}"))
    for operator, cursor in bounds:
        params.extend([cursor.sort_value, cursor.row_id])
        clauses.append(
            f"({spec.sort_column}, {spec.id_column}) {operator} (${len(params) - 1}, ${len(params)})"
        )
    return (f" WHERE {' AND '.join(clauses)}" if clauses else ""), params


def _operators(spec: ListSpec[Any]) -> tuple[str, str]:
    """(comes after, comes before) in list order, as row comparisons on the keyset."""
    return ("<", ">") if spec.descending else (">", "<")


def build_page_query(
    spec: ListSpec[Any],
    filters: dict[str, Any],
    after: KeysetCursor | None,
    limit: int,
    *,
    before: KeysetCursor | None = None,
    from_end: bool = False,
) -> tuple[str, list[Any]]:
    """The SQL and parameters of one page between `after` and `before`; `limit` rows plus one
    to learn if more follow, taken from the start of that range, or from its end (`from_end`,
    for `last`: the scan runs in reverse order and the caller reverses the rows back)."""
    later, earlier = _operators(spec)
    bounds = [(later, after)] if after else []
    bounds += [(earlier, before)] if before else []
    where, params = _where(spec, filters, bounds)
    ascending = spec.descending == from_end
    direction = "ASC" if ascending else "DESC"
    params.append(limit + 1)
    sql = (
        f"{spec.select}{where} ORDER BY {spec.sort_column} {direction}, "
        f"{spec.id_column} {direction} LIMIT ${len(params)}"
    )
    return sql, params


def build_beyond_query(
    spec: ListSpec[Any], filters: dict[str, Any], cursor: KeysetCursor, *, before: bool
) -> tuple[str, list[Any]]:
    """Whether the list has a row at or before (`before`) / at or after the cursor's key: one
    index probe, for the far side of a page (hasPreviousPage after `after`, hasNextPage
    before `before`)."""
    later, earlier = _operators(spec)
    operator = (earlier if before else later) + "="
    where, params = _where(spec, filters, [(operator, cursor)])
    return f"SELECT EXISTS (SELECT 1 FROM ({spec.select}{where} LIMIT 1) beyond)", params


def build_count_query(spec: ListSpec[Any], filters: dict[str, Any]) -> tuple[str, list[Any]]:
    """How many rows the whole filtered list holds: the page query's FROM and WHERE, counted."""
    where, params = _where(spec, filters, [])
    return f"SELECT count(*) FROM ({spec.select}{where}) listed", params


def build_estimate_query(spec: ListSpec[Any], filters: dict[str, Any]) -> tuple[str, list[Any]]:
    """The planner's plan of the whole filtered list: its row estimate, without running it."""
    where, params = _where(spec, filters, [])
    return f"EXPLAIN (FORMAT JSON) {spec.select}{where}", params


def _checked(spec: ListSpec[Any], filters: dict[str, Any]) -> dict[str, Any]:
    unknown = set(filters) - set(spec.filters)
    if unknown:
        raise ValueError(f"unknown filters for {spec.name}: {sorted(unknown)}")
    if filters.get("query") is not None:
        return {**filters, "query": search_text(filters["query"])}
    return filters


class InvalidPageSize(ValueError):
    """first/last out of range, or both given."""


async def fetch_page(
    connection: asyncpg.Connection,
    spec: ListSpec[ListRow],
    filters: dict[str, Any],
    *,
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
) -> Page[ListRow]:
    """One page of `spec`: the `first` rows after `after`, or the `last` rows before `before`
    (both cursors bound the range either way). Raises InvalidPageSize for a bad `first`/`last`,
    InvalidCursor for a bad cursor and InvalidSearch for a `query` filter Postgres cannot run."""
    if first is not None and last is not None:
        raise InvalidPageSize("give first or last, not both")
    size = last if last is not None else first
    if size is None or not 1 <= size <= MAX_PAGE_SIZE:
        name = "last" if last is not None else "first"
        raise InvalidPageSize(f"{name} must be between 1 and {MAX_PAGE_SIZE}, got {size}")
    filters = _checked(spec, filters)
    by_count = spec.sort_by_count
    after_key = KeysetCursor.decode(after, spec.name, by_count=by_count) if after else None
    before_key = KeysetCursor.decode(before, spec.name, by_count=by_count) if before else None
    from_end = last is not None
    sql, params = build_page_query(
        spec, filters, after_key, size, before=before_key, from_end=from_end
    )
    records = await connection.fetch(sql, *params)
    more = len(records) > size
    rows = as_rows(spec.model, records[:size])
    # The side the page was read from is known by the extra row; past a cursor given on either
    # side, by one index probe (no cursor there: the range starts or ends with the list).
    beyond_after = after_key is not None and await _has_rows_beyond(
        connection, spec, filters, after_key, before=True
    )
    beyond_before = before_key is not None and await _has_rows_beyond(
        connection, spec, filters, before_key, before=False
    )
    if from_end:
        rows.reverse()
    return Page(
        rows=rows,
        has_next_page=(more and not from_end) or beyond_before,
        has_previous_page=(more and from_end) or beyond_after,
        spec=spec,
    )


async def _has_rows_beyond(
    connection: asyncpg.Connection,
    spec: ListSpec[Any],
    filters: dict[str, Any],
    cursor: KeysetCursor,
    *,
    before: bool,
) -> bool:
    sql, params = build_beyond_query(spec, filters, cursor, before=before)
    return bool(await connection.fetchval(sql, *params))


async def count_rows(
    connection: asyncpg.Connection, spec: ListSpec[Any], filters: dict[str, Any]
) -> int:
    """How many rows the filtered list holds, exactly: one COUNT with the page's filters (run
    only when a client asks for `totalCount`)."""
    sql, params = build_count_query(spec, _checked(spec, filters))
    return int(await connection.fetchval(sql, *params))


async def estimate_rows(
    connection: asyncpg.Connection, spec: ListSpec[Any], filters: dict[str, Any]
) -> int:
    """The planner's estimate of how many rows the filtered list holds (from pg statistics: a
    plan, never a count), so a client can show "about N" without a scan per request."""
    sql, params = build_estimate_query(spec, _checked(spec, filters))
    plan = await connection.fetchval(sql, *params)
    parsed = json.loads(plan) if isinstance(plan, str) else plan
    return int(parsed[0]["Plan"]["Plan Rows"])


# People, newest first; `name_contains` takes a lower-cased fragment of a name.
PEOPLE = ListSpec(
    name="people",
    model=Person,
    select="SELECT p.* FROM people p",
    sort_column="p.created_at",
    id_column="p.id",
    descending=True,
    filters={"name_contains": "strpos(lower(p.name), {}) > 0"},
)
