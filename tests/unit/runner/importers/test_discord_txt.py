"""DiscordChatExporter TXT import: the real export matches its CSV twin; bad messages."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from runner.importers import ParseStats, detect_format, iter_records
from tests.support.importers import FIVE_MB, chat_file, error_at, message_at, split

HEADER = (
    "=" * 62 + "\nGuild: Acme\nChannel: dev-talk\nTopic: things\nMessages: 3\n" + "=" * 62 + "\n\n"
)


def test_the_real_txt_export_equals_the_csv_export_of_the_same_channel() -> None:
    txt = chat_file("discord/komodo_cc-general_48.txt")
    csv = chat_file("discord/komodo_cc-general_48.csv")
    assert detect_format(txt) == "discord_txt"
    from_txt, errors = split(iter_records(txt))
    from_csv, _ = split(iter_records(csv))
    assert errors == []
    assert len(from_txt) == 100  # "Messages: 100" in the header
    assert {(m.server, m.channel) for m in from_txt} == {("Komodo", "cc-general")}
    assert [(m.author, m.ts, m.text) for m in from_txt] == [
        (m.author, m.ts, m.text) for m in from_csv
    ]
    urls = [[a["url"] for a in m.attachments if a["kind"] == "attachment"] for m in from_txt]
    assert urls == [[a["url"] for a in m.attachments] for m in from_csv]
    embeds = [
        (m.location, a["lines"][0]) for m in from_txt for a in m.attachments if a["kind"] == "embed"
    ]
    assert embeds == [
        ("line 449", "https://gist.github.com/himu007/e66cc728ae08d02dbf4702e10a4317f0")
    ]
    assert (
        message_at(from_txt, "line 449").text
        == "https://gist.github.com/himu007/e66cc728ae08d02dbf4702e10a4317f0"
    )
    assert from_txt[0].location == "line 11"
    assert all(m.external_id.startswith("txt-") for m in from_txt)
    assert len({m.external_id for m in from_txt}) == 100


def test_blocks_blank_lines_inside_text_and_the_footer(tmp_path: Path) -> None:
    path = tmp_path / "chan.txt"
    path.write_text(
        HEADER
        + "[14-Aug-18 11:18 AM] ann#0001\nfirst\n\nsecond paragraph\n\n"
        + "[14-Aug-18 11:19 AM] bob#0002\n\n{Attachments}\nhttps://cdn/a.png\n\n{Reactions}\nthumbsup (2)\n\n"
        + "[14-Aug-18 11:20 AM] ann#0001\nHeading\n=======\nlast\n\n"
        + "=" * 62
        + "\nExported 3 message(s)\n"
        + "=" * 62
        + "\n",
        encoding="utf-8",
    )
    messages, errors = split(iter_records(path))
    assert errors == []
    assert [m.text for m in messages] == ["first\n\nsecond paragraph", "", "Heading\n=======\nlast"]
    assert messages[1].attachments == [{"kind": "attachment", "url": "https://cdn/a.png"}]
    assert messages[0].ts == datetime(2018, 8, 14, 11, 18, tzinfo=UTC)
    assert [m.location for m in messages] == ["line 8", "line 13", "line 21"]


def test_bad_messages_are_rejected_with_their_line_and_neighbours_kept(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    body = (
        HEADER  # lines 1-7
        + "[14-Aug-18 11:18 AM] ann#0001\ngood one\n\n"  # 8
        + "[32-Aug-18 11:18 AM] ann#0001\nbad date text\nspans lines\n\n"  # 11
        + "[14-Aug-18 11:19 AM] \nno author\n\n"  # 15
        + "[14-Aug-18 11:19 AM] ann#0001\nnul\x00here\n\n"  # 18
        + "[14-Aug-18 11:19 AM] ann#0001\nMARK\n\n"  # 21
        + "[14-Aug-18 11:20 AM] ann#0001\n"
        + FIVE_MB
        + "\n\n"  # 24
        + "[14-Aug-18 11:21 AM] bob#0002\nstill good\n"  # 27
    )
    path.write_bytes(body.encode().replace(b"MARK", b"cut \xf0\x9f here"))
    stats = ParseStats()
    messages, errors = split(iter_records(path, stats=stats))
    assert [m.location for m in messages] == ["line 8", "line 18", "line 21", "line 27"]
    assert error_at(errors, "line 11").reason == "unparseable timestamp '32-Aug-18 11:18 AM'"
    assert error_at(errors, "line 15").reason == "missing author"
    assert (
        error_at(errors, "line 24").reason
        == "message text is 5,242,880 characters, over the limit of 200,000"
    )
    assert len(errors) == 3
    assert (
        message_at(messages, "line 8").text == "good one"
    )  # the bad date's text did not leak into it
    assert message_at(messages, "line 18").repairs == ("removed 1 NUL character from text",)
    assert message_at(messages, "line 21").text == "cut \ufffd\ufffd here"
    assert stats.skipped == {}


def test_ids_survive_appending_messages(tmp_path: Path) -> None:
    path = tmp_path / "grow.txt"
    base = HEADER + "[14-Aug-18 11:18 AM] ann#0001\nhi\n\n[14-Aug-18 11:18 AM] ann#0001\nhi\n\n"
    path.write_text(base, encoding="utf-8")
    before = [m.external_id for m in split(iter_records(path))[0]]
    path.write_text(base + "[14-Aug-18 11:30 AM] bob#0002\nnew\n\n", encoding="utf-8")
    after = [m.external_id for m in split(iter_records(path))[0]]
    assert before[1] == before[0] + "-2"
    assert after[:2] == before and len(after) == 3
