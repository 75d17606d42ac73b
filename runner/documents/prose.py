"""Sentences and prose: which parts of a canonical text read as running text.

A sentence ends at `.`, `!` or `?` (plus closing quotes or brackets) before whitespace and a
character that is not lower case ("e.g. the" and "3.5 times" do not end sentences), at `。！？`,
or at a paragraph break. A sentence is prose when it has at least five words (for scripts
written with spaces), starts with a letter, digit, quote or bracket (not "^ reference" or
"| table"), is at least 60% letters, and does not look like a heading. Evidence ranks prose
chunks before reference lists and tables; summaries quote only prose.
"""

from __future__ import annotations

import re

from runner.documents.evidence_chunks import after_heading

_SENTENCE_MARK = re.compile(r"[.!?][\"'’”)\]]*(?=\s)|[。！？]")
_MIN_PROSE_SHARE = 0.5


def sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """`(start, end)` of every sentence in `text[start:end]`, stripped, in order."""
    spans: list[tuple[int, int]] = []
    position = start
    while position < end:
        paragraph_end = text.find("\n\n", position, end)
        paragraph_end = end if paragraph_end < 0 else paragraph_end
        sentence_start = position
        for mark in _SENTENCE_MARK.finditer(text, position, paragraph_end):
            follower = text[mark.end() : min(mark.end() + 2, paragraph_end)].lstrip()[:1]
            if follower.islower():
                continue
            spans.append((sentence_start, mark.end()))
            sentence_start = mark.end()
        spans.append((sentence_start, paragraph_end))
        position = paragraph_end + 2
    stripped = []
    for span_start, span_end in spans:
        while span_start < span_end and text[span_start].isspace():
            span_start += 1
        if span_start < span_end:
            stripped.append((span_start, span_end))
    return stripped


def is_prose(sentence: str) -> bool:
    if not sentence or (" " in sentence and len(sentence.split()) < 5):
        return False
    if not (sentence[0].isalnum() or sentence[0] in "\"'“‘("):
        return False
    letters = sum(1 for char in sentence if char.isalpha())
    return letters >= 0.6 * len(sentence) and not after_heading(sentence, 0, len(sentence))


def prose_share(text: str) -> float:
    """Fraction of `text`'s characters that are in prose sentences."""
    if not text:
        return 0.0
    prose = sum(e - s for s, e in sentence_spans(text, 0, len(text)) if is_prose(text[s:e]))
    return prose / len(text)


def is_mostly_prose(text: str) -> bool:
    return prose_share(text) >= _MIN_PROSE_SHARE
