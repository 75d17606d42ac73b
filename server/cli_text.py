"""Untrusted text (channel names, authors, messages, titles, model output) on a terminal: what
`digestd` prints must never move the cursor, recolour, retitle the window, ring the bell or
reorder what is shown, whatever a message held.

`terminal_text` keeps line breaks and tabs and drops every other control character (C0 and C1,
so ESC and CSI sequences lose their introducer and show as harmless text, DEL, a carriage return
that would overwrite the line) and the bidirectional overrides and isolates (which make a line
read differently from what it holds). `one_line` is the same for a field shown within a line.
`json_text` is for JSON on stdout: the same characters escaped as `\\uXXXX` (JSON that decodes to
exactly the same value)."""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from typing import Any

# Left-to-right and right-to-left marks, embeddings, overrides and isolates.
BIDI_CONTROLS = frozenset(
    chr(code) for code in (0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
)
# What json.dumps(ensure_ascii=False) leaves raw and a terminal may act on: DEL, C1, bidi.
_RAW_IN_JSON = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _unsafe(char: str) -> bool:
    return char in BIDI_CONTROLS or (char not in "\n\t" and unicodedata.category(char) == "Cc")


def terminal_text(text: str) -> str:
    """`text` without the characters a terminal would act on; line breaks and tabs stay."""
    if text.isascii() and text.isprintable():  # the common case: nothing to drop
        return text
    return "".join(char for char in text if not _unsafe(char))


def one_line(text: str) -> str:
    """A field shown inside a line: safe, and every run of whitespace one space."""
    return " ".join(terminal_text(text).split())


def say(text: str = "") -> None:
    """Print `text` on stdout, safe for a terminal."""
    print(terminal_text(text))


def json_text(value: Any) -> str:
    """`value` as one line of JSON with no raw character a terminal would act on."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return _RAW_IN_JSON.sub(lambda match: f"\\u{ord(match[0]):04x}", text)


def warn(text: str) -> None:
    """A diagnostic on stderr, safe for a terminal."""
    print(terminal_text(text), file=sys.stderr)
