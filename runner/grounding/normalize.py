"""Message text normalization: `normalized_text` is exactly what an extractor sees, and every
pointer indexes into it, so these rules are fixed, deterministic and idempotent.

Rules, in order:
1. Invalid surrogates (lone UTF-16 halves from broken exports) become U+FFFD.
2. `\\r\\n` and lone `\\r` become `\\n`.
3. Unicode NFC.
4. Control characters other than `\\n` and `\\t` are removed (C0, DEL, C1), and so are zero-width
   characters (U+200B..U+200D, U+2060, U+FEFF). Everything else, including whitespace inside and
   outside code fences, is kept as it is: code and configs must survive byte for byte.
"""

from __future__ import annotations

import re
import unicodedata

_CONTROL_OR_ZERO_WIDTH = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200d\u2060\ufeff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def normalize_text(text: str) -> str:
    """The canonical form of a message's text (see the module docstring for the rules)."""
    text = _SURROGATE.sub("\ufffd", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = unicodedata.normalize("NFC", text)
    # Removing a character can never create a new NFC composition here: the removed characters
    # are not combining marks, but they can separate a base from its mark, so normalize again.
    stripped = _CONTROL_OR_ZERO_WIDTH.sub("", text)
    if stripped != text:
        stripped = unicodedata.normalize("NFC", stripped)
    return stripped
