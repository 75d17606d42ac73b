"""DiscordChatExporter JSON import: structure, replies, attachments, bad and truncated files."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.importers import ParseStats, detect_format, iter_records
from tests.support.importers import FIVE_MB, error_at, message_at, split


def _message(number: int, **fields: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": f"90000000000000{number:04d}",
        "type": "Default",
        "timestamp": f"2021-05-04T10:{number % 60:02d}:00.123+02:00",
        "timestampEdited": None,
        "isPinned": False,
        "content": f"message {number}",
        "author": {
            "id": "111",
            "name": "ann",
            "discriminator": "0420",
            "nickname": "Annie",
            "isBot": False,
        },
        "attachments": [],
        "embeds": [],
        "reactions": [],
        "mentions": [],
    }
    message.update(fields)
    return {k: v for k, v in message.items() if v is not ...}


def _export(messages: list[Any]) -> dict[str, Any]:
    return {
        "guild": {"id": "1", "name": "Komodo", "iconUrl": "https://cdn/x.png"},
        "channel": {
            "id": "42",
            "type": "GuildTextChat",
            "category": "dev",
            "name": "cc-general",
            "topic": None,
        },
        "dateRange": {"after": None, "before": None},
        "messages": messages,
        "messageCount": len(messages),
    }


def _write(tmp_path: Path, data: Any, name: str = "export.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def test_messages_come_with_guild_channel_replies_and_attachments(tmp_path: Path) -> None:
    attachment = {"id": "5", "url": "https://cdn/a.log", "fileName": "a.log", "fileSizeBytes": 1200}
    embed = {"title": "Docs", "url": "https://docs", "description": "d", "color": 0.5}
    path = _write(
        tmp_path,
        _export(
            [
                _message(1),
                _message(
                    2,
                    type="Reply",
                    reference={
                        "messageId": "900000000000000001",
                        "channelId": "42",
                        "guildId": "1",
                    },
                    attachments=[attachment],
                    embeds=[embed],
                    author={"id": "2", "name": "bob", "discriminator": "0"},
                ),
                _message(3, type="GuildMemberJoin", content="Joined the server."),
                _message(
                    4, reference={"messageId": "7", "channelId": "999"}
                ),  # crosspost: no reply
            ]
        ),
    )
    assert detect_format(path) == "discord_json"
    stats = ParseStats()
    messages, errors = split(iter_records(path, stats=stats))
    assert errors == []
    assert [m.location for m in messages] == ["record 1", "record 2", "record 4"]
    first, reply, crosspost = messages
    assert (first.server, first.channel, first.channel_external_id) == (
        "Komodo",
        "cc-general",
        "42",
    )
    assert first.external_id == "900000000000000001"
    assert first.author == "ann#0420"
    assert first.ts == datetime(2021, 5, 4, 8, 1, 0, 123000, tzinfo=UTC)
    assert reply.author == "bob"  # new-style names have the "0" discriminator
    assert reply.reply_to == "900000000000000001"
    assert reply.attachments == [{**attachment, "kind": "attachment"}, {**embed, "kind": "embed"}]
    assert crosspost.reply_to is None
    assert stats.skipped["Discord system message (GuildMemberJoin)"] == 1


def test_bad_records_are_rejected_with_record_number_and_the_rest_kept(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        _export(
            [
                _message(1),
                _message(2, id=...),
                _message(3, timestamp="not a time"),
                _message(4, content="nul\u0000here"),
                _message(5, content="lone \ud800 half"),
                _message(6, content=FIVE_MB),
                _message(7, author={"id": "9"}),
                "not an object",
                _message(9),
            ]
        ),
    )
    messages, errors = split(iter_records(path))
    assert [m.location for m in messages] == ["record 1", "record 4", "record 5", "record 9"]
    assert error_at(errors, "record 2").reason == "missing message id"
    assert error_at(errors, "record 3").reason == "unparseable timestamp 'not a time'"
    assert (
        error_at(errors, "record 6").reason
        == "message text is 5,242,880 characters, over the limit of 200,000"
    )
    assert error_at(errors, "record 7").reason == "missing author"
    assert error_at(errors, "record 8").reason == "expected a message object, got str"
    assert message_at(messages, "record 4").text == "nulhere"
    assert message_at(messages, "record 4").repairs == ("removed 1 NUL character from text",)
    lone = message_at(messages, "record 5")
    assert lone.text == "lone \ufffd half"
    assert lone.repairs == ("replaced 1 invalid surrogate or undecodable byte in text with U+FFFD",)


def test_invalid_utf8_bytes_do_not_stop_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, _export([_message(1, content="MARK"), _message(2)]))
    path.write_bytes(path.read_bytes().replace(b"MARK", b"bad \xff\xfe byte"))
    messages, errors = split(iter_records(path))
    assert errors == []
    assert messages[0].text == "bad \ufffd\ufffd byte"
    assert messages[0].repairs == (
        "replaced 2 invalid surrogates or undecodable bytes in text with U+FFFD",
    )
    assert len(messages) == 2


def test_a_truncated_file_keeps_what_came_before_and_says_where(tmp_path: Path) -> None:
    whole = json.dumps(_export([_message(n) for n in range(1, 6)]), indent=2).encode()
    cut = whole.index(b'"message 4"')
    path = tmp_path / "truncated.json"
    path.write_bytes(whole[:cut])
    messages, errors = split(iter_records(path, export_format="discord_json"))
    assert [m.location for m in messages] == ["record 1", "record 2", "record 3"]
    (error,) = errors
    assert error.location == "record 4"
    assert "premature EOF" in error.reason
    assert "the 3 records before it were kept" in error.reason
    assert f"and {cut:,}" in error.reason  # the byte range ends at the end of the file


def test_malformed_json_in_the_middle_stops_with_the_record_number(tmp_path: Path) -> None:
    whole = json.dumps(_export([_message(n) for n in range(1, 4)]), indent=2)
    path = tmp_path / "broken.json"
    path.write_text(
        whole.replace('"content": "message 2"', '"content" "message 2"'), encoding="utf-8"
    )
    messages, errors = split(iter_records(path))
    assert [m.location for m in messages] == ["record 1"]
    assert errors[0].location == "record 2"
    assert "must be separated by a colon" in errors[0].reason


def test_a_file_broken_before_the_messages_and_one_without_them(tmp_path: Path) -> None:
    broken = tmp_path / "head.json"
    broken.write_text('{"guild": {"id": "1", "name": ', encoding="utf-8")
    (error,) = iter_records(broken, export_format="discord_json")
    assert error.location == "record 1" and "before the messages list" in error.reason  # type: ignore[union-attr]
    other = _write(tmp_path, {"guild": {"name": "x"}, "channel": {"name": "y"}}, "nomessages.json")
    (error,) = iter_records(other)
    assert 'no top-level "messages" list' in error.reason  # type: ignore[union-attr]


def test_minified_export_is_detected_and_parsed(tmp_path: Path) -> None:
    path = tmp_path / "min.json"
    path.write_text(json.dumps(_export([_message(1), _message(2)])), encoding="utf-8")
    assert detect_format(path) == "discord_json"
    messages, errors = split(iter_records(path))
    assert len(messages) == 2 and errors == []
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # with a UTF-8 byte order mark
    assert detect_format(path) == "discord_json"
    assert len(split(iter_records(path))[0]) == 2
