"""People, their handles and read markers, and a person's catch-up read from what the digests
stored (tracked items, messages): no model runs. Shared by the API (schema/resolvers/catchup.py)
and `digestd catchup`.

Who a name is: the person of that name (case-insensitive), else the person one of whose handles
(in every channel) it folds to. Reading a catch-up writes nothing: a name nobody has stored is a
person whose one handle is that name. `mark_read` and `link_handle` create the person on first
use, with their name as their first handle (unless that handle is already someone else's).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg

from db import channels as channel_queries
from db import people as people_queries
from db.models import CatchUpItem, CatchUpMessage, Person, PersonHandle, ReadMarker
from runner.catchup.handles import MAX_HANDLE_CHARS, MIN_HANDLE_CHARS, Handles, handle_key
from runner.catchup.sections import (
    CatchUp,
    ChannelInfo,
    SaidMessage,
    WeighedItem,
    sections,
)
from runner.errors import InputError
from runner.triggers import SubjectNotFound

# Where a catch-up starts in a channel the person never marked read.
DEFAULT_LOOKBACK = timedelta(hours=24)
# The most candidate messages and tracked items one catch-up reads (newest first): enough for
# weeks away from busy channels, bounded so one request costs the same whatever the data.
MAX_CANDIDATE_MESSAGES = 2000
MAX_CANDIDATE_ITEMS = 5000
MAX_NAME_CHARS = 120


class CatchUpRefused(InputError):
    """A person name or handle that cannot be used; `code` is stable to branch on."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def checked_name(name: str) -> str:
    cleaned = " ".join(name.split())
    if not 1 <= len(cleaned) <= MAX_NAME_CHARS:
        raise CatchUpRefused(
            f"a person's name is 1 to {MAX_NAME_CHARS} characters", "invalid_person"
        )
    if len(handle_key(cleaned)) < MIN_HANDLE_CHARS:
        raise CatchUpRefused(
            f"a person's name must fold to a handle of at least {MIN_HANDLE_CHARS} characters",
            "invalid_person",
        )
    return cleaned


def checked_handle(handle: str) -> tuple[str, str]:
    """(the handle as given, trimmed; its key), or the refusal."""
    cleaned = handle.strip()
    key = handle_key(cleaned)
    if not MIN_HANDLE_CHARS <= len(key) <= MAX_HANDLE_CHARS:
        raise CatchUpRefused(
            f"a handle is {MIN_HANDLE_CHARS} to {MAX_HANDLE_CHARS} characters once folded "
            "(case, a leading @, IRC suffixes like _ or |away and a #1234 discriminator "
            "are not counted)",
            "invalid_handle",
        )
    return cleaned, key


async def find_person(connection: asyncpg.Connection, name: str) -> Person | None:
    cleaned = checked_name(name)
    return await people_queries.person_named(
        connection, cleaned
    ) or await people_queries.person_of_handle(connection, handle_key(cleaned))


async def ensure_person(connection: asyncpg.Connection, name: str) -> Person:
    """The person `name` names, created (with their name as a handle) when there is none."""
    found = await find_person(connection, name)
    if found is not None:
        return found
    cleaned = checked_name(name)
    async with connection.transaction():
        person = await people_queries.insert_person(connection, cleaned)
        await people_queries.insert_person_handle(
            connection, person.id, cleaned, handle_key(cleaned), None
        )
    return person


async def handles_of(connection: asyncpg.Connection, person: Person) -> list[PersonHandle]:
    return await people_queries.handles_of_people(connection, [person.id])


async def link_handle(
    connection: asyncpg.Connection, name: str, handle: str, channel_id: int | None = None
) -> tuple[Person, PersonHandle]:
    """Give the person `handle` (in one channel when `channel_id` is given); linking a handle
    the person already has is no change; one that names someone else is refused."""
    given, key = checked_handle(handle)
    if (
        channel_id is not None
        and await channel_queries.channel_by_id(connection, channel_id) is None
    ):
        raise SubjectNotFound("channel", channel_id)
    person = await ensure_person(connection, name)
    row = await people_queries.insert_person_handle(connection, person.id, given, key, channel_id)
    if row is not None:
        return person, row
    existing = await people_queries.handle_of_scope(connection, key, channel_id)
    if existing is None or existing.person_id != person.id:
        raise CatchUpRefused(f"the handle {given!r} already names someone else", "handle_taken")
    return person, existing


async def mark_read(
    connection: asyncpg.Connection, name: str, channel_id: int, until: datetime
) -> tuple[Person, ReadMarker]:
    """The person has read the channel up to `until` (a marker only moves forward)."""
    if await channel_queries.channel_by_id(connection, channel_id) is None:
        raise SubjectNotFound("channel", channel_id)
    person = await ensure_person(connection, name)
    marker = await people_queries.set_read_marker(connection, person.id, channel_id, until)
    return person, marker


def _said(row: CatchUpMessage) -> SaidMessage:
    return SaidMessage(
        row.id,
        row.channel_id,
        row.external_id,
        row.author,
        row.ts,
        row.revision,
        row.normalized_text,
    )


def _weighed(row: CatchUpItem, cited: dict[tuple[int, str], SaidMessage]) -> WeighedItem:
    """The item as the sections weigh it; `cited`: the messages its pointers may name."""
    said = None
    if row.message_row_id is not None and row.message_text is not None:
        said = SaidMessage(
            row.message_row_id,
            row.channel_id,
            row.message_ids[0],
            row.message_author or "",
            row.message_ts or row.said_at,
            row.message_revision or 1,
            row.message_text,
        )
    return WeighedItem(
        row.id,
        row.channel_id,
        row.kind,
        row.status,
        row.text,
        row.owner,
        row.said_at,
        said,
        row.replied_author,
        tuple(
            cited[(row.channel_id, external_id)]
            for external_id in dict.fromkeys(row.message_ids)
            if (row.channel_id, external_id) in cited
        ),
    )


async def catch_up(
    connection: asyncpg.Connection,
    name: str,
    since: datetime | None = None,
    channel_ids: list[int] | None = None,
    now: datetime | None = None,
) -> CatchUp:
    """What waits on the person in each channel (all, or `channel_ids`), since `since` (None:
    each channel's read marker, else `DEFAULT_LOOKBACK` before now)."""
    generated_at = now or datetime.now(UTC)
    default_since = generated_at - DEFAULT_LOOKBACK
    person = await find_person(connection, name)
    if person is None:
        cleaned = checked_name(name)
        keys: list[tuple[str, int | None]] = [(handle_key(cleaned), None)]
        markers: dict[int, datetime] = {}
    else:
        keys = [(h.handle_key, h.channel_id) for h in await handles_of(connection, person)]
        markers = {
            m.channel_id: m.read_until
            for m in await people_queries.read_markers_of(connection, person.id)
        }
    handles = Handles.of(keys)
    person_id = person.id if person else None
    messages = await people_queries.catch_up_mentions(
        connection,
        person_id,
        channel_ids,
        since,
        default_since,
        handles.prefilter(),
        MAX_CANDIDATE_MESSAGES,
    )
    items = await people_queries.catch_up_items(
        connection, person_id, channel_ids, since, default_since, MAX_CANDIDATE_ITEMS
    )
    seen = sorted({row.channel_id for row in messages} | {row.channel_id for row in items})
    channels = {
        row.id: ChannelInfo(
            row.id, row.name, row.server_name, since or markers.get(row.id, default_since)
        )
        for row in await channel_queries.channels_by_ids(connection, seen)
    }
    pairs = sorted(
        {(row.channel_id, external_id) for row in items for external_id in row.message_ids}
    )
    cited = {
        (m.channel_id, m.external_id): _said(m)
        for m in await people_queries.catch_up_cited_messages(connection, pairs)
    }
    weighed = [_weighed(item, cited) for item in items]
    found = sections(handles, channels, [_said(m) for m in messages], weighed)
    return CatchUp(
        person=person.name if person else checked_name(name),
        person_id=person_id,
        handles=tuple(sorted(handles.all_keys())),
        since=since,
        default_since=default_since,
        generated_at=generated_at,
        channels=tuple(found),
        truncated=len(messages) >= MAX_CANDIDATE_MESSAGES or len(items) >= MAX_CANDIDATE_ITEMS,
    )
