"""Hostile imports: one bad record never costs a good one.

Deep nesting and huge numbers in JSONL, a Discord JSON export and a Slack export (metadata and
day files) are rejected record by record with their location; every good message is stored
(real PostgreSQL); a parser failing part-way still stores what it parsed before; the JSON guard
gives the same records whatever the read boundaries.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest

import runner.importers.ingest
from runner.importers.detect import iter_records as detect_iter_records
from runner.importers.ingest import ImportStopped, import_path
from runner.importers.jsonguard import MAX_JSON_DEPTH, JsonGuard, line_too_deep
from runner.importers.jsonstream import BadItem, iter_items
from runner.importers.records import ParsedMessage, Record
from runner.importers.records import ParsedMessage as Message

GOOD = 1000
DEEP = "[" * 5000 + "]" * 5000  # RecursionError in json and in clean_json before the fix
HUGE = "9" * 5000  # over Python's 4,300-digit int limit and yajl's 64-bit integers
TOO_DEEP = f"a JSON value nested deeper than {MAX_JSON_DEPTH} levels"


async def stored(pool: asyncpg.Pool) -> set[str]:
    async with pool.acquire() as connection:
        rows = await connection.fetch("SELECT external_id FROM messages")
    return {row["external_id"] for row in rows}


def _discord_message(number: int, extra: str = "") -> str:
    message = {
        "id": f"d{number}",
        "type": "Default",
        "timestamp": f"2021-03-0{1 + number % 9}T10:{number % 60:02d}:00+00:00",
        "author": {"id": "1", "name": "ann", "discriminator": "0000"},
        "content": f'message {number} [with brackets] and "quotes" {"{"}',
        "attachments": [],
    }
    text = json.dumps(message)
    return text[:-1] + ", " + extra + "}" if extra else text


async def test_jsonl_deep_and_huge_lines_are_rejected_and_every_good_line_is_stored(
    db: asyncpg.Pool, tmp_path: Path
) -> None:
    lines = [
        json.dumps({"id": f"j{n}", "author": "ann", "ts": "2021-01-01T00:00:00Z", "text": f"t{n}"})
        for n in range(GOOD)
    ]
    fields = '"author": "a", "ts": "2021-01-01T00:00:00Z", "text": "x"'
    deep = '{"id": "deep", ' + fields + ', "x": ' + DEEP + "}"
    huge = '{"id": "huge", ' + fields + ', "n": ' + HUGE + "}"
    lines[300:300] = [deep]
    lines[700:700] = [huge]
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    report = await import_path(db, path, channel="hostile")

    assert (report.accepted, report.rejected) == (GOOD, 2)
    reasons = {error.location: error.reason for error in report.errors}
    assert reasons == {
        "line 301": TOO_DEEP,
        "line 701": "a JSON number too large to read (over 4,300 digits)",
    }
    assert await stored(db) == {f"j{n}" for n in range(GOOD)}


async def test_discord_json_deep_and_huge_messages_are_rejected_and_the_rest_is_read(
    db: asyncpg.Pool, tmp_path: Path
) -> None:
    messages = [_discord_message(n) for n in range(GOOD)]
    messages[200:200] = [_discord_message(9001, f'"attachments": [{{"x": {DEEP}}}]')]
    messages[500:500] = [_discord_message(9002, f'"reactions": {DEEP}')]
    messages[800:800] = [_discord_message(9003, f'"count": {HUGE}')]
    head = '{"guild": {"id": "1", "name": "g"}, "channel": {"id": "2", "name": "general"},'
    path = tmp_path / "export.json"
    path.write_text(head + '\n"messages": [\n' + ",\n".join(messages) + "\n]}\n", "utf-8")

    report = await import_path(db, path)

    assert (report.accepted, report.rejected) == (GOOD, 3)
    assert {error.location: error.reason for error in report.errors} == {
        "record 201": TOO_DEEP,
        "record 501": TOO_DEEP,
        "record 801": "a JSON number too large to read (over 64-bit integers or double range)",
    }
    assert await stored(db) == {f"d{n}" for n in range(GOOD)}


def _slack_day(channel: str, count: int, extra: dict[int, str]) -> str:
    items = []
    for n in range(count):
        item = json.dumps(
            {"type": "message", "user": "U1", "text": f"{channel} {n}", "ts": f"1600{n:06d}.1"}
        )
        items.append(item[:-1] + ", " + extra[n] + "}" if n in extra else item)
    return "[\n" + ",\n".join(items) + "\n]"


async def test_slack_metadata_and_day_files_with_deep_or_huge_values_lose_only_those(
    db: asyncpg.Pool, tmp_path: Path
) -> None:
    root = tmp_path / "slack"
    root.mkdir()
    channels = [
        '{"id": "C1", "name": "general"}',
        '{"id": "C2", "name": "deep", "purpose": ' + DEEP + "}",
        '{"id": "C3", "name": "huge", "created": ' + HUGE + "}",
        '{"id": "C4", "name": "random"}',
    ]
    (root / "channels.json").write_text("[" + ",\n".join(channels) + "]", encoding="utf-8")
    (root / "users.json").write_text(
        '[{"id": "U1", "name": "ann", "x": ' + DEEP + '}, {"id": "U2", "name": "bob"}]', "utf-8"
    )
    for name in ("general", "random", "deep", "huge"):
        (root / name).mkdir()
    (root / "general" / "2020-09-13.json").write_text(
        _slack_day("general", 600, {100: f'"blocks": {DEEP}', 400: f'"n": {HUGE}'}), "utf-8"
    )
    (root / "random" / "2020-09-13.json").write_text(_slack_day("random", 402, {}), "utf-8")
    (root / "deep" / "2020-09-13.json").write_text(_slack_day("deep", 5, {}), "utf-8")

    report = await import_path(db, root)

    assert report.accepted == GOOD
    assert {error.location: error.reason for error in report.errors} == {
        "users.json entry 1": TOO_DEEP,
        "channels.json entry 2": TOO_DEEP,
        "channels.json entry 3": (
            "a JSON number too large to read (over 64-bit integers or double range)"
        ),
        "general/2020-09-13.json record 101": TOO_DEEP,
        "general/2020-09-13.json record 401": (
            "a JSON number too large to read (over 64-bit integers or double range)"
        ),
    }
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM messages") == GOOD
    assert set(report.channels) == {"general", "random"}


@pytest.mark.parametrize("offload", [False, True], ids=["in-loop", "offloaded"])
async def test_a_parser_failing_part_way_still_stores_the_good_rows_before_it(
    db: asyncpg.Pool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offload: bool
) -> None:
    """Offloaded (the API's upload), the parser runs in a thread 500 records at a time: the
    records of the batch it failed in are stored too."""
    path = tmp_path / "few.jsonl"
    path.write_text('{"id": "1", "author": "a", "ts": 0, "text": "x"}\n', encoding="utf-8")
    real_iter_records = detect_iter_records

    def failing(*args: Any, **kwargs: Any) -> Iterator[Record]:
        (message,) = [r for r in real_iter_records(*args, **kwargs) if isinstance(r, Message)]
        for number in range(1200):  # under one batch (5,000): nothing was written yet
            yield ParsedMessage(**{**message.__dict__, "external_id": f"p{number}"})
        raise OSError("Input/output error")

    monkeypatch.setattr(runner.importers.ingest, "iter_records", failing)
    with pytest.raises(ImportStopped) as stopped:
        await import_path(db, path, channel="failing", offload_parsing=offload)
    assert stopped.value.stage == "parse" and isinstance(stopped.value.cause, OSError)
    assert stopped.value.report.stored == 1200
    assert len(await stored(db)) == 1200


def _items(data: bytes, read_sizes: random.Random | None) -> list[Any]:
    class Source:
        def __init__(self) -> None:
            self.raw = io.BytesIO(data)

        def read(self, size: int) -> bytes:
            return self.raw.read(read_sizes.randint(1, 40) if read_sizes else size)

    return [
        ("bad", item.reason) if isinstance(item, BadItem) else item
        for item in iter_items(Source(), "item")  # type: ignore[arg-type]
    ]


def test_the_guard_gives_the_same_items_at_any_read_boundaries() -> None:
    chooser = random.Random(10)
    pieces = [
        '{"a": "text with [[[ and \\" and \\\\"}',
        '{"n": -9223372036854775807, "f": 1.5e300, "g": -0.25e-3}',
        '{"deep": ' + "[" * 70 + "]" * 70 + ', "after": "kept"}',
        '{"big": 9223372036854775808}',
        '{"big": -9223372036854775808}',
        '{"float": 1e400}',
        '{"s": "9999999999999999999999999 ]]]] {{{ \\\\\\\\"}',
        '{"edge": ' + "[" * 62 + "1" + "]" * 62 + "}",
        '{"long": ' + "1" * 6000 + "}",
    ]
    for _ in range(60):
        chosen = [chooser.choice(pieces) for _ in range(8)]
        data = ("[" + ", ".join(chosen) + "]").encode()
        whole = _items(data, None)
        assert _items(data, chooser) == whole
        assert len(whole) == len(chosen)
    expected_bad = {2: TOO_DEEP, 3: "big", 4: "big", 5: "big", 8: "big"}
    for index, piece in enumerate(pieces):
        (item,) = _items(("[" + piece + "]").encode(), None)
        if index in expected_bad:
            assert isinstance(item, tuple) and expected_bad[index] in item[1].replace(
                "too large", "big"
            ), (index, item)
        else:
            assert item == json.loads(piece), index


def test_depth_limits_in_one_line_and_in_a_stream_agree() -> None:
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    over = "[" + at_limit + "]"
    assert not line_too_deep(at_limit) and line_too_deep(over)
    assert not line_too_deep('"' + "[" * 500 + '"')  # brackets inside a string do not count
    guard = JsonGuard()
    assert guard.feed(at_limit, final=True) == at_limit and guard.replaced == 0
    assert JsonGuard().feed(over, final=True) != over


def test_message_from_fields_refuses_attachments_nested_too_deep_without_recursing() -> None:
    from runner.importers.records import RecordError, message_from_fields

    deep: Any = {}
    for _ in range(5000):
        deep = {"x": [deep]}
    fields: dict[str, Any] = {
        "location": "record 1",
        "external_id": "1",
        "author": "a",
        "ts": datetime(2021, 1, 1),
        "text": "t",
    }
    rejected = message_from_fields(**fields, attachments=[deep])
    assert rejected == RecordError("record 1", "attachments nested deeper than 64 levels")
    shallow = message_from_fields(**fields, attachments=[{"a": [{"b": 1}]}])
    assert isinstance(shallow, ParsedMessage) and shallow.attachments == [{"a": [{"b": 1}]}]


def test_long_skipped_regions_and_backslash_runs_stream_in_bounded_time() -> None:
    # 400 KB of nesting read 1-40 bytes at a time: the guard hands the parser nothing for ~20,000
    # reads in a row, so the reader must loop, not recurse.
    deep = "[" * 200_000 + "]" * 200_000
    data = f'[{{"a": 1}}, {{"deep": {deep}}}, {{"b": 2}}]'.encode()
    assert _items(data, random.Random(3)) == [{"a": 1}, ("bad", TOO_DEEP), {"b": 2}]
    # A 2 MB run of escaped backslashes: neither carried over and rescanned read after read, nor
    # tried by the surrogate-escape regex from each of its positions (both were quadratic).
    slashes = "\\\\" * 1_000_000
    data = f'[{{"s": "{slashes}"}}, {{"b": 2}}]'.encode()
    assert _items(data, None) == [{"s": "\\" * 1_000_000}, {"b": 2}]


def test_a_minified_discord_export_with_a_deep_message_is_still_detected_and_read(
    tmp_path: Path,
) -> None:
    # One line for the whole file: detection decodes that line, which used to recurse.
    from runner.importers import detect_format, iter_records

    messages = [_discord_message(1), _discord_message(2, f'"embeds": {DEEP}'), _discord_message(3)]
    path = tmp_path / "minified.json"
    path.write_text('{"guild": {"id": "1", "name": "g"}, "messages": [' + ",".join(messages) + "]}")
    assert detect_format(path) == "discord_json"
    records = list(iter_records(path))
    assert [type(record).__name__ for record in records] == [
        "ParsedMessage",
        "RecordError",
        "ParsedMessage",
    ]
