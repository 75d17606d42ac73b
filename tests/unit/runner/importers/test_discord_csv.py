"""DiscordChatExporter CSV import: the real komodo export, stable synthetic ids, bad rows."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from runner.importers import detect_format, iter_records
from runner.importers.records import RecordError
from tests.support.importers import FIVE_MB, chat_file, error_at, message_at, split

HEADER = "AuthorID;Author;Date;Content;Attachments;Reactions;\n"


def _row(author_id: str, author: str, date: str, content: str, attachments: str = "") -> str:
    cells = [author_id, author, date, content, attachments, ""]
    return ";".join('"' + cell.replace('"', '""') + '"' for cell in cells) + ";\n"


def test_the_real_komodo_export_has_100_messages_with_code_blocks_intact() -> None:
    path = chat_file("discord/komodo_cc-general_48.csv")
    assert detect_format(path) == "discord_csv"
    messages, errors = split(iter_records(path))
    assert errors == []
    assert len(messages) == 100  # the TXT export's header says "Messages: 100"
    first = messages[0]
    assert first.author == "SHossain#0007"
    assert first.ts == datetime(2018, 8, 14, 11, 18, tzinfo=UTC)
    assert first.location == "record 1 (line 2)"
    # A quoted multi-line code block survives line for line.
    assert first.text.startswith(
        "```\nc0497a33e696da732c505d78dc0d04d08eda83ebefc45e1901e5aa4f6e4473b2 winnings"
    )
    assert first.text.endswith("\n```") and first.text.count("\n") == 4
    assert messages[1].location == "record 2 (line 7)"  # the first record spanned lines 2-6
    assert messages[-1].ts == datetime(2018, 8, 14, 15, 14, tzinfo=UTC)
    with_files = [m for m in messages if m.attachments]
    assert [a["url"].rsplit("/", 1)[1] for m in with_files for a in m.attachments] == [
        "dicebet-winning-error",
        "Screenshot_from_2018-08-14_15-21-26.png",
    ]
    ids = [m.external_id for m in messages]
    assert len(set(ids)) == 100 and all(i.startswith("csv-") for i in ids)
    assert ids == [m.external_id for m in split(iter_records(path))[0]]  # parsing twice: same ids


def test_ids_are_stable_when_a_later_export_covers_more_and_repeats_get_suffixes(
    tmp_path: Path,
) -> None:
    rows = [
        _row("1", "ann#0001", "14-Aug-18 11:18 AM", "hello"),
        _row("1", "ann#0001", "14-Aug-18 11:18 AM", "hello"),  # an identical repeat
        _row("2", "bob#0002", "14-Aug-18 11:19 AM", "multi\nline\n```code```"),
    ]
    early = tmp_path / "early.csv"
    early.write_text(HEADER + "".join(rows), encoding="utf-8")
    later = tmp_path / "later.csv"
    later.write_text(
        HEADER + "".join(rows) + _row("1", "ann#0001", "15-Aug-18 09:00 PM", "next day"),
        encoding="utf-8",
    )
    early_ids = [m.external_id for m in split(iter_records(early))[0]]
    later_ids = [m.external_id for m in split(iter_records(later))[0]]
    assert early_ids[1] == early_ids[0] + "-2"
    assert later_ids[:3] == early_ids
    assert len(set(later_ids)) == 4


def test_bad_rows_are_rejected_with_record_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    body = (
        HEADER
        + _row("1", "ann#0001", "14-Aug-18 11:18 AM", "good\nwith two lines")  # record 1, lines 2-3
        + _row("1", "ann#0001", "32-Aug-18 11:18 AM", "bad date")  # record 2, line 4
        + _row("1", "", "14-Aug-18 11:18 AM", "no author")  # 3
        + _row("1", "ann#0001", "14-Aug-18 11:19 AM", "nul\x00inside")  # 4
        + _row("1", "ann#0001", "14-Aug-18 11:19 AM", "MARK")  # 5
        + _row("1", "ann#0001", "14-Aug-18 11:20 AM", FIVE_MB)  # 6
        + '"1";"ann#0001"\n'  # 7: too few columns
        + _row("1", "ann#0001", "", "no date")  # 8
        + _row("2", "bob#0002", "14-Aug-18 11:21 AM", "good again")  # 9
        + '"3";"cy#0003";"14-Aug-18 11:22 AM";"unterminated quote\nto the end\n'  # 10: truncated
    )
    path.write_bytes(body.encode().replace(b"MARK", b"bytes \xed\xa0\x80 here"))
    messages, errors = split(iter_records(path))
    assert [m.location for m in messages] == [
        "record 1 (line 2)",
        "record 4 (line 6)",
        "record 5 (line 7)",
        "record 9 (line 11)",
    ]
    assert (
        error_at(errors, "record 2 (line 4)").reason == "unparseable timestamp '32-Aug-18 11:18 AM'"
    )
    assert error_at(errors, "record 3 (line 5)").reason == "missing author"
    assert (
        error_at(errors, "record 6 (line 8)").reason
        == "message text is 5,242,880 characters, over the limit of 200,000"
    )
    assert error_at(errors, "record 7 (line 9)").reason == "expected 6 columns, found 2"
    assert error_at(errors, "record 8 (line 10)").reason == "missing timestamp"
    assert error_at(errors, "record 10 (line 12)").reason == "expected 6 columns, found 4"
    assert len(errors) == 6
    nul = message_at(messages, "record 4 (line 6)")
    assert nul.text == "nulinside" and nul.repairs == ("removed 1 NUL character from text",)
    surrogate = message_at(messages, "record 5 (line 7)")  # a UTF-8-encoded lone surrogate
    assert surrogate.text == "bytes \ufffd\ufffd\ufffd here"
    assert surrogate.repairs == (
        "replaced 3 invalid surrogates or undecodable bytes in text with U+FFFD",
    )


def test_comma_separated_export_with_iso_dates(tmp_path: Path) -> None:
    path = tmp_path / "new.csv"
    path.write_text(
        "AuthorID,Author,Date,Content,Attachments,Reactions\n"
        '"1","ann","2020-04-13T20:16:46.213+02:00","hi, there","https://a/1.png,https://a/2.png",""\n',
        encoding="utf-8",
    )
    (message,) = split(iter_records(path))[0]
    assert message.text == "hi, there"
    assert message.ts == datetime(2020, 4, 13, 18, 16, 46, 213000, tzinfo=UTC)
    assert [a["url"] for a in message.attachments] == ["https://a/1.png", "https://a/2.png"]


def test_a_csv_without_the_columns_is_refused_with_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text("AuthorID;Author;Content\n1;a;b\n", encoding="utf-8")
    (error,) = iter_records(path, export_format="discord_csv")
    assert error == RecordError("line 1", "not a DiscordChatExporter CSV header: no Date column")
