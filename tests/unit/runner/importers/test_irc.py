"""IRC-style and Gitter logs: real files, dates and day roll-over, skips, bad lines, stable ids."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

from runner.importers import ParseStats, detect_format, iter_records
from tests.support.importers import FIVE_MB, chat_file, error_at, message_at, split


def _utc(year: int, month: int, day: int, hour: int, minute: int, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def test_the_real_ubuntu_irc_log() -> None:
    path = chat_file("ubuntu_irc/2010-08-17_18.raw.txt")
    assert detect_format(path) == "irc"
    stats = ParseStats()
    messages, errors = split(iter_records(path, stats=stats))
    assert errors == []
    # Counted by hand: 1445 "[HH:MM] <nick>" lines, 3 "[HH:MM]  * nick ..." actions and 52
    # "=== x is now known as y" lines among the 1500.
    assert len(messages) == 1448
    assert stats.skipped == {"system line": 52}
    first, last = messages[0], messages[-1]
    assert (first.author, first.ts) == (
        "gos",
        _utc(2010, 8, 17, 15, 1),
    )  # the date is the file name's
    assert first.text == "Hi, if i have adware tracking cookie on linux how can remove it?"
    assert (last.location, last.author, last.ts) == (
        "line 1500",
        "KomiaPoika",
        _utc(2010, 8, 17, 19, 52),
    )
    action = [m for m in messages if m.author == "CopyWriter" and m.text.startswith("* ")]
    assert (
        action[0].text == "* CopyWriter scratches his head, trying to figure out how to ask bestbot"
    )
    assert all(m.repairs == () for m in messages)
    ids = [m.external_id for m in messages]
    assert len(set(ids)) == len(ids)
    assert ids == [m.external_id for m in split(iter_records(path))[0]]


def test_the_real_gitter_logs_with_line_numbers_and_separators() -> None:
    gitter = chat_file("gitter/manual_Gitter.txt")
    stats = ParseStats()
    messages, errors = split(iter_records(gitter, stats=stats))
    assert errors == []
    # 513 well-formed message lines plus one "15[2016-12-16T05:23:58] <grahamperrin>" whose
    # number is glued to the bracket; 86 "-----" separators; one "// Part 1" note after a separator.
    assert len(messages) == 514
    assert stats.skipped == {"separator line": 86, "text outside any message": 1}
    assert (messages[0].author, messages[0].ts) == ("Aaawesomealex", _utc(2016, 11, 21, 2, 33, 15))
    assert message_at(messages, "line 3").ts == _utc(
        2016, 11, 21, 9, 51, 26
    )  # "YYYY-MM-DD HH:MM:SS"
    glued = message_at(messages, "line 398")
    assert glued.author == "grahamperrin" and glued.ts == _utc(2016, 12, 16, 5, 23, 58)
    pasted = message_at(messages, "line 312")  # a line without a stamp continues the message
    assert pasted.text.endswith("\ngitterHQ/gitter#1528")
    docker = chat_file("gitter/manual_docker.txt")
    stats = ParseStats()
    messages, errors = split(iter_records(docker, stats=stats))
    assert errors == []
    assert len(messages) == 1125  # 1124 plus one line opening with "[[2016-12-21 19:05:15]"
    assert stats.skipped == {"separator line": 90}
    assert message_at(messages, "line 427").author == "sbbowers__twitter"


def test_dates_roll_over_and_fall_back(tmp_path: Path) -> None:
    log = "[23:58] <ann> late\n[23:59:30] <bob> later\n[00:01] <ann> after midnight\n[00:01] <ann> after midnight\n"
    named = tmp_path / "#chan-2024-02-28.log"
    named.write_text(log, encoding="utf-8")
    messages, _ = split(iter_records(named))
    assert [m.ts for m in messages] == [
        _utc(2024, 2, 28, 23, 58),
        _utc(2024, 2, 28, 23, 59, 30),
        _utc(2024, 2, 29, 0, 1),
        _utc(2024, 2, 29, 0, 1),
    ]
    assert messages[3].external_id == messages[2].external_id + "-2"
    plain = tmp_path / "chan.log"
    plain.write_text(log, encoding="utf-8")
    based, _ = split(iter_records(plain, base_date=date(2020, 1, 1)))
    assert based[0].ts == _utc(2020, 1, 1, 23, 58) and based[0].repairs == ()
    unknown, _ = split(iter_records(plain))
    assert unknown[2].ts == _utc(1970, 1, 2, 0, 1)
    assert unknown[0].repairs == ("no date in the file name and no base date: assumed 1970-01-01",)


def test_system_lines_actions_and_multiline_pastes(tmp_path: Path) -> None:
    path = tmp_path / "2021-06-01.txt"
    path.write_text(
        "=== ann is now known as anna\n"
        "[10:00] -!- bob has joined #chan\n"
        "[10:00] * bob has quit (Ping timeout)\n"
        "[10:01] <@anna> look at this:\n"
        "    def f():\n"
        "\n"
        "        return 1\n"
        "\n"
        "[10:02] * anna waves\n"
        "-----------\n"
        "orphan note\n"
        "1 [2021-06-02T08:00:00] <+cy> numbered\n",
        encoding="utf-8",
    )
    stats = ParseStats()
    messages, errors = split(iter_records(path, stats=stats))
    assert errors == []
    assert [(m.author, m.text) for m in messages] == [
        ("anna", "look at this:\n    def f():\n\n        return 1"),
        ("anna", "* anna waves"),
        ("cy", "numbered"),
    ]
    assert messages[2].ts == _utc(2021, 6, 2, 8, 0)
    assert stats.skipped == {"system line": 3, "separator line": 1, "text outside any message": 1}


def test_bad_lines_are_rejected_and_their_pastes_go_with_them(tmp_path: Path) -> None:
    path = tmp_path / "2021-06-01.log"
    body = (
        "[10:00] <ann> fine\n"  # 1
        "[25:99] <ann> impossible time\n"  # 2
        "continuation of the bad one\n"  # 3
        "[10:01] no nick here\n"  # 4
        "[10:02] <> empty nick\n"  # 5
        "[10:03] <ann> nul\x00s\x00\n"  # 6
        "[10:04] <ann> MARK\n"  # 7
        f"[10:05] <ann> {FIVE_MB}\n"  # 8
        "[10:06] <bob> big paste follows\n"  # 9
        + ("y" * 1000 + "\n")
        * 300  # 10..309: with line 9, 17 + 300 * 1001 = 300,317 characters
        + "[2021-13-01 10:07:00] <ann> bad month\n"  # 310
        "[10:08] <bob> last\n"  # 311
    )
    path.write_bytes(body.encode().replace(b"MARK", b"half \xc3"))
    messages, errors = split(iter_records(path))
    assert [m.location for m in messages] == ["line 1", "line 6", "line 7", "line 311"]
    assert message_at(messages, "line 1").text == "fine"  # line 3 went with the bad line 2
    assert error_at(errors, "line 2").reason == "unparseable timestamp '25:99'"
    assert error_at(errors, "line 4").reason == "missing author: no <nick> after the timestamp"
    assert error_at(errors, "line 5").reason == "missing author"
    assert (
        error_at(errors, "line 8").reason
        == "message text is 5,242,880 characters, over the limit of 200,000"
    )
    assert (
        error_at(errors, "line 9").reason
        == "message text is 300,317 characters, over the limit of 200,000"
    )
    assert error_at(errors, "line 310").reason == "unparseable timestamp '2021-13-01 10:07:00'"
    assert len(errors) == 6
    assert message_at(messages, "line 6").text == "nuls"
    assert message_at(messages, "line 6").repairs == ("removed 2 NUL characters from text",)
    assert message_at(messages, "line 7").text == "half \ufffd"


def test_appending_lines_keeps_the_earlier_ids(tmp_path: Path) -> None:
    path = tmp_path / "2022-01-01.log"
    lines = ["[09:00] <ann> hi", "[09:00] <ann> hi", "[09:01] <bob> yo", "[09:02] <ann> bye"]
    path.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    before = [m.external_id for m in split(iter_records(path))[0]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    after = [m.external_id for m in split(iter_records(path))[0]]
    assert after[:3] == before and len(set(after)) == 4
    assert all(i.startswith("irc-") for i in after)


def _log(tmp_path: Path, name: str, *lines: str) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _channels(path: Path) -> set[str | None]:
    messages, errors = split(iter_records(path))
    assert errors == [] and messages
    return {message.channel for message in messages}


def test_a_log_whose_joins_and_topic_name_its_channel_is_that_channel(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        "2024-05-01.raw.txt",
        "[09:00] -!- ana [~ana@host] has joined #Kernel-Dev",
        "[09:00] -!- Topic for #kernel-dev: merge window rules",
        "[09:01] <ana> who reviews the scheduler patch?",
        "=== bo [~bo@host] has joined #kernel-dev",
        "=== mode/#kernel-dev [+o ana] by ChanServ",
        "[09:02] <bo> I do",
        "[09:03] * carl has left #kernel-dev",
    )
    # The leading `#` is not part of the name (reports show `#kernel-dev`); the most frequent
    # spelling wins, as IRC names ignore case.
    assert _channels(log) == {"kernel-dev"}


def test_joins_pasted_into_messages_and_logs_naming_no_or_several_channels_name_none(
    tmp_path: Path,
) -> None:
    pasted = _log(
        tmp_path,
        "pasted.txt",
        "[09:00] <ana> * bo has joined #debian",
        "[09:01] <bo> /join #ubuntu-offtopic and ask there",
    )
    network = _log(
        tmp_path,
        "network.log",
        "[09:00] -!- ana has joined #one",
        "[09:00] -!- bo has joined #two",
        "[09:01] <ana> hello",
    )
    assert _channels(pasted) == {None} and _channels(network) == {None}


def test_the_real_disentanglement_logs_state_their_channel() -> None:
    ubuntu = chat_file("ubuntu_irc_disentanglement/dev/2005-06-27_12.raw.txt")
    linux = chat_file("ubuntu_irc_disentanglement/channel-two/channel-two.dev.raw.txt")
    # `=== x has joined #ubuntu`; Freenode's `##linux` keeps its second `#`.
    assert _channels(ubuntu) == {"ubuntu"} and _channels(linux) == {"#linux"}
    assert _channels(chat_file("ubuntu_irc/2010-08-17_18.raw.txt")) == {None}
