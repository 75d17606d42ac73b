"""JSONL import: good lines, every kind of bad line, and the repairs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from runner.importers import ParseStats, iter_records
from tests.support.importers import FIVE_MB, error_at, split


def _line(**fields: object) -> str:
    base: dict[str, object] = {
        "id": "m1",
        "channel": "general",
        "author": "ann",
        "ts": "2024-03-01T10:00:00Z",
        "text": "hi",
    }
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...})


def test_good_lines_are_parsed_with_string_ids_utc_and_optional_fields(tmp_path: Path) -> None:
    path = tmp_path / "export.jsonl"
    path.write_text(
        "\n".join(
            [
                _line(id=17, ts="2024-03-01T12:00:00+02:00"),
                _line(
                    id="m2", reply_to=17, attachments=[{"url": "https://x/a.png"}], server="acme"
                ),
                "",
                _line(id="m3", ts="2024-03-01 11:00:00", text=None),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    stats = ParseStats()
    messages, errors = split(iter_records(path, stats=stats))
    assert errors == []
    assert [m.external_id for m in messages] == ["17", "m2", "m3"]
    assert messages[0].ts == datetime(2024, 3, 1, 10, 0, tzinfo=UTC)
    assert messages[0].channel == "general" and messages[0].location == "line 1"
    assert messages[1].reply_to == "17" and messages[1].server == "acme"
    assert messages[1].attachments == [{"url": "https://x/a.png"}]
    assert messages[2].location == "line 4"
    assert messages[2].ts == datetime(2024, 3, 1, 11, 0, tzinfo=UTC)  # zone-less: UTC
    assert messages[2].text == ""
    assert stats.skipped["blank line"] == 1


def test_bad_lines_are_rejected_with_line_and_reason_and_good_ones_survive(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    lines = [
        _line(id="ok1"),
        _line(id=...),  # 2: missing id
        _line(id="b3", ts="yesterday-ish"),  # 3: bad timestamp
        '{"id": "b4", "author": "ann", "ts": "2024-03-01T10:00:00Z", "text": "broken"',  # 4
        _line(id="b5", text=FIVE_MB),  # 5: a 5 MB message
        _line(id="b6", author=...),  # 6: missing author
        "[1, 2]",  # 7: not an object
        _line(id="b8", attachments="nope"),  # 8
        _line(id="ok9", text="still fine"),
        '{"id": "b10", "author": "ann", "ts": "2024-03-01T1',  # 10: truncated last line
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    messages, errors = split(iter_records(path))
    assert [m.external_id for m in messages] == ["ok1", "ok9"]
    assert error_at(errors, "line 2").reason == "missing message id"
    assert error_at(errors, "line 3").reason == "unparseable timestamp 'yesterday-ish'"
    assert error_at(errors, "line 4").reason.startswith("malformed JSON: Expecting ',' delimiter")
    assert (
        error_at(errors, "line 5").reason
        == "message text is 5,242,880 characters, over the limit of 200,000"
    )
    assert error_at(errors, "line 6").reason == "missing author"
    assert error_at(errors, "line 7").reason == "expected a JSON object, got list"
    assert error_at(errors, "line 8").reason == "attachments must be a list of JSON objects"
    assert error_at(errors, "line 10").reason.startswith("malformed JSON: Unterminated string")
    assert len(errors) == 8


def test_nul_bytes_surrogates_and_undecodable_bytes_are_repaired_and_noted(tmp_path: Path) -> None:
    path = tmp_path / "repair.jsonl"
    nul = _line(id="n1", text="a\u0000b\u0000c")  # json.dumps writes the NULs as \u0000
    surrogate = '{"id": "s2", "author": "bo\\udfffb", "ts": "2024-03-01T10:00:00Z", "text": "x \\ud800 y \\ud83d\\ude00"}'
    path.write_bytes(
        nul.encode()
        + b"\n"
        + surrogate.encode()
        + b"\n"
        + b'{"id": "u3", "author": "ann", "ts": "2024-03-01T10:00:00Z", "text": "caf\xe9 ok"}\n'
    )
    messages, errors = split(iter_records(path))
    assert errors == []
    first, second, third = messages
    assert first.text == "abc"
    assert first.repairs == ("removed 2 NUL characters from text",)
    assert second.text == "x \ufffd y \U0001f600"  # the valid pair is kept
    assert second.author == "bo\ufffdb"
    assert second.repairs == (
        "replaced 1 invalid surrogate or undecodable byte in text with U+FFFD",
        "replaced 1 invalid surrogate or undecodable byte in author with U+FFFD",
    )
    assert third.text == "caf\ufffd ok"  # Latin-1 byte in a UTF-8 file
    assert third.repairs and "undecodable" in third.repairs[0]
    for message in messages:
        message.text.encode("utf-8")  # storable: no surrogate left


def test_a_large_file_streams_with_constant_memory(tmp_path: Path) -> None:
    import tracemalloc

    path = tmp_path / "big.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for number in range(30_000):
            handle.write(_line(id=f"m{number}", text="some words " * 20) + "\n")
    tracemalloc.start()
    count = sum(1 for _ in iter_records(path))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count == 30_000
    assert peak < 5 * 1024 * 1024, f"peak {peak} bytes: records are being held"
