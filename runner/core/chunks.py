"""Chunking: runs of whole messages serialized as `<message>` lines, sized by a token budget.

A chunk line is `<message id="ID" author="NAME" ts="ISO">escaped text</message>`. A message
bigger than the budget is split into parts at line or word boundaries; each part keeps its
`[start, end)` offsets into the message's normalized text and is serialized with
`part="i/n" offset="start"` so a model can still point into the whole message.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from runner.core.tokens import count_tokens
from runner.core.window import WindowMessage

# Tokens a serialized line costs beyond its text (tags, attributes); measured on real exports it
# is 25-40 with snowflake ids, so parts are cut with this much head-room.
_LINE_OVERHEAD_TOKENS = 48


@dataclass(frozen=True)
class ChunkPart:
    """`message.normalized_text[start:end]`, one whole message or one part of a big one."""

    message: WindowMessage
    start: int
    end: int
    part_number: int = 1
    part_count: int = 1

    @property
    def text(self) -> str:
        return self.message.normalized_text[self.start : self.end]

    def serialize(self) -> str:
        message = self.message
        attributes = (
            f"id={quoteattr(message.message_id)} author={quoteattr(message.author)} "
            f"ts={quoteattr(message.ts.isoformat())}"
        )
        if message.reply_to:
            attributes += f" reply_to={quoteattr(message.reply_to)}"
        if self.part_count > 1:
            attributes += f' part="{self.part_number}/{self.part_count}" offset="{self.start}"'
        return f"<message {attributes}>{escape(self.text)}</message>"


@dataclass(frozen=True)
class Chunk:
    index: int
    parts: tuple[ChunkPart, ...]
    xml: str
    token_count: int
    tokens_estimated: bool

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.xml.encode("utf-8")).hexdigest()

    @property
    def message_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for part in self.parts:
            seen.setdefault(part.message.message_id, None)
        return list(seen)


def _cut_point(text: str, start: int, limit: int) -> int:
    """The end of a part starting at `start` of at most `limit` chars, at a newline or space
    in the last fifth of the span when there is one, so words and lines stay whole."""
    end = min(len(text), start + limit)
    if end == len(text):
        return end
    floor = start + max(1, (limit * 4) // 5)
    for separator in ("\n", " "):
        position = text.rfind(separator, floor, end)
        if position != -1:
            return position + 1
    return end


def split_message(message: WindowMessage, budget_tokens: int) -> list[ChunkPart]:
    """One part if the message fits the budget, else parts that each fit and cover it exactly."""
    text = message.normalized_text
    text_budget = max(16, budget_tokens - _LINE_OVERHEAD_TOKENS)
    # A BPE token covers at least one byte, and escaping makes a character at most 5 bytes
    # ("&amp;"; others are at most 4 in UTF-8): a text this short fits without counting, which
    # spares a tiktoken pass over nearly every chat message.
    if len(text) * 5 <= text_budget:
        return [ChunkPart(message=message, start=0, end=len(text))]
    total = count_tokens(escape(text)).tokens
    if total <= text_budget:
        return [ChunkPart(message=message, start=0, end=len(text))]
    spans: list[tuple[int, int]] = []
    start = 0
    chars_per_token = max(1.0, len(text) / max(total, 1))
    while start < len(text):
        limit = max(1, int(text_budget * chars_per_token * 0.9))
        end = _cut_point(text, start, limit)
        while end - start > 1 and count_tokens(escape(text[start:end])).tokens > text_budget:
            limit = max(1, (end - start) // 2)
            end = _cut_point(text, start, limit)
        spans.append((start, end))
        start = end
    return [
        ChunkPart(message=message, start=s, end=e, part_number=i + 1, part_count=len(spans))
        for i, (s, e) in enumerate(spans)
    ]


def chunk_messages(messages: list[WindowMessage], budget_tokens: int) -> list[Chunk]:
    """Greedy packing of serialized message lines into chunks of at most `budget_tokens`."""
    return list(iter_chunks(messages, budget_tokens))


def iter_chunks(messages: Iterable[WindowMessage], budget_tokens: int) -> Iterator[Chunk]:
    """`chunk_messages`, one chunk at a time: the pipeline starts mapping the first chunk while
    later ones are still being cut (counting 100,000 messages' tokens takes seconds).

    Consecutive messages of one conversation (`WindowMessage.conversation`) are placed as a
    unit: one that does not fit what is left of the current chunk but fits an empty one starts
    a new chunk, so a map call sees whole threads; one bigger than a chunk is split between
    messages (its own turns), as a window without conversations is."""
    packer = _Packer(budget_tokens)
    group: list[tuple[str, ChunkPart, int, bool]] = []
    group_tokens = 0
    streaming = False  # the current conversation is bigger than a chunk: no unit to keep
    key: str | None = None
    for message in messages:
        if message.conversation is None or message.conversation != key:
            yield from packer.add(group, as_unit=not streaming)
            group, group_tokens, streaming = [], 0, False
            key = message.conversation
        for part in split_message(message, budget_tokens):
            line = part.serialize()
            counted = count_tokens(line + "\n")
            group.append((line, part, counted.tokens, counted.estimated))
            group_tokens += counted.tokens
        if group_tokens > budget_tokens:
            yield from packer.add(group, as_unit=False)
            group, group_tokens, streaming = [], 0, True
    yield from packer.add(group, as_unit=not streaming)
    yield from packer.flush()


class _Packer:
    """Greedy packing of serialized lines into chunks of at most `budget_tokens`."""

    def __init__(self, budget_tokens: int) -> None:
        self.budget = budget_tokens
        self.lines: list[str] = []
        self.parts: list[ChunkPart] = []
        self.tokens = 0
        self.estimated = False
        self.index = 0

    def add(
        self, lines: list[tuple[str, ChunkPart, int, bool]], *, as_unit: bool
    ) -> Iterator[Chunk]:
        """Add `lines` in order; `as_unit`: start a new chunk first if they fit one together but
        not in what is left of this one."""
        total = sum(tokens for _, _, tokens, _ in lines)
        if as_unit and self.parts and self.tokens + total > self.budget >= total:
            yield from self.flush()
        for line, part, tokens, estimated in lines:
            if self.parts and self.tokens + tokens > self.budget:
                yield from self.flush()
            self.lines.append(line)
            self.parts.append(part)
            self.tokens += tokens
            self.estimated = self.estimated or estimated

    def flush(self) -> Iterator[Chunk]:
        if self.parts:
            yield Chunk(
                self.index, tuple(self.parts), "\n".join(self.lines), self.tokens, self.estimated
            )
            self.index += 1
            self.lines, self.parts, self.tokens, self.estimated = [], [], 0, False
