"""Pointer resolution on edge cases: 0-start, end of message, emoji, combining marks, code."""

from __future__ import annotations

import pytest

from runner.core.contract import ContentPointer
from runner.grounding.normalize import normalize_text
from runner.grounding.pointers import MatchKind, PointerError, resolve_pointer

CODE = "Try this:\n```yaml\nretries: 3\ntimeout: 30s\n```\nthen restart."
TEXTS = {
    "1": "hello world",
    "2": normalize_text("caf\u0065\u0301 ☕ 👍🏽 done"),
    "3": CODE,
    "4": "again and again and again",
}


def pointer(message_id: str, start: int, end: int, quote: str | None = None) -> ContentPointer:
    return ContentPointer(message_id=message_id, char_start=start, char_end=end, quote=quote)


def test_zero_start_and_end_of_message() -> None:
    assert resolve_pointer(pointer("1", 0, 5), TEXTS).text == "hello"
    end = resolve_pointer(pointer("1", 6, 11, "world"), TEXTS)
    assert (end.char_start, end.char_end, end.text, end.match) == (
        6,
        11,
        "world",
        MatchKind.OFFSETS,
    )


def test_offsets_are_code_points_of_normalized_text() -> None:
    text = TEXTS["2"]
    assert text.startswith("café")  # composed: 4 code points
    start = text.index("👍🏽")
    found = resolve_pointer(pointer("2", start, start + 2, "👍🏽"), TEXTS)
    assert found.text == "👍🏽" and found.match is MatchKind.OFFSETS


def test_code_block_pointer_keeps_whitespace() -> None:
    start = CODE.index("retries")
    end = CODE.index("```", start)
    found = resolve_pointer(pointer("3", start, end, "retries: 3\ntimeout: 30s\n"), TEXTS)
    assert found.text == "retries: 3\ntimeout: 30s\n"


def test_wrong_offsets_reanchored_on_exact_quote() -> None:
    found = resolve_pointer(pointer("3", 0, 5, "timeout: 30s"), TEXTS)
    assert TEXTS["3"][found.char_start : found.char_end] == "timeout: 30s"
    assert found.match is MatchKind.EXACT


def test_repeated_quotes_map_to_successive_occurrences() -> None:
    spans = [resolve_pointer(pointer("4", 0, 1, "again"), TEXTS, occurrence=n) for n in range(3)]
    assert [s.char_start for s in spans] == [0, 10, 20]


def test_whitespace_and_case_insensitive_reanchoring() -> None:
    found = resolve_pointer(pointer("1", 0, 3, "HELLO   world"), TEXTS)
    assert found.match is MatchKind.NORMALIZED and found.text == "hello world"


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (pointer("99", 0, 1), "not in the window"),
        (pointer("1", 0, 12), "outside"),
        (pointer("1", 5, 50), "outside"),
        (pointer("1", 0, 5, "goodbye"), "quote not found"),
    ],
)
def test_rejections(bad: ContentPointer, reason: str) -> None:
    with pytest.raises(PointerError, match=reason):
        resolve_pointer(bad, TEXTS)


def test_pointer_model_refuses_negative_or_empty() -> None:
    with pytest.raises(ValueError):
        pointer("1", -1, 3)
    with pytest.raises(ValueError):
        pointer("1", 0, 0)
