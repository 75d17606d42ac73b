"""Cited sentences as Markdown with numbered footnotes.

Each source (one message at the revision read, or any `Footnotable`: a report's document span)
gets one number, by first appearance over the
sections in order; numbering is contiguous from 1 and a source cited again reuses its number.
A footnote reads `[^1]: ann, 2024-05-01 10:02 UTC, "the quoted words" (message 12)`: the quote
is the exact characters the first citation of that source was anchored to.

Every text of a section (its heading, its sentences) and of a footnote (author, quote, ids,
titles) is plain text, escaped here by `runner.core.markdown_text.escape_inline`: the only markers and
footnote definitions a reader's renderer finds are the ones written below, for the sources the
citation audit kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, Protocol, TypeVar

from runner.core.markdown_text import escape_inline


class Footnotable(Protocol):
    """What a footnote needs of a source: the key that makes two citations one source, and the
    footnote's text (after `[^n]: `), already Markdown: its untrusted parts escaped by
    `runner.core.markdown_text.escape_inline`."""

    @property
    def key(self) -> str: ...

    def footnote_text(self) -> str: ...


SourceT = TypeVar("SourceT", bound=Footnotable)


@dataclass(frozen=True)
class Source:
    """A cited message: who wrote it, when, and the exact words cited."""

    message_id: str  # external id
    author: str
    ts: datetime
    quote: str

    @property
    def key(self) -> str:
        return self.message_id

    def footnote_text(self) -> str:
        when = self.ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
        return (
            f'{escape_inline(self.author)}, {when}, "{escape_inline(self.quote)}" '
            f"(message {escape_inline(self.message_id)})"
        )


@dataclass(frozen=True)
class FootnotedSentence(Generic[SourceT]):
    sentence: str
    sources: tuple[SourceT, ...]


@dataclass(frozen=True)
class Section(Generic[SourceT]):
    """A heading (None: no heading) and its sentences, plain text both; `bullets` lists the
    sentences, else they make one paragraph."""

    heading: str | None
    sentences: tuple[FootnotedSentence[SourceT], ...]
    bullets: bool = False


def footnote_numbers(sections: Sequence[Section[SourceT]]) -> dict[str, int]:
    """Source key (a message's id) → footnote number, by first appearance (contiguous from 1)."""
    numbers: dict[str, int] = {}
    for section in sections:
        for sentence in section.sentences:
            for source in sentence.sources:
                numbers.setdefault(source.key, len(numbers) + 1)
    return numbers


def footnote_line(number: int, source: Footnotable) -> str:
    return f"[^{number}]: {source.footnote_text()}"


def _with_markers(sentence: FootnotedSentence[SourceT], numbers: dict[str, int]) -> str:
    cited = dict.fromkeys(numbers[source.key] for source in sentence.sources)
    return escape_inline(sentence.sentence) + "".join(f"[^{number}]" for number in cited)


def marked_blocks(sections: Sequence[Section[SourceT]], numbers: dict[str, int]) -> list[str]:
    """The Markdown blocks of the sections (a `## heading`, then the sentences as a paragraph
    or a list), each sentence followed by the `[^n]` markers of its sources' numbers."""
    blocks: list[str] = []
    for section in sections:
        if not section.sentences:
            continue
        if section.heading:
            blocks.append(f"## {escape_inline(section.heading)}")
        marked = [_with_markers(sentence, numbers) for sentence in section.sentences]
        blocks.append("\n".join(f"- {m}" for m in marked) if section.bullets else " ".join(marked))
    return blocks


def footnoted_markdown(sections: Sequence[Section[SourceT]]) -> str:
    """The sections with `[^n]` markers after each sentence, then one footnote per source."""
    numbers = footnote_numbers(sections)
    blocks = marked_blocks(sections, numbers)
    first: dict[str, SourceT] = {}
    for section in sections:
        for sentence in section.sentences:
            for source in sentence.sources:
                first.setdefault(source.key, source)
    if first:
        blocks.append("\n".join(footnote_line(numbers[m], source) for m, source in first.items()))
    return "\n\n".join(blocks)


def stored_sentences(
    stored: Sequence[dict[str, Any]],
    authors: dict[int, tuple[str, datetime]],
    texts: dict[tuple[int, int], str | None],
) -> tuple[FootnotedSentence[Source], ...]:
    """Sentences as stored on a digest (migration 0004), with each citation's author, time
    and quote looked up: `authors` by messages row, `texts` by (row, revision). A citation
    whose message or revision is gone is left out rather than shown without its words."""
    sentences: list[FootnotedSentence[Source]] = []
    for entry in stored:
        sources: list[Source] = []
        for citation in entry.get("citations", []):
            row, revision = int(citation["message_id"]), int(citation["revision"])
            text = texts.get((row, revision))
            if text is None or row not in authors:
                continue
            author, ts = authors[row]
            quote = text[int(citation["char_start"]) : int(citation["char_end"])]
            sources.append(Source(str(citation["external_id"]), author, ts, quote))
        sentences.append(FootnotedSentence(str(entry["sentence"]), tuple(sources)))
    return tuple(sentences)


def citation_keys(stored: Sequence[dict[str, Any]]) -> list[tuple[int, int]]:
    """The (messages row, revision) pairs the stored sentences cite, each once."""
    keys: dict[tuple[int, int], None] = {}
    for entry in stored:
        for citation in entry.get("citations", []):
            keys.setdefault((int(citation["message_id"]), int(citation["revision"])), None)
    return list(keys)
