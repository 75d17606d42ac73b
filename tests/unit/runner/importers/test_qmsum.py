"""QMSum meeting transcripts: one message per turn, synthesized times, stable ids, bad files."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from runner.importers import detect_format, iter_records
from tests.support.importers import split
from tests.support.paths import shared_data


def _meeting(turns: list[Any]) -> dict[str, Any]:
    return {
        "topic_list": [{"topic": "Budget", "relevant_text_span": [["0", "2"]]}],
        "general_query_list": [{"query": "Summarize the whole meeting.", "answer": "They met."}],
        "specific_query_list": [],
        "meeting_transcripts": turns,
    }


def _write(tmp_path: Path, data: Any, indent: int | None = 4) -> Path:
    path = tmp_path / "meeting.json"
    path.write_text(json.dumps(data, indent=indent), encoding="utf-8")
    return path


TURNS = [
    {"speaker": "Project Manager", "content": "Okay . Let's start ."},
    {"speaker": "Marketing", "content": "{vocalsound} Twenty five euros ."},
    {"speaker": "Project Manager", "content": "Okay ."},
    {"speaker": "Project Manager", "content": "Okay ."},
]


def test_each_turn_is_a_message_in_order_with_synthesized_times(tmp_path: Path) -> None:
    path = _write(tmp_path, _meeting(TURNS))
    assert detect_format(path) == "qmsum"
    messages, errors = split(iter_records(path))
    assert errors == []
    assert [(m.author, m.text) for m in messages] == [(t["speaker"], t["content"]) for t in TURNS]
    start = datetime(2000, 1, 1, tzinfo=UTC)
    assert [m.ts for m in messages] == [start + timedelta(seconds=10 * n) for n in range(4)]
    assert [m.location for m in messages] == ["turn 1", "turn 2", "turn 3", "turn 4"]
    ids = [m.external_id for m in messages]
    assert all(i.startswith("qmsum-") for i in ids)
    assert len(set(ids)) == 4  # the two "Okay ." turns differ by their place in the meeting


def test_ids_are_stable_and_depend_on_content_not_layout(tmp_path: Path) -> None:
    pretty = _write(tmp_path, _meeting(TURNS))
    first = [m.external_id for m in split(iter_records(pretty))[0]]
    minified = _write(tmp_path, _meeting(TURNS), indent=None)
    assert detect_format(minified) == "qmsum"
    assert [m.external_id for m in split(iter_records(minified))[0]] == first
    changed = [dict(TURNS[0]), {"speaker": "Marketing", "content": "Thirty euros ."}, *TURNS[2:]]
    other = [m.external_id for m in split(iter_records(_write(tmp_path, _meeting(changed))))[0]]
    assert other[0] == first[0]
    assert other[1] != first[1]


def test_the_base_date_moves_the_synthesized_times(tmp_path: Path) -> None:
    path = _write(tmp_path, _meeting(TURNS[:1]))
    (message,), _ = split(iter_records(path, base_date=date(2021, 3, 4)))
    assert message.ts == datetime(2021, 3, 4, tzinfo=UTC)


def test_the_transcript_alone_is_enough_and_the_key_order_does_not_matter(tmp_path: Path) -> None:
    path = _write(tmp_path, {"meeting_transcripts": TURNS[:2], "topic_list": []})
    assert detect_format(path) == "qmsum"
    messages, errors = split(iter_records(path))
    assert (len(messages), errors) == (2, [])


def test_bad_turns_are_rejected_one_by_one(tmp_path: Path) -> None:
    turns: list[Any] = [
        {"speaker": "A", "content": "fine"},
        "not a turn",
        {"content": "nobody said it"},
        {"speaker": "B", "content": 7},
        {"speaker": "B", "content": "also fine"},
    ]
    messages, errors = split(iter_records(_write(tmp_path, _meeting(turns))))
    assert [m.text for m in messages] == ["fine", "also fine"]
    assert [(e.location, e.reason) for e in errors] == [
        ("turn 2", "expected a turn object, got str"),
        ("turn 3", "missing author"),
        ("turn 4", "text must be a string, not int"),
    ]


def test_a_truncated_file_keeps_the_turns_before_the_cut(tmp_path: Path) -> None:
    text = json.dumps(_meeting(TURNS), indent=4)
    path = tmp_path / "cut.json"
    path.write_text(text[: text.index('"Okay ."', text.index("Twenty five")) + 3], "utf-8")
    messages, errors = split(iter_records(path, export_format="qmsum"))
    assert len(messages) == 2
    assert len(errors) == 1
    assert errors[0].location == "turn 3"
    assert "malformed or truncated JSON" in errors[0].reason
    assert "the 2 turns before it were kept" in errors[0].reason


def test_a_file_without_a_transcript_is_one_error(tmp_path: Path) -> None:
    path = _write(tmp_path, {"topic_list": [], "general_query_list": []})
    assert detect_format(path) == "qmsum"
    messages, errors = split(iter_records(path))
    assert messages == []
    assert [(e.location, e.reason) for e in errors] == [
        ("file", 'no turns in a top-level "meeting_transcripts" list: nothing was read')
    ]


def test_the_real_meetings() -> None:
    for name, turns, first_speaker in (
        ("TS3004a.json", 435, "User Interface"),
        ("education_13.json", 133, None),
    ):
        path = shared_data(f"meetings/qmsum/{name}")
        assert detect_format(path) == "qmsum"
        messages, errors = split(iter_records(path))
        assert errors == []
        raw = json.loads(path.read_text(encoding="utf-8"))["meeting_transcripts"]
        assert len(messages) == len(raw) == turns
        assert [m.author for m in messages] == [t["speaker"] for t in raw]
        assert len({m.external_id for m in messages}) == turns
        if first_speaker is not None:
            assert (messages[0].author, messages[0].text) == (first_speaker, "Two .")
