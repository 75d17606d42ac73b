"""Text primitives of the offline extractor: a chunk part cut into fenced blocks, inline code,
URLs and prose sentences, every span carrying offsets into the message's full normalized text.

Everything downstream (patterns, artifacts, topics) works on these spans, so a pointer built
from one is `normalized_text[start:end]` by construction and a claim built from one is a quote.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache

from runner.core.chunks import ChunkPart
from runner.core.window import WindowMessage
from runner.grounding.claim_support import content_tokens

# A fence's info string is a language tag only when it is one short word on the fence line;
# exports often glue the code to the fence (```./komodo-cli ...), which is content, not a tag.
_LANGUAGE_TAG = re.compile(r"[A-Za-z][A-Za-z0-9_+#.-]{0,19}")
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_URL = re.compile(r"(?:https?|ftp)://[^\s<>\"'`]+", re.IGNORECASE)
_URL_TRAILING = ".,;:!?*_'\"\u00bb\u203a>"
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
_SPACES = re.compile(r"\s+")
_WORD_CHAR = re.compile(r"\w")


# A case-insensitive search tries both cases of every letter at every position; the same
# pattern without the flag, searched in the lower-cased text, finds the same matches about three
# times faster. That is exact when ASCII letters are the only cased characters of the text (and
# the pattern's letters are all lower case): other characters have case equivalents of their own
# (the Kelvin sign is a "k", the long s an "s", "İ" lowers to two characters).
_ASCII = {code: None for code in range(128)}


@lru_cache(maxsize=4096)
def _lowered_exactly(text: str) -> str | None:
    """`text` lower-cased when a case-sensitive search of it is exactly a case-insensitive search
    of `text` (see above), else None. Cached: a message meets a dozen such patterns in a row."""
    if not text.isascii():
        rest = text.translate(_ASCII)
        if rest.lower() != rest or rest.upper() != rest:
            return None
    return text.lower()


class FoldedPattern:
    """A case-insensitive pattern whose only use is whether it occurs in a text: searched in the
    lower-cased text without the flag where that is exact (`_lowered_exactly`), else as is."""

    __slots__ = ("pattern", "_lower")

    def __init__(self, source: str, flags: int = re.IGNORECASE) -> None:
        self.pattern = re.compile(source, flags)
        plain = source.removeprefix("(?i)")
        letters = re.sub(r"\\.|\(\?P<\w+>", "", plain)
        if not flags & re.IGNORECASE and not source.startswith("(?i)"):
            raise ValueError("a FoldedPattern is case-insensitive")
        if letters != letters.lower() or re.search(r"\(\?[a-zA-Z]", letters):
            raise ValueError(f"upper-case letters or inline flags in {source!r}")
        self._lower = re.compile(plain, flags & ~re.IGNORECASE)

    def search(self, text: str) -> bool:
        """Whether the pattern occurs in `text` (as `bool(pattern.search(text))`)."""
        lowered = _lowered_exactly(text)
        if lowered is None:
            return self.pattern.search(text) is not None
        return self._lower.search(lowered) is not None


def _urls(text: str) -> Iterator[re.Match[str]]:
    """`_URL`'s matches; a text without "://" has none, and the case-insensitive scheme
    alternatives are slow to try at every character of every message."""
    return _URL.finditer(text) if "://" in text else iter(())


@dataclass(frozen=True)
class Span:
    """`message.normalized_text[start:end]`; offsets are absolute in the message."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Block:
    """A fenced code block: `content` is the text between the fences (what a pointer cites)."""

    content: Span
    language: str | None
    closed: bool


@dataclass(frozen=True)
class PartView:
    """One chunk part analysed once: what is code, what is a link, what is prose."""

    message: WindowMessage
    start: int
    end: int
    blocks: tuple[Block, ...]
    inline_code: tuple[Span, ...]
    urls: tuple[Span, ...]
    sentences: tuple[Span, ...]
    prose_lines: tuple[Span, ...]

    @property
    def message_id(self) -> str:
        return self.message.message_id

    @property
    def author(self) -> str:
        return self.message.author

    # Cached: the map asks each part for its prose and its words several times (rules,
    # topics, centrality), and a cached string also keeps its hash for the caches keyed on it.
    @cached_property
    def prose(self) -> str:
        """The prose sentences joined: the text claims and topics are made of."""
        return " ".join(sentence.text for sentence in self.sentences)

    @cached_property
    def prose_words(self) -> list[str]:
        """`content_words(prose)`; callers read it, never change it."""
        return content_words(self.prose)


def _fences(text: str) -> list[tuple[int, int, int, int, str | None, bool]]:
    """(outer_start, outer_end, content_start, content_end, language, closed) of each fence
    pair in `text`, paired in order; an unpaired last fence runs to the end of the text."""
    marks = [m.start() for m in re.finditer("```", text)]
    found: list[tuple[int, int, int, int, str | None, bool]] = []
    for index in range(0, len(marks), 2):
        opening = marks[index]
        closed = index + 1 < len(marks)
        closing = marks[index + 1] if closed else len(text)
        content_start = opening + 3
        language: str | None = None
        newline = text.find("\n", content_start, closing)
        if newline != -1:
            info = text[content_start:newline].strip()
            if not info:
                content_start = newline + 1
            elif _LANGUAGE_TAG.fullmatch(info) and not re.fullmatch(r"[0-9a-fA-F]{6,}", info):
                language = info.lower()
                content_start = newline + 1
        content_end = closing
        while content_end > content_start and text[content_end - 1] in "\n\r":
            content_end -= 1
        outer_end = closing + 3 if closed else len(text)
        found.append((opening, outer_end, content_start, content_end, language, closed))
    return found


def clean_url(raw: str) -> str:
    """A URL as found in prose, without the punctuation that ends the sentence around it."""
    url = raw
    while url:
        last = url[-1]
        unbalanced = (last == ")" and url.count("(") < url.count(")")) or (
            last == "]" and url.count("[") < url.count("]")
        )
        if last not in _URL_TRAILING and not unbalanced:
            break
        url = url[:-1]
    return url


def _prose_regions(text: str, masked: list[tuple[int, int]]) -> list[tuple[int, int]]:
    regions: list[tuple[int, int]] = []
    cursor = 0
    for start, end in sorted(masked):
        if start > cursor:
            regions.append((cursor, start))
        cursor = max(cursor, end)
    if cursor < len(text):
        regions.append((cursor, len(text)))
    return regions


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def view_part(part: ChunkPart) -> PartView:
    """Analyse one chunk part (see the module docstring)."""
    if part.start == 0 and part.end == len(part.message.normalized_text):
        return view_message(part.message)  # the common case, shared with the rules that view it
    return _view_part(part)


def _view_part(part: ChunkPart) -> PartView:
    full = part.message.normalized_text
    text = part.text
    base = part.start
    blocks: list[Block] = []
    masked: list[tuple[int, int]] = []
    for outer_start, outer_end, c_start, c_end, language, closed in _fences(text):
        masked.append((outer_start, outer_end))
        if c_end > c_start and text[c_start:c_end].strip():
            span = Span(base + c_start, base + c_end, full[base + c_start : base + c_end])
            blocks.append(Block(span, language, closed))
    inline: list[Span] = []
    urls: list[Span] = []
    lines: list[Span] = []
    sentences: list[Span] = []
    low, high = _whole_words(full, part.start, part.end)
    for region_start, region_end in _prose_regions(text, masked):
        # A part cut inside a word starts or ends with a fragment no claim may quote.
        region_start, region_end = max(region_start, low - base), min(region_end, high - base)
        if region_end <= region_start:
            continue
        region = text[region_start:region_end]
        for match in _INLINE_CODE.finditer(region) if "`" in region else ():
            s = base + region_start + match.start(1)
            inline.append(Span(s, s + len(match.group(1)), match.group(1)))
        for match in _urls(region):
            url = clean_url(match.group(0))
            if len(url) > len(match.group(0).split("://", 1)[0]) + 4:
                s = base + region_start + match.start()
                urls.append(Span(s, s + len(url), url))
        offset = 0
        for raw_line in region.split("\n"):
            line_start = region_start + offset
            offset += len(raw_line) + 1
            if raw_line.lstrip().startswith(">"):
                continue  # a quoted earlier message: its words belong to someone else
            ls, le = _strip_span(text, line_start, line_start + len(raw_line))
            if le <= ls:
                continue
            lines.append(Span(base + ls, base + le, full[base + ls : base + le]))
            sentences.extend(_split_sentences(full, base + ls, base + le))
    return PartView(
        message=part.message,
        start=part.start,
        end=part.end,
        blocks=tuple(blocks),
        inline_code=tuple(inline),
        urls=tuple(urls),
        sentences=tuple(sentences),
        prose_lines=tuple(lines),
    )


def _whole_words(full: str, start: int, end: int) -> tuple[int, int]:
    """`[start, end)` shrunk past word fragments where a part boundary cuts a word."""

    def word(char: str) -> bool:
        return bool(_WORD_CHAR.match(char))

    if 0 < start < end and word(full[start - 1]) and word(full[start]):
        while start < end and word(full[start]):
            start += 1
    if start < end < len(full) and word(full[end - 1]) and word(full[end]):
        while end > start and word(full[end - 1]):
            end -= 1
    return start, end


def _split_sentences(full: str, start: int, end: int) -> list[Span]:
    """Sentences of one prose line; URLs are never split (their dots and `?` are not ends)."""
    line = full[start:end]
    protected = [(m.start(), m.end()) for m in _urls(line)]
    cuts: list[int] = []
    for match in _SENTENCE_END.finditer(line):
        if any(s <= match.start() < e for s, e in protected):
            continue
        cuts.append(match.end())
    spans: list[Span] = []
    cursor = 0
    for cut in [*cuts, len(line)]:
        s, e = _strip_span(line, cursor, cut)
        if e > s:
            spans.append(Span(start + s, start + e, line[s:e]))
        cursor = cut
    return spans


# Cached: the map views each message of a chunk for its rules, then again for the item model's
# features (and the answer rules view the messages they quote); a view is a pure function of
# its message and is never changed once made. Bounded: the repeats come within a chunk.
@lru_cache(maxsize=2048)
def view_message(message: WindowMessage) -> PartView:
    """The whole message as one part (the digest step looks at messages, not chunk parts)."""
    return _view_part(ChunkPart(message=message, start=0, end=len(message.normalized_text)))


# The rules squash a sentence and drop its URLs again for every pattern they try on it (about
# ten times a sentence): a small cache answers the repeats, which come close together.
@lru_cache(maxsize=4096)
def without_urls(text: str) -> str:
    return _URL.sub(" ", text) if "://" in text else text


@lru_cache(maxsize=4096)
def squash(text: str) -> str:
    """Whitespace runs (newlines included) as one space, trimmed; typographic apostrophes as
    ASCII ones so "I\u2019ll" and "I'll" read alike."""
    return _SPACES.sub(" ", text).strip().replace("\u2019", "'")


def truncate_words(text: str, limit: int) -> str:
    """`text` squashed and cut to at most `limit` characters at a word boundary, with an
    ellipsis when something was cut. Never longer than `limit`."""
    text = squash(text)
    if len(text) <= limit:
        return text
    if limit <= 1:
        return text[:limit]
    cut = text.rfind(" ", 0, limit - 1)
    if cut < limit // 2:
        cut = limit - 1
    return text[:cut].rstrip(" ,;:-") + "…"


def capitalize_first(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def content_words(text: str) -> list[str]:
    """Content tokens (support.py's rule) of `text` without URLs."""
    return content_tokens(without_urls(text))
