"""Names shown as one line wherever digestd shows them (channel and server names, document
titles): in report headings, footnotes, the console and the terminal.

What a caller types (an API argument, a command-line option) and what an input says (a channel
name inside an export, a file's name, an HTML `<title>`, PDF metadata) are treated differently,
the same way on every ingest path:

- typed: refused with where and why (`name_problem`), so the caller fixes the one value and
  nothing is stored under a name they did not mean;
- read from an input: normalized (`clean_name`): the caller cannot edit the file, and refusing it
  would lose every good record in it.

Normalizing is `runner.core.markdown_text.single_line` (control characters dropped, whitespace runs
and line breaks one space, trimmed) and a cap of `MAX_NAME_CHARS`. Markdown producers escape
names anyway (`escape_inline`); one line at ingest also keeps names stored before that readable.
"""

from __future__ import annotations

from runner.core.markdown_text import is_break_or_control, single_line

MAX_NAME_CHARS = 200
ELLIPSIS = "…"


def clean_name(text: str, max_chars: int = MAX_NAME_CHARS) -> str:
    """`text` on one line, at most `max_chars` characters (cut at a word when one is near, with
    an ellipsis); empty when nothing printable is left."""
    name = single_line(text)
    if len(name) <= max_chars:
        return name
    limit = max_chars - len(ELLIPSIS)
    space = name.rfind(" ", 0, limit + 1)
    cut = space if space > limit // 2 else limit
    return name[:cut].rstrip() + ELLIPSIS


def name_problem(text: str, max_chars: int = MAX_NAME_CHARS) -> str | None:
    """Why a typed name cannot be stored as given (None: it can): a line break or another
    control character, nothing but whitespace, or more than `max_chars` characters."""
    found = next((char for char in text if is_break_or_control(char)), None)
    if found is not None:
        return f"must be one line without control characters (found U+{ord(found):04X})"
    stripped = text.strip()
    if not stripped:
        return "must not be empty"
    if len(stripped) > max_chars:
        return f"must be at most {max_chars} characters (got {len(stripped)})"
    return None
