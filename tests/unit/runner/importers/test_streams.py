"""The low-level readers: the repairing JSON byte stream and the capped line reader."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from runner.importers.jsonstream import JsonStreamError, RepairingReader, iter_items
from runner.importers.records import INVALID_MARK
from runner.importers.textio import OverlongLine, TextLines, iter_lines

_PIECES = [
    "\\ud800",
    "\\ud83d\\ude00",
    "\\\\",
    "a",
    "\\udc00",
    "\\n",
    "é",
    "\\u00e9",
    "\\\\\\ud800",
    "\\uDBFF",
    "\\uDFFF",
    '\\"',
]


class _Trickle(io.BytesIO):
    """A file that returns at most `size` bytes a read, to cut escapes at every position."""

    def __init__(self, data: bytes, size: int) -> None:
        super().__init__(data)
        self._size = size

    def read(self, n: int | None = -1) -> bytes:
        return super().read(self._size)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=80), st.integers(min_value=1, max_value=40))
def test_lone_surrogate_escapes_become_the_mark_at_any_chunking(
    pieces: list[str], size: int
) -> None:
    literal = '"' + "".join(pieces) + '"'
    expected = re.sub("[\ud800-\udfff]", INVALID_MARK, json.loads(literal))
    (value,) = [item for item in iter_items(_Trickle(("[" + literal + "]").encode(), size), "item")]
    assert value == expected


def test_invalid_utf8_becomes_the_mark_and_split_sequences_survive() -> None:
    data = '["caf\u00e9 \U0001f600", "x'.encode() + b"\xff" + b'"]'
    for size in (1, 2, 3, 5, 64):
        reader = RepairingReader(_Trickle(data, size))
        chunks = []
        while chunk := reader.read(size):
            chunks.append(chunk)
        out = b"".join(chunks)
        assert json.loads(out) == ["caf\u00e9 \U0001f600", "x" + INVALID_MARK]
    assert RepairingReader(io.BytesIO(b"[]")).read(0) == b""  # ijson's probe consumes nothing


def test_overlong_lines_are_counted_and_skipped_not_held(tmp_path: Path) -> None:
    path = tmp_path / "lines.txt"
    path.write_text("short\n" + "z" * 250 + "\nafter\r\nlast", encoding="utf-8")
    assert list(iter_lines(path, 100)) == [
        (1, "short"),
        (2, OverlongLine(length=250, limit=100)),
        (3, "after"),
        (4, "last"),
    ]
    assert (
        OverlongLine(250, 100).reason
        == "line is 250 characters, over the 100 a line may have; skipped"
    )


def test_text_lines_count_past_the_cap_exactly() -> None:
    body = TextLines(keep_up_to=10)
    for line in ["first", "", "second line", "", ""]:
        body.add(line)
    assert body.dropped and body.chars == len("first\n\nsecond line")
    small = TextLines(keep_up_to=100)
    for line in ["a", "", "b", "  ", ""]:
        small.add(line)
    assert not small.dropped and small.text() == "a\n\nb" and small.chars == 4


def test_a_parse_error_is_reported_with_a_byte_range_that_holds_it() -> None:
    data = json.dumps([{"text": "x" * 1000, "n": n} for n in range(500)]).encode()
    broken = data.replace(b'"n": 300', b'"n" 300')
    position = broken.index(b'"n" 300')
    *items, error = iter_items(io.BytesIO(broken), "item")
    assert isinstance(error, JsonStreamError)
    assert len(items) == 300 and error.items_before == 300
    assert error.byte_from <= position <= error.byte_to
    assert error.byte_to - error.byte_from <= 65536 + 64  # within one read-ahead chunk
    truncated = data[: len(data) - 50_000]
    *items, error = iter_items(io.BytesIO(truncated), "item")
    assert isinstance(error, JsonStreamError)
    assert error.detail == "parse error: premature EOF"
    assert error.byte_from <= len(truncated) == error.byte_to
    assert error.reason().endswith(
        f"the {len(items)} records before it were kept, the rest of the file was not read"
    )
