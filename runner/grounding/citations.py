"""Citations of prose sentences (overview, highlights): where in a cited message a sentence's
support lies, and the per-digest audit of what was kept and dropped.

A sentence cites whole messages; to show a reader *which* words it rests on, each citation is
anchored to one stretch of the message: the sentence of that message sharing the most content
words with the cited sentence (runner.grounding.claim_support's tokens), cut at a word boundary to at
most `MAX_ANCHOR_CHARS`. The anchor never crosses a line, so a Markdown footnote quoting it stays
on one line, and `text[char_start:char_end]` is the exact quote.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from runner.grounding.claim_support import content_tokens

MAX_ANCHOR_CHARS = 160
# A sentence of a message: up to the end punctuation, never across a line break.
_SEGMENT = re.compile(r"[^\n]*?(?:[.!?](?=\s|$)|(?=\n)|$)")


@dataclass(frozen=True)
class Anchor:
    """The characters `normalized_text[char_start:char_end]` of message `message_id` that a
    cited sentence rests on."""

    message_id: str
    char_start: int
    char_end: int


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """The `(start, end)` of each sentence of a message, never across a line, surrounding
    whitespace left out."""
    spans: list[tuple[int, int]] = []
    for match in _SEGMENT.finditer(text):
        start, end = match.span()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            spans.append((start, end))
    return spans


def cut_span(text: str, start: int, end: int, max_chars: int = MAX_ANCHOR_CHARS) -> tuple[int, int]:
    """[start, end) shortened to at most `max_chars`, at a word boundary when there is one."""
    if end - start <= max_chars:
        return start, end
    limit = start + max_chars
    space = text.rfind(" ", start, limit)
    end = space if space > start + max_chars // 2 else limit
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def anchor_span(sentence: str, text: str) -> tuple[int, int]:
    """The span of `text` sharing the most content words with `sentence` (the earliest among
    equals); the opening of `text` when no segment shares a word."""
    wanted = set(content_tokens(sentence))
    best: tuple[int, int] | None = None
    best_score = 0
    for start, end in sentence_spans(text):
        score = len(wanted & set(content_tokens(text[start:end])))
        if score > best_score:
            best, best_score = (start, end), score
    if best is None:
        segments = sentence_spans(text)
        best = segments[0] if segments else (0, len(text))
    return cut_span(text, *best)


def anchor(sentence: str, message_id: str, text: str) -> Anchor:
    start, end = anchor_span(sentence, text)
    return Anchor(message_id, start, end)


@dataclass
class CitationAudit:
    """What validation did to a digest's prose: sentences proposed and kept per field, the
    reasons of what was dropped, and whether the title had to be replaced."""

    proposed: Counter[str] = field(default_factory=Counter)
    kept: Counter[str] = field(default_factory=Counter)
    cited_overview: int = 0  # kept overview sentences with at least one anchored citation
    reasons: Counter[str] = field(default_factory=Counter)
    title_replaced: bool = False

    def record(self, field_name: str, kept: bool, reason: str | None = None) -> None:
        self.proposed[field_name] += 1
        if kept:
            self.kept[field_name] += 1
        if reason:
            self.reasons[reason.split(":", 1)[0]] += 1

    @property
    def overview_cited_share(self) -> float | None:
        """Share of the stored overview sentences with a valid citation (None: no sentence)."""
        kept = self.kept["overview"]
        return self.cited_overview / kept if kept else None

    def as_json(self) -> dict[str, Any]:
        names = sorted(set(self.proposed) | set(self.kept))
        return {
            "fields": {
                name: {"proposed": self.proposed[name], "kept": self.kept[name]} for name in names
            },
            "overview_cited_share": self.overview_cited_share,
            "reasons": dict(sorted(self.reasons.items())),
            "title_replaced": self.title_replaced,
        }
