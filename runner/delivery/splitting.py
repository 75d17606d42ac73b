"""A rendered message split into parts that each fit a receiver's length limit, in order.

Units (a line with its continuation lines: a bullet and its quoted body, a footnote definition)
are packed whole, one after another, into as few parts as fit. A unit longer than a whole part is
cut between words, and only a single word longer than a part is cut inside it (never inside an
escape such as `\\*` or `&amp;`). Blank lines at the edge of a part are dropped, so no part is
empty; joined with line breaks, the parts hold every non-blank line of the units, in order.

Lengths are counted in UTF-16 code units, which is what JavaScript-based receivers count and never
less than Python's count of code points, so an emoji cannot push a part over a limit."""

from __future__ import annotations

import re
from collections.abc import Sequence

# What must not be cut in two: an HTML entity (Slack's `&amp;`) or a backslash escape.
_ATOMS = re.compile(r"&[#A-Za-z0-9]{1,8};|\\.", re.DOTALL)


def measured(text: str) -> int:
    """`text`'s length in UTF-16 code units."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def _cut_word(word: str, limit: int) -> list[str]:
    """A word longer than `limit` in pieces of at most `limit`, never cutting an atom."""
    atoms: list[str] = []
    position = 0
    for match in _ATOMS.finditer(word):
        atoms.extend(word[position : match.start()])
        atoms.append(match[0])
        position = match.end()
    atoms.extend(word[position:])
    pieces: list[str] = []
    current = ""
    for atom in atoms:
        if current and measured(current + atom) > limit:
            pieces.append(current)
            current = ""
        current += atom
    if current:
        pieces.append(current)
    return pieces


def _cut_unit(unit: str, limit: int) -> list[str]:
    """A unit longer than `limit` in pieces of at most `limit`, cut between words."""
    pieces: list[str] = []
    current = ""
    for word in re.split(r"(?<=\s)(?=\S)", unit):
        if current and measured(current + word) > limit:
            pieces.append(current.rstrip())
            current = ""
        if measured(word) > limit:
            *whole, current = _cut_word(word, limit)
            pieces.extend(whole)
            continue
        current += word
    if current.strip():
        pieces.append(current.rstrip())
    return pieces


def split_units(units: Sequence[str], limit: int) -> list[str]:
    """The units packed into parts of at most `limit` (see the module docstring)."""
    if limit < 1:
        raise ValueError("limit must be positive")
    pieces: list[str] = []
    for unit in units:
        pieces.extend(_cut_unit(unit, limit) if measured(unit) > limit else [unit])
    parts: list[str] = []
    current: list[str] = []
    for piece in pieces:
        if not current and not piece.strip():
            continue  # no part starts with a blank line
        if current and measured("\n".join([*current, piece])) > limit:
            parts.append("\n".join(current).rstrip())
            current = [] if not piece.strip() else [piece]
            continue
        current.append(piece)
    if "\n".join(current).strip():
        parts.append("\n".join(current).rstrip())
    return parts
