"""A stored digest or report, or a person's catch-up, read from Postgres as an export (runner.exports.model), and as the
file a user downloads: Markdown, HTML or JSON, with its media type and a safe file name.

A digest's footnotes are numbered as its Markdown numbers them (runner.grounding.footnotes: one
per cited message, by first appearance over the overview, the highlights and the periods), each
quoting the characters of the revision the sentence was anchored to. A report's are its sources
`S1..Sn` as stored with it, each with every span it cites. Markdown is what `digestd show`
prints: the digest's rendered by runner.exports.markdown, the report's stored with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import Any, Literal

import asyncpg

from db import channels as channel_queries
from db import digests as digest_queries
from db import reports as report_queries
from db.models import (
    Digest,
)
from db.models import Report as ReportRow
from runner.catchup import store as catchups
from runner.core.global_ids import global_id
from runner.digests.periods import stored_heading
from runner.exports import html, json_export
from runner.exports.catchup import catch_up_document, catch_up_markdown
from runner.exports.digest_items import read_digest_items
from runner.exports.markdown import render_digest
from runner.exports.model import (
    ExportDocument,
    ExportKind,
    Footnote,
    Item,
    ItemGroup,
    Quote,
    Section,
    Sentence,
)
from runner.grounding import footnotes as grounding
from runner.reports.sources import source_number

ExportFormat = Literal["md", "html", "json"]
FORMATS: tuple[ExportFormat, ...] = ("md", "html", "json")
MEDIA_TYPES: dict[ExportFormat, str] = {
    "md": "text/markdown; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "json": "application/json",
}
# Digest and report ids are global ids; the CLI and the API both name them this way.
DIGEST_TYPE, REPORT_TYPE = "Digest", "Report"


@dataclass(frozen=True)
class ExportedFile:
    content: str
    media_type: str
    filename: str  # ASCII letters, digits, `-` and `.` only: safe in any header or file system


def export_filename(kind: ExportKind, row_id: int, fmt: ExportFormat) -> str:
    return f"digestd-{kind}-{row_id}.{fmt}"


def catch_up_filename(person: str, fmt: ExportFormat) -> str:
    """`digestd-catchup-<name>.<fmt>`: the person's name cut to ASCII letters, digits and `-`."""
    slug = re.sub(r"[^a-z0-9]+", "-", person.lower()).strip("-")[:40].strip("-")
    return f"digestd-catchup-{slug or 'person'}.{fmt}"


async def export_catch_up(
    connection: asyncpg.Connection,
    person: str,
    since: datetime | None,
    fmt: ExportFormat,
    now: datetime | None = None,
) -> ExportedFile:
    """A person's catch-up (runner/catchup/store.py; `since` None: each channel's read marker)
    as a file in `fmt`. Reads only; a name that cannot be a person raises CatchUpRefused."""
    catch_up = await catchups.catch_up(connection, person, since, now=now)
    if fmt == "md":
        content = catch_up_markdown(catch_up)
    else:
        document = catch_up_document(catch_up)
        content = html.render(document) if fmt == "html" else json_export.render(document)
    return ExportedFile(content, MEDIA_TYPES[fmt], catch_up_filename(catch_up.person, fmt))


async def export_file(
    connection: asyncpg.Connection, kind: ExportKind, row_id: int, fmt: ExportFormat
) -> ExportedFile | None:
    """The digest or report `row_id` as a file in `fmt`, or None when there is no such row."""
    if fmt == "md":
        markdown = await _markdown(connection, kind, row_id)
        if markdown is None:
            return None
        content = markdown if markdown.endswith("\n") else markdown + "\n"
    else:
        document = await (
            load_digest(connection, row_id) if kind == "digest" else load_report(connection, row_id)
        )
        if document is None:
            return None
        content = html.render(document) if fmt == "html" else json_export.render(document)
    return ExportedFile(content, MEDIA_TYPES[fmt], export_filename(kind, row_id, fmt))


async def _markdown(connection: asyncpg.Connection, kind: ExportKind, row_id: int) -> str | None:
    if kind == "report":
        rows = await report_queries.reports_by_ids(connection, [row_id])
        return rows[0].markdown if rows else None
    if await digest_queries.digest_by_id(connection, row_id) is None:
        return None
    return await render_digest(connection, row_id)


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat() if moment else None


async def _digest_sections(
    connection: asyncpg.Connection, digest: Digest
) -> tuple[tuple[Section, ...], tuple[Footnote, ...]]:
    """Overview, highlights and periods with footnote numbers, and the footnotes; a digest
    stored before citations shows its overview and highlights without any."""
    if not digest.overview_sentences and not digest.highlight_sentences:
        legacy = [Section("overview", None, (Sentence(digest.overview),))]
        if digest.highlights:
            told = tuple(Sentence(str(h)) for h in digest.highlights)
            legacy.append(Section("highlights", "Highlights", told, bullets=True))
        return tuple(legacy), ()
    periods = [list(period.get("sentences", [])) for period in digest.periods]
    stored = [
        *digest.overview_sentences,
        *digest.highlight_sentences,
        *(sentence for period in periods for sentence in period),
    ]
    keys = grounding.citation_keys(stored)
    rows = await channel_queries.revision_texts(
        connection, [k[0] for k in keys], [k[1] for k in keys]
    )
    texts = {(r.message_id, r.revision): r.normalized_text for r in rows}
    messages = await channel_queries.messages_by_ids(connection, [k[0] for k in keys])
    authors = {m.id: (m.author, m.ts) for m in messages}
    cited = [
        ("overview", grounding.Section(None, grounding.stored_sentences(
            digest.overview_sentences, authors, texts))),
        ("highlights", grounding.Section("Highlights", grounding.stored_sentences(
            digest.highlight_sentences, authors, texts), bullets=True)),
        *(
            ("period", grounding.Section(
                stored_heading(period), grounding.stored_sentences(told, authors, texts), True))
            for period, told in zip(digest.periods, periods, strict=True)
        ),
    ]  # fmt: skip
    numbers = grounding.footnote_numbers([section for _, section in cited])
    first: dict[str, grounding.Source] = {}
    sections: list[Section] = []
    for key, section in cited:
        sentences = []
        for sentence in section.sentences:
            for source in sentence.sources:
                first.setdefault(source.key, source)
            marks = tuple(dict.fromkeys(numbers[source.key] for source in sentence.sources))
            sentences.append(Sentence(sentence.sentence, marks))
        if sentences:
            sections.append(Section(key, section.heading, tuple(sentences), section.bullets))
    notes = tuple(
        Footnote(
            numbers[key],
            "message",
            (Quote(source.quote),),
            author=source.author,
            at=source.ts,
            message_id=source.message_id,
        )
        for key, source in first.items()
    )
    return tuple(sections), notes


def _flags(flags: list[Any]) -> tuple[str, ...]:
    return tuple(str(flag.get("code", "")) for flag in flags if isinstance(flag, dict))


async def _digest_items(connection: asyncpg.Connection, digest_id: int) -> tuple[ItemGroup, ...]:
    items = await read_digest_items(connection, digest_id)
    sliced = items.pointer_text

    def where(external_id: str | None, start: int | None, end: int | None) -> str:
        return f"msg {external_id} {start}:{end}"

    groups = [
        ItemGroup(
            "topics",
            "Topics",
            tuple(Item(r.title, message_ids=tuple(r.message_ids), detail=r.summary or None)
                  for r in items.topics),
        ),
        ItemGroup(
            "decisions",
            "Decisions",
            tuple(Item(r.text, message_ids=tuple(r.message_ids), flags=_flags(r.flags))
                  for r in items.decisions),
        ),
        ItemGroup(
            "actionItems",
            "Action items",
            tuple(Item(r.text, owner=r.owner, message_ids=tuple(r.message_ids),
                       flags=_flags(r.flags)) for r in items.action_items),
        ),
        ItemGroup(
            "openQuestions",
            "Open questions",
            tuple(Item(r.text, owner=r.asked_by, message_ids=tuple(r.message_ids),
                       flags=_flags(r.flags)) for r in items.open_questions),
        ),
        ItemGroup(
            "links",
            "Links",
            tuple(Item(r.url, url=r.url, detail=r.description, message_ids=tuple(r.message_ids))
                  for r in items.links),
        ),
        ItemGroup(
            "artifacts",
            "Artifacts",
            tuple(Item(r.title, label=r.kind, detail=sliced(r),
                       where=where(r.message_external_id, r.char_start, r.char_end))
                  for r in items.artifacts),
        ),
        ItemGroup(
            "knowledgeItems",
            "Knowledge",
            tuple(
                Item(
                    r.title + (f" [{r.context_version}]" if r.context_version else ""),
                    label=r.kind,
                    detail=sliced(r) if r.message_id else (r.content or ""),
                    where=where(r.message_external_id, r.char_start, r.char_end)
                    if r.message_id else None,
                    message_ids=() if r.message_id else tuple(r.message_ids),
                    flags=_flags(r.flags),
                )
                for r in items.knowledge_items
            ),
        ),
    ]  # fmt: skip
    return tuple(groups)  # empty ones too: JSON lists every kind


async def load_digest(connection: asyncpg.Connection, digest_id: int) -> ExportDocument | None:
    digest = await digest_queries.digest_by_id(connection, digest_id)
    if digest is None:
        return None
    channels = await channel_queries.channels_by_ids(connection, [digest.channel_id])
    channel = channels[0].name if channels else f"channel {digest.channel_id}"
    sections, footnotes = await _digest_sections(connection, digest)
    window = (
        f"{_iso(digest.window_start)} – {_iso(digest.window_end)}"
        if digest.window_start and digest.window_end
        else "empty"
    )
    facts = (
        ("Channel", channel),
        ("Messages", str(digest.message_count)),
        ("Window", window),
        ("Signal", f"{digest.signal_quality} ({digest.signal_reason})"),
        ("Extractor", digest.extractor),
    )
    notes = (
        (f"{len(digest.rejections)} extracted items failed validation and were dropped",)
        if digest.rejections
        else ()
    )
    footnotes = tuple(replace(note, channel=channel) for note in footnotes)
    return ExportDocument(
        kind="digest",
        id=global_id(DIGEST_TYPE, digest.id),
        row_id=digest.id,
        title=digest.title,
        created_at=digest.created_at,
        facts=facts,
        sections=sections,
        item_groups=await _digest_items(connection, digest.id),
        footnotes=footnotes,
        notes=notes,
        fields={
            "channel": channel,
            "messageCount": digest.message_count,
            "windowStart": _iso(digest.window_start),
            "windowEnd": _iso(digest.window_end),
            "signalQuality": digest.signal_quality,
            "signalReason": digest.signal_reason,
            "extractor": digest.extractor,
            "rejectedItems": len(digest.rejections),
        },
    )


def _report_footnote(source: dict[str, Any]) -> Footnote | None:
    number = source_number(str(source.get("id", "")))
    if number is None:
        return None
    spans = source.get("spans") or [source]
    if source.get("kind") == "document":
        quotes = tuple(Quote(str(s["quote"]), str(s.get("locator", ""))) for s in spans)
        published = source.get("published_at")
        return Footnote(
            number,
            "document",
            quotes,
            author=source.get("author"),
            title=str(source.get("title", "")),
            url=source.get("url"),
            publisher=source.get("publisher"),
            published=date.fromisoformat(published).isoformat() if published else None,
            document_ids=tuple(
                dict.fromkeys(str(s.get("document_id", source["document_id"])) for s in spans)
            ),
        )
    return Footnote(
        number,
        "message",
        tuple(Quote(str(s["quote"])) for s in spans),
        author=str(source.get("author", "")),
        at=datetime.fromisoformat(str(source["ts"])),
        channel=str(source.get("channel", "")),
        message_id=str(source.get("external_id", "")),
    )


def report_document(row: ReportRow) -> ExportDocument:
    """A stored report as an export: its sections as stored, `[^n]` being source `Sn`."""
    sections = []
    for section in row.sections:
        sentences = tuple(
            Sentence(
                str(sentence["text"]),
                tuple(
                    n
                    for n in dict.fromkeys(
                        source_number(str(i)) for i in sentence.get("source_ids", [])
                    )
                    if n is not None
                ),
            )
            for sentence in section.get("sentences", [])
        )
        heading = section.get("heading")
        sections.append(
            Section(str(heading or ""), heading, sentences, bool(section.get("bullets")))
        )
    footnotes = tuple(
        note for note in (_report_footnote(source) for source in row.sources) if note is not None
    )
    return ExportDocument(
        kind="report",
        id=global_id(REPORT_TYPE, row.id),
        row_id=row.id,
        title=row.title,
        created_at=row.created_at,
        facts=(("Question", row.question), ("Writer", row.writer)),
        sections=tuple(sections),
        footnotes=footnotes,
        fields={"question": row.question, "writer": row.writer},
    )


async def load_report(connection: asyncpg.Connection, report_id: int) -> ExportDocument | None:
    rows = await report_queries.reports_by_ids(connection, [report_id])
    return report_document(rows[0]) if rows else None
