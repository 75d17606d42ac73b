"""Evidence chunks: contiguous, non-overlapping slices of the canonical text (target 400, max 500,
min 50 characters, no overlap).

A chunk ends at the best boundary found between `start + MIN` and `start + MAX`, by priority:
1. paragraph break (`\\n\\n`; the end of the text or of a PDF page counts as one);
2. sentence end (`.`, `!` or `?`, optionally followed by a closing quote or bracket, then
   whitespace and an upper-case or uncased letter, a digit or a newline; `。！？` directly);
3. clause break (`,` `;` `:` followed by whitespace);
4. word break (a space);
5. hard cut at MAX (last resort; no `...` is stored: display adds it, so offsets stay exact).
Within a priority the candidate closest to `start + TARGET` wins (the earlier on a tie); a
paragraph break right after a heading-like paragraph (short, no closing punctuation) is only used
when there is no other, so headings start chunks instead of ending them.
Sentence and clause breaks are only looked for from `start + TARGET // 2`, so a lone early full
stop does not make a tiny chunk. Whitespace between chunks belongs to no chunk, so every chunk
is `canonical_text[start:end]` with no leading or trailing whitespace. A final chunk shorter than
MIN is merged into the previous one when the result stays within MAX.

PDFs are chunked page by page: a chunk never crosses a page, so its `page:N:char:S-E` locator is
always inside one page's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from runner.documents.canonical import PageSpan

TARGET_CHARS = 400
MAX_CHARS = 500
MIN_CHARS = 50

_SENTENCE_END = re.compile(r"[.!?][\"'’”)\]]*(?=\s)|[。！？]")
_CLAUSE_END = re.compile(r"[,;:](?=\s)")
_HEADING_MAX_CHARS = 80
# Ends like a sentence or clause: punctuation, then maybe quotes, brackets or a citation "[3]".
_CLOSED = re.compile(r"[.!?:;,。！？][\[\]\"'’”)\d]*$")


@dataclass(frozen=True)
class EvidenceChunk:
    index: int  # position in document order
    start: int  # absolute offsets in the canonical text, end-exclusive
    end: int
    page: int | None  # 1-based page number for PDFs
    text: str

    def __len__(self) -> int:
        return self.end - self.start


def _skip_space(text: str, position: int, limit: int) -> int:
    while position < limit and text[position].isspace():
        position += 1
    return position


def _is_sentence_start(text: str, position: int, limit: int) -> bool:
    """After a sentence-ending mark at `position`: whitespace, then a capital, an uncased letter,
    a digit, or a newline in the whitespace."""
    nxt = _skip_space(text, position, limit)
    if nxt >= limit or "\n" in text[position:nxt]:
        return True
    char = text[nxt]
    return char.isupper() or char.isdigit() or (char.isalpha() and not char.islower())


def after_heading(text: str, start: int, position: int) -> bool:
    """Is the paragraph that ends at `position` heading-like (short, no closing punctuation)?"""
    previous_break = text.rfind("\n\n", start, position)
    paragraph = text[previous_break + 2 if previous_break >= 0 else start : position].rstrip()
    return len(paragraph) < _HEADING_MAX_CHARS and not _CLOSED.search(paragraph)


def _closest(candidates: list[int], target: int) -> int | None:
    return min(candidates, key=lambda c: (abs(c - target), c)) if candidates else None


def best_boundary(text: str, start: int, limit: int) -> int:
    """End offset of the chunk that starts at `start` in a region ending at `limit`."""
    low, high = start + MIN_CHARS, min(start + MAX_CHARS, limit)
    target = start + TARGET_CHARS
    if limit <= high and limit - start <= TARGET_CHARS:
        return limit
    window = text[start:high]
    paragraphs = [start + m.start() for m in re.finditer("\n\n", window)]
    paragraphs = [p for p in paragraphs if p >= low] + ([limit] if limit <= high else [])
    # A heading belongs with the text it introduces: do not end a chunk right after one unless
    # there is no other paragraph break.
    found = _closest([p for p in paragraphs if not after_heading(text, start, p)], target)
    found = found if found is not None else _closest(paragraphs, target)
    if found is not None:
        return found
    sentence_low = start + TARGET_CHARS // 2
    sentences = [
        start + m.end()
        for m in _SENTENCE_END.finditer(window)
        if start + m.end() >= sentence_low and _is_sentence_start(text, start + m.end(), limit)
    ]
    clauses = [start + m.end() for m in _CLAUSE_END.finditer(window)]
    clauses = [c for c in clauses if c >= sentence_low]
    words = [start + m.start() for m in re.finditer(" ", window) if start + m.start() >= low]
    for candidates in (sentences, clauses, words):
        found = _closest(candidates, target)
        if found is not None:
            return found
    return high


def _chunk_region(text: str, region: PageSpan) -> list[PageSpan]:
    spans: list[PageSpan] = []
    region_start, limit = region
    start = _skip_space(text, region_start, limit)
    while start < limit:
        end = best_boundary(text, start, limit)
        trimmed = end
        while trimmed > start and text[trimmed - 1].isspace():
            trimmed -= 1
        if trimmed > start:
            spans.append((start, trimmed))
        start = _skip_space(text, max(end, start + 1), limit)
    if len(spans) >= 2:
        (prev_start, _), (last_start, last_end) = spans[-2], spans[-1]
        if last_end - last_start < MIN_CHARS and last_end - prev_start <= MAX_CHARS:
            spans[-2:] = [(prev_start, last_end)]
    return spans


def chunk_document(
    canonical_text: str, page_spans: list[PageSpan] | None = None
) -> list[EvidenceChunk]:
    """All evidence chunks of a document, in order (per page for PDFs)."""
    regions: list[tuple[int | None, PageSpan]]
    if page_spans is None:
        regions = [(None, (0, len(canonical_text)))]
    else:
        regions = [(number, span) for number, span in enumerate(page_spans, start=1)]
    chunks: list[EvidenceChunk] = []
    for page, region in regions:
        for start, end in _chunk_region(canonical_text, region):
            chunks.append(
                EvidenceChunk(
                    index=len(chunks),
                    start=start,
                    end=end,
                    page=page,
                    text=canonical_text[start:end],
                )
            )
    return chunks
