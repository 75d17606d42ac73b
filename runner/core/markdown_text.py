"""Untrusted text (chat messages, authors, channel names, document titles, model output) placed
in the Markdown digestd emits: the one escaper every Markdown producer uses.

`escape_inline(text)` returns one line of Markdown that any CommonMark renderer (with or without
GFM tables, strikethrough, footnotes, raw HTML enabled) shows as exactly the words of `text`, with
runs of whitespace and line breaks collapsed to one space and control characters dropped: no
heading, list, quote, code, emphasis, link, image, footnote reference or definition, entity or
HTML tag can come out of it. CommonMark renders a backslash before any ASCII punctuation as that
character alone, so escaping changes the source, never the visible text:

- everywhere: `\\` (or a backslash already there would escape what follows it: `\\[^1]` is a
  live footnote marker), `[ ]` (links, images, footnotes, reference definitions), `` ` * ~ ``
  and `_` unless it stands between two letters or digits (code and emphasis), `< >` (HTML, autolinks), `|` (table cells), and `&` where it would start
  an entity (`&amp;`, `&#60;`); a `!` opens an image only before a `[`, which is escaped, so
  chat's "Great!" and "AT&T" stay as written;
- at the start of the line, where they open blocks: `#`, `-`, `+`, `=`, and a number followed
  by `.` or `)` (ordered lists); four leading spaces (code) cannot occur: the text is trimmed.

Because the result is a single line, the caller decides where lines start: a heading is
`"## " + escape_inline(name)`, a footnote `f"[^{n}]: {escape_inline(quote)}"`.
"""

from __future__ import annotations

import re
import unicodedata

# Characters that open inline markup wherever they stand.
_INLINE_MARKUP = re.compile(r"([\\`*~\[\]<>|]|&(?=#|[A-Za-z0-9]+;))")
# A run of underscores, with the characters on either side of it.
_UNDERSCORES = re.compile(r"(?<=(.))?_+(?=(.))?")
# What opens a block when it begins a line: an ATX heading, a list item, a thematic break or
# setext underline, an ordered list item (`1.` / `1)`: the punctuation is escaped).
_LINE_START = re.compile(r"^(?:([#+=-])|(\d{1,9})([.)]))")


def is_break_or_control(char: str) -> bool:
    """A control character (C0, DEL, C1: line breaks and tabs included) or a line or paragraph
    separator: nothing a one-line name or a Markdown line may hold as is."""
    category = unicodedata.category(char)
    return category == "Cc" or category in ("Zl", "Zp")


def single_line(text: str) -> str:
    """`text` on one line: control characters dropped, every run of whitespace (line breaks
    included) one space, trimmed."""
    if text.isprintable():  # the common case: nothing to drop or replace
        return " ".join(text.split())
    # A dropped control becomes a space first, so it never glues two words together.
    return " ".join("".join(" " if is_break_or_control(c) else c for c in text).split())


def escape_inline(text: str) -> str:
    """`text` as one line of Markdown whose rendering is exactly its words (see the module
    docstring for what is escaped and why)."""
    escaped = _UNDERSCORES.sub(_escape_underscores, _INLINE_MARKUP.sub(r"\\\1", single_line(text)))
    return _LINE_START.sub(
        lambda match: "\\" + match[1] if match[1] else f"{match[2]}\\{match[3]}",
        escaped,
        count=1,
    )


def _escape_underscores(match: re.Match[str]) -> str:
    """A run of `_` between two letters or digits (`pg_upgrade`, `requests_per_minute`) can
    neither open nor close emphasis in CommonMark, so it stays as written; any other is escaped."""
    before, after = match.group(1), match.group(2)
    if before is not None and after is not None and before.isalnum() and after.isalnum():
        return match.group(0)
    return "\\_" * len(match.group(0))
