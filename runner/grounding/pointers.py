"""Pointer resolution: a pointer is kept only when `normalized_text[start:end]` is its quote.

Models are poor at counting characters, so a pointer may carry its verbatim `quote`. When the
offsets do not slice to the quote, the quote is re-anchored inside the cited message, in tiers
that get looser and better guarded:

1. exact: the quote occurs verbatim (the n-th occurrence for the n-th repeat of the same quote);
   a quote copied with the chunk's XML escapes (`&lt;`, `&amp;`) is tried unescaped as well;
2. normalized: equal after folding whitespace runs, case, compatibility forms (NFKC) and
   typographic look-alikes (curly quotes, dashes, no-break spaces);
3. fuzzy, bounded: the folded quote is aligned where a few short slices of it occur verbatim
   (at most a handful of alignments are examined, quotes up to 2,000 characters); a match is
   accepted only when it covers at least `FUZZY_MIN_COVERAGE` of the quote (coverage gate) and
   the matched characters fill at least `FUZZY_MIN_DENSITY` of the span they sit in (density
   gate), so a paraphrase or an elided "first part ... last part" quote is rejected.

A repeated quote (`occurrence` n) takes the n-th match of the first tier that has one, so the
third "pip install" may be the one in capitals; when no tier has n matches, the last match of
the first tier that matches at all. Whatever tier matched, the stored text is the message's own
slice, never the model's quote, and the span never cuts a base character from its combining
marks. Anything else is rejected.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import Enum
from xml.sax.saxutils import unescape

from runner.core.contract import ContentPointer

# Fuzzy matching is for quotes long enough that a near-match is not a coincidence, and is bounded
# so one pointer costs at most a fraction of a second whatever the message size.
FUZZY_MIN_CHARS = 12
FUZZY_MAX_QUOTE_CHARS = 2_000
FUZZY_MAX_TEXT_CHARS = 200_000
FUZZY_MIN_COVERAGE = 0.85
FUZZY_MIN_DENSITY = 0.85
_FUZZY_MAX_ANCHORS = 20  # exact hits followed per seed
_FUZZY_MAX_EVALUATIONS = 8  # alignments examined with the (quadratic) sequence matcher

_LOOKALIKES = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u201f": '"',
    "\u2033": '"',
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2212": "-",
}
_INVISIBLE = frozenset("\u200b\u200c\u200d\u2060\ufeff\ufe0e\ufe0f")


class MatchKind(str, Enum):
    OFFSETS = "offsets"  # the given offsets sliced to the quote (or there was no quote)
    EXACT = "exact"  # the quote was found verbatim elsewhere in the message
    NORMALIZED = "normalized"  # found when whitespace runs, case and look-alikes are folded
    FUZZY = "fuzzy"  # a bounded near-match passed the coverage and density gates


@dataclass(frozen=True)
class ResolvedPointer:
    message_id: str
    char_start: int
    char_end: int
    text: str
    match: MatchKind


class PointerError(ValueError):
    """Why a pointer cannot be stored."""


def _fold(text: str) -> tuple[str, list[int]]:
    """`text` folded for comparison, and for each folded character the index of the original
    character it came from. Whitespace runs become one space; invisible characters vanish."""
    folded: list[str] = []
    origin: list[int] = []
    in_space = False
    for index, char in enumerate(text):
        if char in _INVISIBLE or _is_skin_tone(char):
            continue
        if char.isspace():
            if not in_space:
                folded.append(" ")
                origin.append(index)
            in_space = True
            continue
        in_space = False
        for piece in unicodedata.normalize("NFKC", char).casefold():
            folded.append(_LOOKALIKES.get(piece, piece))
            origin.append(index)
    return "".join(folded), origin


def _fold_quote(quote: str) -> str:
    # The quote is composed first: a model may emit decomposed accents that the (NFC) message
    # text holds as single code points, and folding works one code point at a time.
    return _fold(unicodedata.normalize("NFC", quote))[0].strip()


def _is_skin_tone(char: str) -> bool:
    return "\U0001f3fb" <= char <= "\U0001f3ff"


def _is_attached(char: str) -> bool:
    """Characters that belong to the preceding one: combining marks, variation selectors,
    joiners and emoji skin-tone modifiers (which folding ignores too)."""
    return (
        unicodedata.category(char) in {"Mn", "Mc", "Me"}
        or char in _INVISIBLE
        or _is_skin_tone(char)
    )


def _snap(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen `[start, end)` so it never separates a base character from what attaches to it."""
    while start > 0 and _is_attached(text[start]):
        start -= 1
    while end < len(text) and _is_attached(text[end]):
        end += 1
    return start, end


def _to_original(
    origin: list[int], text: str, folded_start: int, folded_end: int
) -> tuple[int, int]:
    start = origin[folded_start]
    end = origin[folded_end - 1] + 1
    return _snap(text, start, end)


def _nth_occurrence(haystack: str, needle: str, occurrence: int, clamp: bool = True) -> int:
    """Start of the `occurrence`-th (0-based) exact match; when fewer exist, of the last one
    (`clamp`) or -1."""
    positions: list[int] = []
    start = haystack.find(needle)
    while start != -1 and len(positions) <= occurrence:
        positions.append(start)
        start = haystack.find(needle, start + 1)
    if not positions or (not clamp and len(positions) <= occurrence):
        return -1
    return positions[min(occurrence, len(positions) - 1)]


def _find_exact(text: str, quote: str, occurrence: int, clamp: bool) -> tuple[int, int] | None:
    found = _nth_occurrence(text, quote, occurrence, clamp)
    return None if found == -1 else (found, found + len(quote))


def _find_normalized(text: str, quote: str, occurrence: int, clamp: bool) -> tuple[int, int] | None:
    """Span in `text` of the `occurrence`-th match of `quote` once both are folded."""
    needle = _fold_quote(quote)
    if not needle:
        return None
    folded, origin = _fold(text)
    found = _nth_occurrence(folded, needle, occurrence, clamp)
    if found == -1:
        return None
    return _to_original(origin, text, found, found + len(needle))


def _alignments(folded: str, needle: str) -> list[int]:
    """Where `needle` could start in `folded`, in text order: positions implied by exact hits
    of a few seeds (short slices of the needle at its start, quarters and end)."""
    size = max(4, min(16, len(needle) // 3))
    offsets = sorted(
        {0, len(needle) // 4, len(needle) // 2, 3 * len(needle) // 4, len(needle) - size}
    )
    slack = len(needle) // 8 + 4
    found: set[int] = set()
    for offset in offsets:
        seed = needle[offset : offset + size]
        position = folded.find(seed)
        hits = 0
        while position != -1 and hits < _FUZZY_MAX_ANCHORS:
            found.add(position - offset)
            hits += 1
            position = folded.find(seed, position + 1)
    merged: list[int] = []
    for alignment in sorted(found):
        if not merged or alignment - merged[-1] > slack:
            merged.append(alignment)
    return merged


def _fuzzy_span(folded: str, needle: str, alignment: int) -> tuple[int, int] | None:
    """The span around `alignment` where `needle` nearly occurs, if it passes both gates."""
    slack = len(needle) // 8 + 4
    window_start = max(0, alignment - slack)
    window_end = min(len(folded), alignment + len(needle) + slack)
    window = folded[window_start:window_end]
    matcher = SequenceMatcher(None, window, needle, autojunk=False)
    blocks = [block for block in matcher.get_matching_blocks() if block.size >= 2]
    matched = sum(block.size for block in blocks)
    if not blocks or matched / len(needle) < FUZZY_MIN_COVERAGE:
        return None
    span_start = window_start + blocks[0].a
    span_end = window_start + blocks[-1].a + blocks[-1].size
    if matched / (span_end - span_start) < FUZZY_MIN_DENSITY:
        return None
    return span_start, span_end


def _fuzzy_candidates(folded: str, needle: str, wanted: int) -> list[tuple[int, int]]:
    """Up to `wanted` spans where `needle` nearly occurs, in text order. At most
    `_FUZZY_MAX_EVALUATIONS` alignments are examined, which bounds the cost."""
    spans: list[tuple[int, int]] = []
    for alignment in _alignments(folded, needle)[:_FUZZY_MAX_EVALUATIONS]:
        span = _fuzzy_span(folded, needle, alignment)
        if span is not None and (not spans or span[0] >= spans[-1][1]):
            spans.append(span)
            if len(spans) >= wanted:
                break
    return spans


def _find_fuzzy(text: str, quote: str, occurrence: int, clamp: bool) -> tuple[int, int] | None:
    needle = _fold_quote(quote)
    if not FUZZY_MIN_CHARS <= len(needle) <= FUZZY_MAX_QUOTE_CHARS:
        return None
    if len(text) > FUZZY_MAX_TEXT_CHARS:
        return None
    folded, origin = _fold(text)
    spans = _fuzzy_candidates(folded, needle, occurrence + 1)
    if not spans or (not clamp and len(spans) <= occurrence):
        return None
    start, end = spans[min(occurrence, len(spans) - 1)]
    return _to_original(origin, text, start, end)


def _quote_variants(quote: str) -> list[str]:
    """The quote as given, then with the chunk serialization's XML escapes undone."""
    unescaped = unescape(quote)
    return [quote, unescaped] if unescaped != quote else [quote]


def resolve_pointer(
    pointer: ContentPointer, texts: dict[str, str], occurrence: int = 0
) -> ResolvedPointer:
    """Check `pointer` against the normalized texts of the window's messages (`texts`: message
    id → normalized text). `occurrence` is how many times the same quote was already anchored in
    this message, so repeated quotes map to successive occurrences. Raises PointerError."""
    text = texts.get(pointer.message_id)
    if text is None:
        raise PointerError(f"message {pointer.message_id!r} is not in the window")
    start, end = pointer.char_start, pointer.char_end
    in_bounds = 0 <= start < end <= len(text)
    quote = pointer.quote
    if not quote:
        if not in_bounds:
            raise PointerError(
                f"offsets [{start}, {end}) outside message {pointer.message_id!r} "
                f"of length {len(text)}"
            )
        return ResolvedPointer(pointer.message_id, start, end, text[start:end], MatchKind.OFFSETS)
    if in_bounds and text[start:end] == quote:
        return ResolvedPointer(pointer.message_id, start, end, quote, MatchKind.OFFSETS)
    variants = _quote_variants(quote)
    tiers = (
        (MatchKind.EXACT, _find_exact),
        (MatchKind.NORMALIZED, _find_normalized),
        (MatchKind.FUZZY, _find_fuzzy),
    )
    # First look for the `occurrence`-th match in every tier (a repeated quote may differ in
    # case or spacing from its earlier twin); only then settle for the last match of a tier.
    for clamp in (False, True):
        for kind, finder in tiers:
            for variant in variants:
                span = finder(text, variant, occurrence, clamp)
                if span is not None:
                    s, e = span
                    return ResolvedPointer(pointer.message_id, s, e, text[s:e], kind)
    raise PointerError(f"quote not found in message {pointer.message_id!r}")
