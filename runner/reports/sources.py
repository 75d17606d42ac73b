"""The sources a report cites, and the per-report registry that numbers them `S1..Sn`.

A source is either a message at one revision (with the span of it that a sentence rests on), or
a span of a document (its locator). Two citations are one source when their canonical keys are
equal: the same message at the same revision is one source whatever span is quoted (the first
quote is the one shown), and the same document span is one source. Numbers are given by first
appearance: the registry is filled by walking the report in reading order (`registry_of`), so a
source that no sentence cites is never registered and never listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from runner.core.markdown_text import escape_inline
from runner.grounding.footnotes import Source


@dataclass(frozen=True)
class MessageSource:
    """A message at one revision; `text[char_start:char_end]` is the cited span."""

    channel: str
    message_id: str  # external id, as the channel shows it
    revision: int
    author: str
    ts: datetime
    text: str  # the normalized text of that revision
    char_start: int
    char_end: int
    row_id: int | None = None  # the messages row, when the message is stored

    @property
    def key(self) -> str:
        return f"message:{self.channel}:{self.message_id}@{self.revision}"

    @property
    def quote(self) -> str:
        return self.text[self.char_start : self.char_end]

    @property
    def supporting_text(self) -> str:
        """What a sentence citing this source may rest on: the whole message."""
        return self.text

    def footnote_text(self) -> str:
        message = Source(self.message_id, self.author, self.ts, self.quote)
        # `#name` is never a heading: an escaped name never starts with a space.
        return f"#{escape_inline(self.channel)}, {message.footnote_text()}"


@dataclass(frozen=True)
class DocumentSource:
    """A span of a document's canonical text; `locator` is `char:S-E` or `page:N:char:S-E`
    (runner.documents.locators) and slices exactly to `quote`."""

    document_id: str
    title: str
    source_text_hash: str  # the canonical text the locator points into
    locator: str
    quote: str

    @property
    def key(self) -> str:
        return f"document:{self.document_id}:{self.source_text_hash}:{self.locator}"

    @property
    def supporting_text(self) -> str:
        """What a sentence citing this source may rest on: the located span."""
        return self.quote

    def footnote_text(self) -> str:
        return (
            f"{escape_inline(self.title)}, {escape_inline(self.locator)}, "
            f'"{escape_inline(self.quote)}" (document {escape_inline(self.document_id)})'
        )


ReportSource = MessageSource | DocumentSource


def source_id(number: int) -> str:
    return f"S{number}"


def source_number(identifier: str) -> int | None:
    """The n of `Sn` (n ≥ 1), or None for anything else."""
    digits = identifier[1:]
    if identifier[:1] != "S" or not digits.isdigit() or digits[0] == "0":
        return None
    return int(digits)


class SourceRegistry:
    """Unique sources by canonical key, each with a stable id `S1..Sn` in registration order."""

    def __init__(self) -> None:
        self._sources: list[ReportSource] = []
        self._ids: dict[str, str] = {}

    def register(self, source: ReportSource) -> str:
        """The id of `source`: the existing one for its canonical key, else the next `Sn`."""
        existing = self._ids.get(source.key)
        if existing is not None:
            return existing
        self._sources.append(source)
        identifier = source_id(len(self._sources))
        self._ids[source.key] = identifier
        return identifier

    def get(self, identifier: str) -> ReportSource | None:
        number = source_number(identifier)
        if number is None or number > len(self._sources):
            return None
        return self._sources[number - 1]

    def find_by_key(self, key: str) -> str | None:
        return self._ids.get(key)

    def __len__(self) -> int:
        return len(self._sources)

    def __iter__(self) -> Iterator[tuple[str, ReportSource]]:
        """(id, source) in id order."""
        for index, source in enumerate(self._sources, start=1):
            yield source_id(index), source


def registry_of(cited: Iterable[Iterable[ReportSource]]) -> SourceRegistry:
    """The registry of a report: the sources of each sentence, sentences in reading order."""
    registry = SourceRegistry()
    for sources in cited:
        for source in sources:
            registry.register(source)
    return registry
