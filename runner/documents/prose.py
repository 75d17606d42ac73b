"""Sentences and prose: which parts of a canonical text read as running text.

A sentence ends at `.`, `!` or `?` (plus closing quotes or brackets) before whitespace and a
character that is not lower case ("e.g. the" and "3.5 times" do not end sentences), at `。！？`,
or at a paragraph break, but not after a name's initial ("Jonathan K. Kummerfeld"); a numbered
heading joined to the sentence after it ("1 Introduction When a group...", as PDF text extraction
gives it) is split from it. A sentence is prose when it has at least five words (for scripts
written with spaces), starts with a letter, digit, quote or bracket (not "^ reference" or
"| table"), is at least 60% letters, does not look like a heading or a byline (most words capitalized), and is no table fragment
(cells in a row, or a caption's "Table 1" at its end); a sentence repeated on page after page is
a running header (`repeated_sentences`). Evidence ranks prose
chunks before reference lists and tables; summaries quote only prose.
"""

from __future__ import annotations

import re

from runner.documents.evidence_chunks import after_heading

_SENTENCE_MARK = re.compile(r"[.!?][\"'’”)\]]*(?=\s)|[。！？]")
_MIN_PROSE_SHARE = 0.5
# A name's initial ("Jonathan K. Kummerfeld"): one capital letter standing alone before the dot.
_INITIAL = re.compile(r"(?:^|[\s(.])[A-Z]$")
# A numbered section heading that PDF text extraction joined to the sentence after it ("1
# Introduction When a group of people..."): its number, up to `_HEADING_WORDS` capitalized words,
# then the capitalized word that opens the sentence, followed by a lower-case word.
_NUMBERED_HEADING = re.compile(
    r"(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,4}\.)\s+((?:[A-Z][\w-]*\s+){1,6})"
)
_HEADING_WORDS = 6
# Cells of a table flattened into text: numbers, "n/a", dashes and short codes in a row.
_CELL = re.compile(r"^(?:[(\[]?[\d.,%×x±/:+-]+[)\]]?|n/?a|[-–—]|[A-Za-z]{1,2}\d*)$")
_TABLE_RUN = 4
_MAX_CAPITALIZED = 0.6
_CAPTION_TAIL = re.compile(r"\b(?:Table|Figure|Fig\.)\s+\d+[.:]?\s*$")


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
            if text[mark.start()] == "." and _INITIAL.search(
                text, max(0, mark.start() - 2), mark.start()
            ):
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
            stripped += _split_heading(text, span_start, span_end)
    return stripped


def _split_heading(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """`[(start, end)]`, or the numbered heading the span opens with and the sentence after it
    as two spans: a heading is no part of the sentence it introduces."""
    match = _NUMBERED_HEADING.match(text, start, end)
    if match is None:
        return [(start, end)]
    capitalized = match.group(1).split()
    after = text[match.end() : end].split(maxsplit=1)
    if not after or not after[0][:1].islower() or len(capitalized) < 2:
        return [(start, end)]
    # The last capitalized word opens the sentence ("When a group"); the ones before it, and
    # the number, are the heading ("1 Introduction").
    opening = match.start(1) + match.group(1).rstrip().rfind(capitalized[-1])
    if len(capitalized) - 1 > _HEADING_WORDS:
        return [(start, end)]
    heading_end = opening
    while heading_end > start and text[heading_end - 1].isspace():
        heading_end -= 1
    return [(start, heading_end), (opening, end)]


def is_table_fragment(sentence: str) -> bool:
    """Cells of a flattened table ("(2017) 1,500 1 48 hr 5 n/a 2"): `_TABLE_RUN` cells in a row,
    or a sentence ending in a table or figure's label ("... Table 1"), which is where the text
    extraction put the caption's first words."""
    if _CAPTION_TAIL.search(sentence):
        return True
    run = 0
    for token in sentence.split():
        run = run + 1 if _CELL.match(token.strip(",;")) else 0
        if run >= _TABLE_RUN:
            return True
    return False


def repeated_sentences(sentences: list[str], times: int = 3) -> set[str]:
    """Sentences (case-folded) a document says `times` times or more: a running header or
    footer of its pages ("Proceedings of ..., pages 3846-3857"), not something it states."""
    counts: dict[str, int] = {}
    for sentence in sentences:
        key = " ".join(sentence.casefold().split())
        counts[key] = counts.get(key, 0) + 1
    return {key for key, count in counts.items() if count >= times}


def is_prose(sentence: str) -> bool:
    if not sentence or (" " in sentence and len(sentence.split()) < 5):
        return False
    if not (sentence[0].isalnum() or sentence[0] in "\"'“‘("):
        return False
    if is_table_fragment(sentence):
        return False
    # A title, a byline or a list of names ("Jonathan K. Kummerfeld Sai R. Gouravajhala ..."):
    # most of its words capitalized, as running text never is.
    alphabetic = [word for word in sentence.split() if word[:1].isalpha()]
    if sum(1 for word in alphabetic if word[0].isupper()) > _MAX_CAPITALIZED * len(alphabetic):
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
