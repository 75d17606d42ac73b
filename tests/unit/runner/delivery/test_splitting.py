"""A rendered message split to a receiver's limit: every part fits, the parts hold every line in
order, a footnote or bullet is never cut while it fits in a part, and a cut inside a line falls
between words and never inside an escape."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.delivery.splitting import measured, split_units


def _lines(parts: list[str]) -> list[str]:
    return [line for part in parts for line in part.split("\n") if line.strip()]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet="ab \n&;*\\😀", min_size=0, max_size=120), max_size=40),
    st.integers(min_value=8, max_value=300),
)
def test_every_part_fits_and_no_character_is_lost(units: list[str], limit: int) -> None:
    parts = split_units(units, limit)
    assert all(0 < measured(part) <= limit for part in parts)
    assert all(part.strip() for part in parts)
    # Only whitespace may go (at the edges of a cut): the characters stay, in order.
    kept = "".join("".join(part.split()) for part in parts)
    assert kept == "".join("".join(unit.split()) for unit in units)


def test_units_that_fit_are_never_cut_and_keep_their_order() -> None:
    footnotes = [
        f'[{n}] ann, 2024-05-01 10:02 UTC, "{"word " * 30}" (message {n})' for n in range(40)
    ]
    parts = split_units(["*Title*", "", *footnotes], 2_000)
    assert len(parts) > 1
    assert _lines(parts) == ["*Title*", *footnotes]


def test_a_long_line_is_cut_between_words_and_a_long_word_outside_escapes() -> None:
    line = " ".join(f"w{n:03d}" for n in range(100))
    parts = split_units([line], 50)
    assert all(part.split() == part.split(" ") for part in parts)
    assert " ".join(parts).split() == line.split()
    word = "\\*" * 30 + "&amp;" * 10
    pieces = split_units([word], 7)
    assert "".join(pieces) == word
    # Each piece is made of whole escapes and entities only.
    assert all(piece.replace("\\*", "").replace("&amp;", "") == "" for piece in pieces)


def test_emoji_count_twice_as_a_receiver_counts_them() -> None:
    assert measured("😀a") == 3
    assert all(measured(part) <= 4 for part in split_units(["😀😀😀😀😀"], 4))


def test_a_limit_must_be_positive() -> None:
    with pytest.raises(ValueError):
        split_units(["x"], 0)
