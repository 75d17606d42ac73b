"""The sources a report cites, and the per-report registry that numbers them `S1..Sn`.

A citation is a span of a source: of a message at one revision (`MessageSource`, its characters
`char_start:char_end`) or of a document's canonical text (`DocumentSource`, its locator). A
source is what a reader would call one: a message, a document, or the page at a URL. Two
citations are one source when their canonical keys (`key`) are equal, and one span of it when
their span keys are: a PDF quoted in eight places is one source `S1` with eight spans under it,
not eight sources titled alike. Near-duplicate documents (the same article from two URLs, or as
a PDF and as a web page: `documents.near_duplicate_of`, runner.documents.fingerprint) are one
source too: their `DocumentAttribution.group` is the earliest of them, and the key is the group's,
while each span keeps its own document, text hash and locator, so it is checked against the text
it was quoted from.

Numbers are given by first appearance: the registry is filled by walking the report in reading
order (`registry_of_sections`), so a source that no sentence cites is never registered and never
listed. Each source remembers its spans (first appearance order), how often it was cited, the
headings of the sections that cite it and, once scored, its credibility and relevance
(`SourceScores`, computed by `runner.reports.source_scores`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, TypeAlias
from urllib.parse import urlsplit, urlunsplit

from runner.core.markdown_text import escape_inline
from runner.documents.canonical import CanonicalDocument
from runner.grounding.footnotes import Section, Source

SourceID: TypeAlias = str  # "S1", "S2", ...


@dataclass(frozen=True)
class MessageSource:
    """A cited span of a message at one revision: `text[char_start:char_end]`."""

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
        """The message at this revision, whatever span of it is quoted."""
        return f"message:{self.channel}:{self.message_id}@{self.revision}"

    @property
    def span_key(self) -> str:
        return f"{self.key}#{self.char_start}-{self.char_end}"

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


def canonical_url(url: str) -> str:
    """A URL as a key: scheme and host lower case (they are case-insensitive), the fragment
    dropped (it names a place on the same page); path and query kept as written, since servers
    may tell their case apart."""
    parts = urlsplit(url.strip())
    return urlunsplit(
        (parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query, "")
    )


@dataclass(frozen=True)
class DocumentAttribution:
    """What a cited document says about itself (its author, publisher and date, as stored at
    ingest: one line each, untrusted, escaped where shown), and `group`: the id of the earliest
    stored document it near-duplicates, else its own, so near-duplicates share one key. None
    (a source built without the database, a report stored before groups): the document alone."""

    author: str | None = None
    publisher: str | None = None
    published_at: date | None = None
    group: str | None = None

    @classmethod
    def of(cls, document: CanonicalDocument, document_id: int | str) -> DocumentAttribution:
        """A stored document's attribution (`CanonicalDocument.from_record` of its row)."""
        meta = document.metadata
        group = document.near_duplicate_of or document_id
        return cls(meta.author, meta.publisher, meta.published_at, str(group))

    def byline(self) -> list[str]:
        """Author, publisher and date, those known, in that order (unescaped)."""
        parts = [self.author, self.publisher]
        shown = [part for part in parts if part]
        if self.published_at is not None:
            shown.append(self.published_at.isoformat())
        return shown


NO_ATTRIBUTION = DocumentAttribution()


@dataclass(frozen=True)
class DocumentSource:
    """A span of a document's canonical text; `locator` is `char:S-E` or `page:N:char:S-E`
    (runner.documents.locators) and slices exactly to `quote`. `title` is the document's (its
    own, else its first heading or file name, as stored), `url` the page it was fetched from,
    `attribution` its byline and near-duplicate group."""

    document_id: str
    title: str
    source_text_hash: str  # the canonical text the locator points into
    locator: str
    quote: str
    url: str | None = None
    attribution: DocumentAttribution = NO_ATTRIBUTION

    @property
    def key(self) -> str:
        """The document's near-duplicate group when known; else the document (by its URL when
        it was fetched from one) at this text, whatever span."""
        if self.attribution.group:
            return f"document:{self.attribution.group}"
        if self.url:
            return f"url:{canonical_url(self.url)}@{self.source_text_hash}"
        return f"document:{self.document_id}@{self.source_text_hash}"

    @property
    def span_key(self) -> str:
        """The span: its locator in its own document's text (two near-duplicates under one key
        may have a span at the same offsets)."""
        if self.attribution.group:
            return f"{self.key}#{self.document_id}@{self.source_text_hash}#{self.locator}"
        return f"{self.key}#{self.locator}"

    @property
    def supporting_text(self) -> str:
        """What a sentence citing this source may rest on: the located span."""
        return self.quote

    def named(self) -> str:
        """`Title — author, publisher, date` (those known), escaped: the document as a
        bibliography names it."""
        byline = ", ".join(escape_inline(part) for part in self.attribution.byline())
        return escape_inline(self.title) + (f" — {byline}" if byline else "")

    def footnote_text(self) -> str:
        return (
            f"{self.named()}, {escape_inline(self.locator)}, "
            f'"{escape_inline(self.quote)}" (document {escape_inline(self.document_id)})'
        )


ReportSource = MessageSource | DocumentSource


def source_id(number: int) -> SourceID:
    return f"S{number}"


def source_number(identifier: str) -> int | None:
    """The n of `Sn` (n ≥ 1), or None for anything else."""
    digits = identifier[1:]
    if identifier[:1] != "S" or not digits.isdigit() or digits[0] == "0":
        return None
    return int(digits)


@dataclass(frozen=True)
class SourceScores:
    """A source's credibility and relevance, each in [0, 1], rounded to 3 decimals: what they
    mean and how they are computed is `runner.reports.source_scores`."""

    credibility: float
    relevance: float

    def as_json(self) -> dict[str, float]:
        return {"credibility_score": self.credibility, "relevance_score": self.relevance}

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> SourceScores | None:
        """The scores of a stored source; None for a report stored before sources had them."""
        credibility, relevance = entry.get("credibility_score"), entry.get("relevance_score")
        if credibility is None or relevance is None:
            return None
        return cls(float(credibility), float(relevance))


@dataclass
class RegisteredSource:
    """One source of a report: its id, canonical key, the distinct spans cited (first
    appearance order; `spans[0]` stands for the source where one span must), how many
    citations point at it, and the headings of the sections citing it, in reading order."""

    identifier: SourceID
    key: str
    spans: list[ReportSource]
    citations: int = 0
    sections: list[str] = field(default_factory=list)
    scores: SourceScores | None = None  # None: not scored (a report stored before scores)
    _span_index: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def first(self) -> ReportSource:
        return self.spans[0]

    @property
    def supporting_text(self) -> str:
        """What a sentence marked only `[Sx]` may rest on: the whole message, or every cited
        span of the document (a marker does not say which span)."""
        first = self.first
        if isinstance(first, MessageSource):
            return first.text
        return "\n".join(span.supporting_text for span in self.spans)


class SourceRegistry:
    """Unique sources by canonical key, each with a stable id `S1..Sn` in registration order,
    and the spans of each by span key. Registration and look-ups are dictionary operations, so
    a report of thousands of citations registers in linear time."""

    def __init__(self) -> None:
        self._entries: list[RegisteredSource] = []
        self._by_key: dict[str, RegisteredSource] = {}

    def register(self, citation: ReportSource, section: str | None = None) -> SourceID:
        """The id of the citation's source: the existing one for its canonical key, else the
        next `Sn`. Its span is added under the source if new, and `section` (a heading) is
        recorded as citing it."""
        entry = self._by_key.get(citation.key)
        if entry is None:
            entry = RegisteredSource(source_id(len(self._entries) + 1), citation.key, [])
            self._entries.append(entry)
            self._by_key[citation.key] = entry
        if citation.span_key not in entry._span_index:
            entry._span_index[citation.span_key] = len(entry.spans)
            entry.spans.append(citation)
        entry.citations += 1
        if section and section not in entry.sections:
            entry.sections.append(section)
        return entry.identifier

    def entry(self, identifier: str) -> RegisteredSource | None:
        number = source_number(identifier)
        if number is None or number > len(self._entries):
            return None
        return self._entries[number - 1]

    def get(self, identifier: str) -> ReportSource | None:
        """The source's first cited span (None: no such id)."""
        entry = self.entry(identifier)
        return None if entry is None else entry.first

    def find_by_key(self, key: str) -> SourceID | None:
        entry = self._by_key.get(key)
        return None if entry is None else entry.identifier

    def span_of(self, citation: ReportSource) -> tuple[SourceID, int] | None:
        """(source id, index of the span under it) of a registered citation."""
        entry = self._by_key.get(citation.key)
        if entry is None or citation.span_key not in entry._span_index:
            return None
        return entry.identifier, entry._span_index[citation.span_key]

    def entries(self) -> Iterator[RegisteredSource]:
        """Every source in id order."""
        return iter(self._entries)

    @property
    def citations(self) -> int:
        return sum(entry.citations for entry in self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[tuple[SourceID, ReportSource]]:
        """(id, first span) in id order."""
        for entry in self._entries:
            yield entry.identifier, entry.first


def registry_of(cited: Iterable[Iterable[ReportSource]]) -> SourceRegistry:
    """The registry of cited sentences (the sources of each sentence, in reading order)."""
    registry = SourceRegistry()
    for sources in cited:
        for source in sources:
            registry.register(source)
    return registry


def registry_of_sections(
    sections: Iterable[Section[ReportSource]], scores: Mapping[str, SourceScores] | None = None
) -> SourceRegistry:
    """The registry of a report's sections in reading order: each citation registered with the
    heading of the section citing it, and counted once per sentence and span; `scores` by
    canonical key, given to the sources they name."""
    registry = SourceRegistry()
    for section in sections:
        for sentence in section.sentences:
            for source in dict.fromkeys(sentence.sources):
                registry.register(source, section.heading)
    for entry in registry.entries():
        entry.scores = (scores or {}).get(entry.key)
    return registry
