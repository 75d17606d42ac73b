"""Store a validated digest: the digest, its items, which messages (at which revisions) it read,
the coverage it earned and the job's end commit in one transaction, so a crash leaves either all
of it or none of it.

Coverage: a coverage digest marks covered the messages it read, except those of failed chunks
(`uncovered`), and only where the message is still at the revision it read (one edited while the
digest ran stays uncovered). A catch-up digest covers nothing.

Reading: `load_window` reads the messages a digest reads (a coverage or a catch-up window) as
plain data (runner/core/window.py) and as their database keys.

Only `ValidationResult` output reaches this module, so every pointer written here resolved
verbatim and every cited id exists in the window.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import asyncpg

from db import channels as channel_queries
from db import digests as digest_queries
from db.jobs import JobStatus
from db.models import ChannelColumns, WindowMessageRow
from runner.conversations.store import store_threading, store_threading_and_cover
from runner.conversations.threads import Threading
from runner.core.contract import CitedSentence, Digest
from runner.core.window import MessageKey, StoredWindow, Window, WindowMessage, WindowSpec
from runner.digests.periods import Period
from runner.digests.window import (
    REASON_CHUNK_FAILED,
    REASON_EDITED,
    REASON_WINDOW_CAP,
    left_out_ranges,
)
from runner.entities.digest import DigestEntities
from runner.entities.store import store_entities
from runner.grounding.citations import Anchor
from runner.grounding.pointers import MatchKind
from runner.grounding.validate import ValidationResult
from runner.jobs.base import finish
from runner.jobs.outcomes import Finished
from runner.memory.store import remember_items

__all__ = ["MessageKey", "StoredWindow", "load_window", "store_digest", "window_messages"]


def window_messages(rows: Iterable[WindowMessageRow]) -> tuple[WindowMessage, ...]:
    """Stored message rows as the plain messages an extractor reads."""
    return tuple(
        WindowMessage(
            message_id=row.external_id,
            author=row.author,
            ts=row.ts,
            normalized_text=row.normalized_text,
            reply_to=row.reply_to,
        )
        for row in rows
    )


async def load_window(
    connection: asyncpg.Connection,
    channel: ChannelColumns,
    spec: WindowSpec,
    max_messages: int,
) -> tuple[Window, StoredWindow]:
    """The messages a digest of `channel` reads, as plain data and as their database keys."""
    if spec.catch_up:
        rows = await channel_queries.catch_up_messages(
            connection, channel.id, spec.since, spec.until, max_messages
        )
    elif spec.slice_bounds is not None:
        rows = await channel_queries.slice_messages(
            connection, channel.id, *spec.slice_bounds, max_messages
        )
    else:
        rows = await channel_queries.window_messages(connection, channel.id, max_messages)
    left_out: list[dict[str, Any]] = []
    if rows and len(rows) >= max_messages:
        last = (channel.id, rows[-1].ts, rows[-1].id)
        if spec.catch_up:
            rest = await channel_queries.catch_up_after(connection, *last, spec.until)
        elif spec.slice_bounds is not None:
            # A slice's cap leaves only its own messages (backfilled into its bounds since the
            # split): the later slices are other jobs' windows, not left out.
            rest = await channel_queries.uncovered_in_slice_after(
                connection, *last, spec.slice_bounds[1]
            )
        else:
            rest = await channel_queries.uncovered_after(connection, *last)
        if rest is not None and rest.message_count:
            left_out.append(
                {
                    "first_message_id": rest.first_message_id,
                    "last_message_id": rest.last_message_id,
                    "first_at": rest.first_at.isoformat(),
                    "last_at": rest.last_at.isoformat(),
                    "message_count": rest.message_count,
                    "reason": REASON_WINDOW_CAP,
                }
            )
    messages = window_messages(rows)
    stored = StoredWindow(
        internal_ids={row.external_id: row.id for row in rows},
        first_message_id=rows[0].id if rows else None,
        last_message_id=rows[-1].id if rows else None,
        window_start=rows[0].ts if rows else None,
        window_end=rows[-1].ts if rows else None,
        message_count=len(rows),
        keys=tuple(MessageKey(r.external_id, r.id, r.revision, r.ts) for r in rows),
        catch_up=spec.catch_up,
        since=spec.since,
        until=spec.until,
        left_out=tuple(left_out),
        revisions={row.external_id: row.revision for row in rows},
    )
    return Window(channel_name=channel.name, messages=messages), stored


def _match_name(match: MatchKind | None) -> str:
    return match.value if match else MatchKind.OFFSETS.value


def _flag_json(flags: list[str]) -> list[dict[str, str]]:
    return [{"code": flag.split(":", 1)[0], "message": flag} for flag in flags]


def _sentences_json(
    validation: ValidationResult[Digest], field_name: str, window: StoredWindow
) -> list[dict[str, Any]]:
    """The kept sentences of a prose field with their anchored citations."""
    return cited_json(
        getattr(validation.output, field_name), validation.anchors[field_name], window
    )


def cited_json(
    sentences: Sequence[CitedSentence], anchors: Sequence[Sequence[Anchor]], window: StoredWindow
) -> list[dict[str, Any]]:
    """Validated sentences with their anchored citations, each naming the messages row and the
    revision read, so its quote resolves forever."""
    return [
        {
            "sentence": sentence.sentence,
            "citations": [
                {
                    "message_id": window.internal_ids[anchor.message_id],
                    "external_id": anchor.message_id,
                    "revision": window.revisions.get(anchor.message_id, 1),
                    "char_start": anchor.char_start,
                    "char_end": anchor.char_end,
                }
                for anchor in cited
            ],
        }
        for sentence, cited in zip(sentences, anchors, strict=True)
    ]


def periods_json(periods: Sequence[Period], window: StoredWindow) -> list[dict[str, Any]]:
    return [
        {
            "granularity": period.granularity.value,
            "start": period.start.isoformat(),
            "end": period.end.isoformat(),
            "message_count": period.message_count,
            "conversation_count": period.conversation_count,
            "sentences": cited_json(period.sentences, period.anchors, window),
        }
        for period in periods
    ]


async def _store_items(
    connection: asyncpg.Connection,
    digest_id: int,
    channel_id: int,
    validation: ValidationResult[Digest],
    window: StoredWindow,
) -> None:
    digest = validation.output
    flags = validation.item_flags
    matches = validation.pointer_matches
    await digest_queries.insert_items(
        connection,
        "topic",
        [(digest_id, i, t.title, t.summary, t.message_ids) for i, t in enumerate(digest.topics)],
    )
    await digest_queries.insert_items(
        connection,
        "decision",
        [
            (digest_id, i, d.text, d.message_ids, _flag_json(flags["decisions"][i]))
            for i, d in enumerate(digest.decisions)
        ],
    )
    await digest_queries.insert_items(
        connection,
        "action_item",
        [
            (digest_id, i, a.text, a.owner, a.message_ids, _flag_json(flags["action_items"][i]))
            for i, a in enumerate(digest.action_items)
        ],
    )
    await digest_queries.insert_items(
        connection,
        "open_question",
        [
            (
                digest_id,
                i,
                q.text,
                q.asked_by,
                q.message_ids,
                _flag_json(flags["open_questions"][i]),
            )
            for i, q in enumerate(digest.open_questions)
        ],
    )
    await digest_queries.insert_items(
        connection,
        "link",
        [
            (digest_id, i, link.url, link.description, link.message_ids)
            for i, link in enumerate(digest.links)
        ],
    )
    await digest_queries.insert_items(
        connection,
        "artifact",
        [
            (
                digest_id,
                i,
                a.kind.value,
                a.title,
                a.language,
                window.internal_ids[a.pointer.message_id],
                a.pointer.char_start,
                a.pointer.char_end,
                _match_name(matches["artifacts"][i]),
                window.revisions.get(a.pointer.message_id, 1),
            )
            for i, a in enumerate(digest.artifacts)
        ],
    )
    ids_by_key: dict[str, int] = {}
    for i, item in enumerate(digest.knowledge_items):
        pointer = item.content_pointer
        match = matches["knowledge_items"][i]
        item_id = await digest_queries.insert_knowledge_item(
            connection,
            digest_id,
            channel_id,
            i,
            item.key,
            item.kind.value,
            item.title,
            item.content,
            window.internal_ids[pointer.message_id] if pointer else None,
            pointer.char_start if pointer else None,
            pointer.char_end if pointer else None,
            _match_name(match) if pointer else None,
            pointer.quote if pointer else None,
            item.message_ids,
            item.context_version,
            item.entity_refs,
            _flag_json(flags["knowledge_items"][i]),
            window.revisions.get(pointer.message_id) if pointer else None,
        )
        ids_by_key.setdefault(item.key, item_id)
    for item in digest.knowledge_items:
        supersedes = ids_by_key.get(item.supersedes_id or "")
        conflicts = ids_by_key.get(item.conflicts_with_id or "")
        if supersedes or conflicts:
            await digest_queries.link_knowledge_item(
                connection, ids_by_key[item.key], supersedes, conflicts
            )


async def store_digest(
    connection: asyncpg.Connection,
    *,
    job_id: int,
    worker_id: str,
    channel_id: int,
    extractor: str,
    validation: ValidationResult[Digest],
    window: StoredWindow,
    digest_flags: list[dict[str, Any]],
    rejections: list[dict[str, Any]],
    status: JobStatus,
    stats: dict[str, Any],
    warnings: list[dict[str, Any]],
    uncovered: Collection[str] = (),
    window_key: str | None = None,
    threads: tuple[Threading, dict[str, int]] | None = None,
    entities: DigestEntities | None = None,
    read: Mapping[str, WindowMessage],
    periods: Sequence[Period] = (),
) -> int:
    """Write everything in one transaction; returns the digest id. Raises LostLease (and
    writes nothing) when another worker holds the job now.

    `uncovered`: external ids of messages in failed chunks (read, not covered);
    `threads`: the window's threading and its messages' internal ids, written in the same
    transaction (runner/conversations/store.py); `entities`: the digest's entities and topic
    profiles (runner/entities/digest.py), written after the conversations; `periods`: a
    multi-day window told period by period (runner/digests/periods.py); `read`: the window's
    messages as read, by external id (the channel memory's evidence: their texts are not read
    from the database again)."""
    digest = validation.output
    async with connection.transaction():
        await channel_queries.lock_channel(connection, channel_id)
        digest_id = await digest_queries.insert_digest(
            connection,
            channel_id,
            job_id,
            digest.title,
            digest.overview_text(),
            [sentence.sentence for sentence in digest.highlights],
            digest.coverage.model_dump(),
            digest.search_keywords,
            digest.signal_quality.level.value,
            digest.signal_quality.reason,
            window.first_message_id,
            window.last_message_id,
            window.window_start,
            window.window_end,
            window.message_count,
            digest.notable_message_ids,
            extractor,
            digest_flags,
            rejections,
            window.catch_up,
            window.since,
            window.until,
            window_key,
        )
        await _store_items(connection, digest_id, channel_id, validation, window)
        await digest_queries.set_digest_prose(
            connection,
            digest_id,
            _sentences_json(validation, "overview", window),
            _sentences_json(validation, "highlights", window),
            validation.audit.as_json(),
        )
        if periods:
            await digest_queries.set_digest_periods(
                connection, digest_id, periods_json(periods, window)
            )
        await digest_queries.insert_digest_messages(
            connection,
            digest_id,
            [key.message_id for key in window.keys],
            [key.revision for key in window.keys],
        )
        failed = set(uncovered)
        reasons: dict[int, str] = {
            key.message_id: REASON_CHUNK_FAILED for key in window.keys if key.external_id in failed
        }
        # A catch-up digest covers nothing; any other covers what it read, but for failed chunks.
        wanted = (
            None
            if window.catch_up
            else [key for key in window.keys if key.message_id not in reasons]
        )
        missed: list[int] | None = None
        if threads is not None:
            threading, internal_ids = threads
            if wanted is None:
                await store_threading(connection, channel_id, threading, internal_ids)
            else:
                # Threading and coverage write the same rows: one statement rewrites each once.
                missed = await store_threading_and_cover(
                    connection, channel_id, threading, internal_ids, digest_id, wanted
                )
        if entities is not None:
            await store_entities(
                connection,
                digest_id=digest_id,
                channel_id=channel_id,
                analysis=entities,
                window=window,
            )
        await remember_items(connection, digest_id, channel_id, digest, window, read)
        left_out = await _cover(connection, digest_id, channel_id, window, reasons, wanted, missed)
        if left_out:
            await digest_queries.set_digest_left_out(connection, digest_id, left_out)
        end = Finished(status, digest_id=digest_id, warnings=warnings)
        await finish(connection, job_id, worker_id, end, stats)
    return digest_id


async def _cover(
    connection: asyncpg.Connection,
    digest_id: int,
    channel_id: int,
    window: StoredWindow,
    reasons: dict[int, str],
    wanted: list[MessageKey] | None,
    missed: list[int] | None,
) -> list[dict[str, Any]]:
    """Mark the `wanted` messages covered (unless the threading already did: `missed` is then
    those it could not cover); returns every left-out range of the digest (read but not
    covered, and what the window cap left), for `Digest.messageCoverage`. `reasons` holds the
    failed chunks' messages and gains the edited ones."""
    if wanted is not None:
        if missed is None:
            rows = await channel_queries.cover_messages(
                connection,
                channel_id,
                digest_id,
                [key.message_id for key in wanted],
                [key.revision for key in wanted],
            )
            missed = [row.id for row in rows]
        for message_id in missed:
            reasons[message_id] = REASON_EDITED
    return left_out_ranges(window.keys, reasons) + list(window.left_out)
