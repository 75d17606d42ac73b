"""Normalization rules: deterministic, idempotent, and exactly the documented transformations."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from runner.grounding.normalize import normalize_text


@given(st.text())
def test_idempotent(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once


@given(st.text())
def test_output_is_nfc_without_forbidden_characters(text: str) -> None:
    out = normalize_text(text)
    assert unicodedata.is_normalized("NFC", out)
    assert "\r" not in out
    assert not any(
        (unicodedata.category(c) == "Cc" and c not in "\n\t")
        or c in "\u200b\u200c\u200d\u2060\ufeff"
        for c in out
    )
    assert not any("\ud800" <= c <= "\udfff" for c in out)


def test_rules() -> None:
    assert normalize_text("a\r\nb\rc") == "a\nb\nc"
    assert normalize_text("e\u0301") == "\u00e9"  # NFC composes
    assert normalize_text("zero\u200bwidth\ufeff") == "zerowidth"
    assert normalize_text("nul\x00bell\x07") == "nulbell"
    assert normalize_text("lone \ud83d surrogate") == "lone \ufffd surrogate"
    code = "```python\ndef f():\n\treturn  1   \n```"
    assert normalize_text(code) == code  # whitespace in code fences is kept byte for byte
    assert normalize_text("emoji 👍🏽 and 日本語") == "emoji 👍🏽 and 日本語"
