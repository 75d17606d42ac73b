"""Format detection, the iter_records entry point, and the shared record gate."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from runner.importers import (
    RecordError,
    detect_format,
    iter_records,
    message_from_fields,
)
from runner.importers.records import ParsedMessage
from tests.support.importers import chat_file


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        (
            "a.jsonl",
            '{"id": "1", "channel": "general", "author": "a", "ts": "2020-01-01T00:00:00Z", "text": "x"}\n',
            "jsonl",
        ),
        ("a.txt", '{"channel": {"id": "1"}, "id": 5}\n', "jsonl"),  # one complete object: JSONL
        ("a.json", '{\n  "guild": {\n    "id": "1"\n  },\n  "messages": []\n}\n', "discord_json"),
        ("a.data", '{"guild":{"id":"1"},"channel":{"id":"2"},"messages":[]}', "discord_json"),
        ("a.csv", "AuthorID;Author;Date;Content;Attachments;Reactions;\n", "discord_csv"),
        ("a.txt", "\ufeffAuthorID,Author,Date,Content,Attachments,Reactions\n", "discord_csv"),
        (
            "a.txt",
            "=====\nGuild: G\nChannel: c\n=====\n\n[14-Aug-18 11:18 AM] a#1\nhi\n",
            "discord_txt",
        ),
        ("a.txt", "[14-Aug-18 11:18 AM] a#1\nhi\n", "discord_txt"),
        ("a.log", "=== x is now known as y\n[15:01] <gos> hi\n", "irc"),
        ("a.log", "1 [2016-11-21T02:33:15] <a> hi\n", "irc"),
        ("a.log", "[2016-11-21 09:51:26] <a> hi\n", "irc"),
        ("a.log", "[12:00]  * nick waves\n", "irc"),
    ],
)
def test_formats_are_recognized_by_content(
    tmp_path: Path, name: str, content: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    assert detect_format(path) == expected


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("", "is empty"),
        ("<!DOCTYPE html><html></html>", "is HTML"),
        ('[{"type": "message", "ts": "1.0"}]', "is a JSON array: a Slack day file?"),
        ("just some prose\nwithout any chat lines\n", "unrecognized format"),
    ],
)
def test_unknown_content_raises_with_the_reason(tmp_path: Path, content: str, reason: str) -> None:
    path = tmp_path / "thing.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=reason):
        detect_format(path)


def test_a_first_line_longer_than_the_sniffed_head_is_still_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "big.data"
    record = {"id": "1", "author": "a", "ts": "2020-01-01T00:00:00Z", "text": "y" * 100_000}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert detect_format(path) == "jsonl"


def test_folders_missing_paths_and_foreign_csv(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a Slack export folder"):
        detect_format(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        detect_format(tmp_path / "nope.jsonl")
    other = tmp_path / "sales.csv"
    other.write_text("region,amount\nnorth,3\n", encoding="utf-8")
    with pytest.raises(ValueError, match="AuthorID;Author;Date;Content"):
        detect_format(other)
    with pytest.raises(ValueError, match="unknown export format 'xml'"):
        iter_records(other, export_format="xml")


def test_the_real_files_are_detected() -> None:
    assert detect_format(chat_file("discord/komodo_cc-general_48.csv")) == "discord_csv"
    assert detect_format(chat_file("discord/komodo_cc-general_48.txt")) == "discord_txt"
    assert detect_format(chat_file("ubuntu_irc/2010-08-17_18.raw.txt")) == "irc"
    assert detect_format(chat_file("gitter/manual_Gitter.txt")) == "irc"
    assert detect_format(chat_file("gitter/manual_docker.txt")) == "irc"
    with pytest.raises(ValueError, match="is HTML"):
        detect_format(chat_file("discord/komodo_cc-general_48.html"))


def test_message_from_fields_normalizes_types_and_rejects_bad_values() -> None:
    naive = datetime(2024, 1, 1, 12, 0)
    ok = message_from_fields(
        location="messages[0]",
        external_id=12,
        author="ann",
        ts=naive,
        text="hi",
        reply_to=11,
        attachments={"url": "u"},
    )
    assert isinstance(ok, ParsedMessage)
    assert (ok.external_id, ok.reply_to, ok.attachments) == ("12", "11", [{"url": "u"}])
    assert ok.ts == datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
    shifted = message_from_fields(
        location="x",
        external_id="a",
        author="b",
        text="",
        ts=datetime(2024, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=3))),
    )
    assert isinstance(shifted, ParsedMessage) and shifted.ts.hour == 9 and shifted.ts.tzinfo == UTC

    def reason(**fields: object) -> str:
        base: dict[str, object] = {
            "location": "x",
            "external_id": "1",
            "author": "a",
            "ts": naive,
            "text": "t",
        }
        result = message_from_fields(**{**base, **fields})  # type: ignore[arg-type]
        assert isinstance(result, RecordError)
        return result.reason

    assert reason(external_id=None) == "missing message id"
    assert reason(external_id="  ") == "missing message id"
    assert reason(external_id=True) == "message id must be a string, not bool"
    assert reason(author="\x00") == "missing author"
    assert reason(ts="2024-01-01") == "missing timestamp"
    assert reason(text=5) == "text must be a string, not int"
    assert reason(attachments=["u"]) == "attachments must be a list of JSON objects"
    assert (
        reason(text="abc", max_message_chars=2)
        == "message text is 3 characters, over the limit of 2"
    )
    nested = message_from_fields(
        location="x",
        external_id="1",
        author="a",
        ts=naive,
        text="t",
        attachments=[{"name": "f\x00", "meta": {"k": ["\ud800"]}}],
    )
    assert isinstance(nested, ParsedMessage)
    assert nested.attachments == [{"name": "f", "meta": {"k": ["\ufffd"]}}]
    assert len(nested.repairs) == 2
    json.dumps(nested.attachments)
    odd = message_from_fields(
        location="x",
        external_id="1",
        author="a",
        ts=naive,
        text="t",
        attachments=[{"size": float("nan"), "n": 1.5}],
    )
    assert isinstance(odd, ParsedMessage)
    assert odd.attachments == [{"size": None, "n": 1.5}]
    assert odd.repairs == ("replaced a non-finite number (nan) in attachments with null",)
