"""An exported digest, report or catch-up as plain data: the one shape the HTML and JSON renderers read.

A document is a title, a few facts (messages, window, extractor), sections of cited sentences
(each sentence names the numbers of the footnotes it cites), lists of items (decisions, action
items, ...), and footnotes: one per source, numbered from 1 by first citation, each with the
exact words cited and who said them, when and where. Every string here is untrusted plain text
(chat messages, names, model output): renderers escape all of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

ExportKind = Literal["digest", "report", "catchup"]
FORMAT_VERSIONS: dict[ExportKind, str] = {
    "digest": "digestd.digest/1",
    "report": "digestd.report/1",
    "catchup": "digestd.catchup/1",
}


@dataclass(frozen=True)
class Quote:
    """Exact words a footnote cites; `where` locates them in a document (`page:2:char:10-60`),
    None for a message (the footnote names the message)."""

    text: str
    where: str | None = None


@dataclass(frozen=True)
class Footnote:
    """A cited source: a message (author, time, channel, external id) or a document (title,
    url, author, publisher, ids), and the words of it that were cited."""

    number: int
    kind: Literal["message", "document"]
    quotes: tuple[Quote, ...]
    author: str | None = None
    at: datetime | None = None
    channel: str | None = None
    message_id: str | None = None  # a message's external id
    title: str | None = None
    url: str | None = None
    publisher: str | None = None
    published: str | None = None  # ISO date
    document_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Sentence:
    text: str
    footnotes: tuple[int, ...] = ()  # the numbers of the footnotes it cites, each once


@dataclass(frozen=True)
class Section:
    """Sentences under a heading (None: no heading); `key` names the section in JSON
    (`overview`, `highlights`, `period`, or a report section's heading)."""

    key: str
    heading: str | None
    sentences: tuple[Sentence, ...]
    bullets: bool = False
    level: int = 2  # the heading's level: 2, or 3 under a level-2 section (a catch-up's kinds)


@dataclass(frozen=True)
class Item:
    """A listed item: its text, and what the digest stored with it."""

    text: str
    owner: str | None = None  # an action item's owner, an open question's asker
    message_ids: tuple[str, ...] = ()  # external ids of the messages it rests on
    flags: tuple[str, ...] = ()  # flag codes
    detail: str | None = None  # a link's description, an artifact's or knowledge item's words
    where: str | None = None  # `msg 12 10:40`: the span an artifact or knowledge item slices
    url: str | None = None  # a link's URL (shown as a link only when http or https)
    label: str | None = None  # an artifact's or knowledge item's kind


@dataclass(frozen=True)
class ItemGroup:
    key: str  # `decisions`, `actionItems`, ... (JSON)
    heading: str
    items: tuple[Item, ...]


@dataclass(frozen=True)
class ExportDocument:
    kind: ExportKind
    id: str  # the global id the API shows
    row_id: int  # the stored row; a catch-up is not stored: its person's id, 0 when unknown
    title: str
    created_at: datetime
    facts: tuple[tuple[str, str], ...] = ()  # (label, value) shown under the title
    sections: tuple[Section, ...] = ()
    item_groups: tuple[ItemGroup, ...] = ()
    footnotes: tuple[Footnote, ...] = ()
    notes: tuple[str, ...] = ()  # e.g. how many extracted items failed validation
    fields: dict[str, object] = field(default_factory=dict)  # kind-specific JSON fields

    @property
    def format(self) -> str:
        return FORMAT_VERSIONS[self.kind]
