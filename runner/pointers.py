"""Pointer resolution: a pointer is kept only when `normalized_text[start:end]` is its quote.

Models are poor at counting characters, so a pointer may carry its verbatim `quote`. When the
offsets do not slice to the quote, the quote is re-anchored inside the cited message: first an
exact occurrence (the n-th occurrence for the n-th repeat of the same quote), then a match that
ignores differences of whitespace and case. Anything else is rejected with a reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from runner.contract import ContentPointer


class MatchKind(str, Enum):
    OFFSETS = "offsets"  # the given offsets sliced to the quote (or there was no quote)
    EXACT = "exact"  # the quote was found verbatim elsewhere in the message
    NORMALIZED = "normalized"  # found when whitespace runs and case are ignored


@dataclass(frozen=True)
class ResolvedPointer:
    message_id: str
    char_start: int
    char_end: int
    text: str
    match: MatchKind


class PointerError(ValueError):
    """Why a pointer cannot be stored."""


def _find_normalized(haystack: str, needle: str, occurrence: int) -> tuple[int, int] | None:
    """Span of the `occurrence`-th match of `needle` in `haystack`, whitespace runs and case
    folded. Returns offsets into the original `haystack`."""
    words = needle.split()
    if not words:
        return None
    pattern = re.compile(r"\s+".join(re.escape(word) for word in words), re.IGNORECASE)
    matches = list(pattern.finditer(haystack))
    if not matches:
        return None
    chosen = matches[min(occurrence, len(matches) - 1)]
    return chosen.start(), chosen.end()


def _nth_occurrence(haystack: str, needle: str, occurrence: int) -> int:
    """Start of the `occurrence`-th (0-based) exact match, or of the last one if fewer exist."""
    positions: list[int] = []
    start = haystack.find(needle)
    while start != -1 and len(positions) <= occurrence:
        positions.append(start)
        start = haystack.find(needle, start + 1)
    return positions[min(occurrence, len(positions) - 1)] if positions else -1


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
    found = _nth_occurrence(text, quote, occurrence)
    if found != -1:
        return ResolvedPointer(
            pointer.message_id, found, found + len(quote), quote, MatchKind.EXACT
        )
    span = _find_normalized(text, quote, occurrence)
    if span is not None:
        s, e = span
        return ResolvedPointer(pointer.message_id, s, e, text[s:e], MatchKind.NORMALIZED)
    raise PointerError(f"quote not found in message {pointer.message_id!r}")
