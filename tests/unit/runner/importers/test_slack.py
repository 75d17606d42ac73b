"""Slack export folders: channels, users, threads, files, skipped events, bad records."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.importers import ParseStats, detect_format, iter_records
from runner.importers.records import RecordError
from tests.support.importers import FIVE_MB, error_at, message_at, split


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")


def _export(root: Path) -> Path:
    _write(
        root / "channels.json", [{"id": "C1", "name": "general"}, {"id": "C2", "name": "random"}]
    )
    _write(
        root / "users.json",
        [
            {
                "id": "U1",
                "name": "ann",
                "real_name": "Ann Lee",
                "profile": {"display_name": "annie", "real_name": "Ann Lee"},
            },
            {"id": "U2", "name": "bob", "profile": {"display_name": "", "real_name": "Bob Stone"}},
        ],
    )
    _write(
        root / "general" / "2017-08-22.json",
        [
            {
                "type": "message",
                "user": "U1",
                "text": "deploy &lt;today&gt; &amp; tell <@U2>",
                "ts": "1503435956.000247",
            },
            {
                "type": "message",
                "subtype": "channel_join",
                "user": "U2",
                "text": "<@U2> has joined",
                "ts": "1503435957.000100",
            },
            {
                "type": "message",
                "user": "U2",
                "text": "on it",
                "ts": "1503435960.000300",
                "thread_ts": "1503435956.000247",
                "files": [
                    {
                        "id": "F1",
                        "name": "log.txt",
                        "mimetype": "text/plain",
                        "url_private": "https://f/log.txt",
                        "thumb_64": "t",
                    }
                ],
            },
            {
                "type": "message",
                "user": "U1",
                "text": "parent",
                "ts": "1503435970.000001",
                "thread_ts": "1503435970.000001",
            },
            {
                "type": "message",
                "subtype": "bot_message",
                "username": "ci-bot",
                "text": "build ok",
                "ts": "1503435980.000000",
            },
        ],
    )
    _write(
        root / "general" / "2017-08-23.json",
        [{"type": "message", "user": "U9", "text": "unknown user", "ts": "1503522000.000000"}],
    )
    _write(
        root / "random" / "2017-08-22.json",
        [{"type": "message", "user": "U2", "text": "hi random", "ts": "1503435999.000001"}],
    )
    (root / "stray").mkdir()
    return root


def test_a_slack_folder_streams_every_channel_and_day(tmp_path: Path) -> None:
    root = _export(tmp_path / "export")
    assert detect_format(root) == "slack"
    stats = ParseStats()
    messages, errors = split(iter_records(root, stats=stats))
    assert errors == []
    assert [m.location for m in messages] == [
        "general/2017-08-22.json record 1",
        "general/2017-08-22.json record 3",
        "general/2017-08-22.json record 4",
        "general/2017-08-22.json record 5",
        "general/2017-08-23.json record 1",
        "random/2017-08-22.json record 1",
    ]
    first, reply, parent, bot, unknown, other = messages
    assert (
        first.external_id,
        first.author,
        first.channel,
        first.channel_external_id,
        first.server,
    ) == ("1503435956.000247", "annie", "general", "C1", None)
    assert first.ts == datetime(2017, 8, 22, 21, 5, 56, 247, tzinfo=UTC)
    assert first.text == "deploy <today> & tell <@U2>"
    assert reply.author == "Bob Stone" and reply.reply_to == "1503435956.000247"
    assert reply.attachments == [
        {
            "kind": "file",
            "id": "F1",
            "name": "log.txt",
            "mimetype": "text/plain",
            "url_private": "https://f/log.txt",
        }
    ]
    assert parent.reply_to is None  # thread_ts equal to ts: the thread's parent
    assert bot.author == "ci-bot"
    assert unknown.author == "U9"
    assert (other.channel, other.channel_external_id) == ("random", "C2")
    assert stats.skipped == {"Slack channel_join": 1, "folder not listed in channels.json": 1}


def test_bad_records_and_a_truncated_day_file(tmp_path: Path) -> None:
    root = tmp_path / "export"
    _write(root / "channels.json", [{"id": "C1", "name": "general"}])
    _write(
        root / "general" / "2020-01-02.json",
        [
            {"type": "message", "user": "U1", "text": "ok"},  # 1: no ts, the id
            {"type": "message", "user": "U1", "text": "x", "ts": "yesterday"},  # 2
            {"type": "message", "text": "who?", "ts": "1577923200.000001"},  # 3: no author
            {"type": "message", "user": "U1", "text": "a\u0000b", "ts": "1577923200.000002"},  # 4
            {"type": "message", "user": "U1", "text": "s \ud800", "ts": "1577923200.000003"},  # 5
            {"type": "message", "user": "U1", "text": FIVE_MB, "ts": "1577923200.000004"},  # 6
            {"type": "message", "user": "U1", "text": "fine", "ts": "1577923200.000005"},  # 7
        ],
    )
    day = json.dumps(
        [
            {"type": "message", "user": "U1", "text": f"m{n}", "ts": f"1578009600.00000{n}"}
            for n in range(1, 4)
        ]
    )
    (root / "general" / "2020-01-03.json").write_text(day[: day.index('"m3"')], encoding="utf-8")
    _write(
        root / "general" / "2020-01-04.json",
        [{"type": "message", "user": "U1", "text": "after", "ts": "1578096000.000001"}],
    )
    messages, errors = split(iter_records(root))
    where = "general/2020-01-02.json record "
    assert error_at(errors, where + "1").reason == "missing message id (ts)"
    assert error_at(errors, where + "2").reason == "unparseable timestamp (ts) 'yesterday'"
    assert error_at(errors, where + "3").reason == "missing author"
    assert (
        error_at(errors, where + "6").reason
        == "message text is 5,242,880 characters, over the limit of 200,000"
    )
    truncated = error_at(errors, "general/2020-01-03.json record 3")
    assert (
        "premature EOF" in truncated.reason
        and "the 2 records before it were kept" in truncated.reason
    )
    assert len(errors) == 5
    assert message_at(messages, where + "4").text == "ab"
    assert message_at(messages, where + "5").text == "s \ufffd"
    assert message_at(messages, where + "5").repairs == (
        "replaced 1 invalid surrogate or undecodable byte in text with U+FFFD",
    )
    assert [m.text for m in messages][-4:] == [
        "fine",
        "m1",
        "m2",
        "after",
    ]  # the next file still read


def test_broken_metadata_is_reported_not_raised(tmp_path: Path) -> None:
    root = tmp_path / "export"
    root.mkdir()
    (root / "channels.json").write_text('[{"id": "C1", "name": ', encoding="utf-8")
    (error,) = iter_records(root)
    assert isinstance(error, RecordError)
    assert error.location == "channels.json"
    assert error.reason.startswith("malformed JSON") and error.reason.endswith(
        "nothing was imported"
    )
    _write(root / "channels.json", [{"id": "C1", "name": "general"}])
    (root / "users.json").write_text("{oops", encoding="utf-8")
    _write(
        root / "general" / "2020-01-02.json",
        [{"type": "message", "user": "U1", "text": "t", "ts": "1.5"}],
    )
    messages, errors = split(iter_records(root))
    assert errors[0].location == "users.json" and "shown by user id" in errors[0].reason
    assert messages[0].author == "U1"
