"""A conversation told as an exchange: what its opener asked and the first answer, each quoted
and cited, and never an answer that is only a link or a paste."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from runner.core.window import WindowMessage
from runner.extract.offline.exchanges import Reading
from runner.extract.offline.prose import ProseWriter

START = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)


def _message(key: str, author: str, minute: int, text: str) -> WindowMessage:
    return WindowMessage(key, author, START + timedelta(minutes=minute), text, conversation="c")


def _writer(*messages: WindowMessage) -> ProseWriter:
    reading = Reading.of(messages)
    return ProseWriter(reading.by_id, reading.participants)


ASKED = _message("q", "ann", 0, "How do I inspect the exec state of a running container?")


def test_the_question_and_its_answer_are_each_quoted_and_cited() -> None:
    answer = _message("a", "bob", 1, "ann: docker inspect on the exec id shows its state")
    told = _writer(ASKED, answer).exchange(ASKED, answer)
    assert [s.message_ids for s in told] == [["q"], ["a"]]
    assert told[0].sentence.startswith("ann asked: How do I inspect")
    assert told[1].sentence == "bob answered: docker inspect on the exec id shows its state"


def test_an_answer_that_is_only_a_link_is_not_told() -> None:
    answer = _message("a", "bob", 1, "ann: you mean this? [<-LINK->]")
    told = _writer(ASKED, answer).exchange(ASKED, answer)
    assert [s.message_ids for s in told] == [["q"]]
