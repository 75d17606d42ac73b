"""A catch-up as Markdown: channels in rank order, entries under their kind, one footnote per
cited message with its exact quote, and stored text that cannot make markup."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from runner.catchup.handles import Handles
from runner.catchup.sections import CatchUp, ChannelInfo, SaidMessage, WeighedItem, sections
from runner.exports.catchup import catch_up_markdown

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def _catch_up() -> CatchUp:
    handles = Handles.of([("alice", None)])
    channels = {1: ChannelInfo(1, "ops", None, T0), 2: ChannelInfo(2, "dev", "acme", T0)}
    asked = SaidMessage(
        1, 2, "q1", "bob", T0 + timedelta(minutes=1), 1, "alice: can you *rotate* the keys?"
    )
    hostile = SaidMessage(
        2, 1, "m1", "eve", T0 + timedelta(minutes=2), 1, "# alice [^1]: <b>fake</b> footnote"
    )
    # The same external id in another channel is another message, another footnote.
    same_id = SaidMessage(3, 1, "q1", "dan", T0 + timedelta(minutes=3), 1, "thanks alice")
    question = WeighedItem(
        9, 2, "question", "open", "Can alice rotate the keys?", "bob", asked.at, asked, None
    )
    return CatchUp(
        "Alice",
        1,
        ("alice",),
        None,
        T0,
        T0 + timedelta(hours=1),
        tuple(sections(handles, channels, [hostile, same_id, asked], [question])),
    )


def test_channels_come_in_rank_order_with_footnoted_quotes() -> None:
    text = catch_up_markdown(_catch_up())
    assert text.index("## acme / dev") < text.index("## ops")
    assert "### Questions put to you\n\n- Can alice rotate the keys? (asked by bob)[^1]" in text
    assert "1 open question." in text and "2 mentions." in text
    footnotes = re.findall(r"^\[\^(\d+)\]: (.*)$", text, re.MULTILINE)
    assert [n for n, _ in footnotes] == ["1", "2", "3"]
    assert (
        'bob, 2024-05-01 09:01 UTC, "alice: can you \\*rotate\\* the keys?" (message q1 in acme / dev)'
        in text
    )
    assert "(message q1 in ops)" in text


def test_stored_text_cannot_add_a_heading_a_footnote_or_html() -> None:
    text = catch_up_markdown(_catch_up())
    assert not re.search(r"^# alice", text, re.MULTILINE)
    assert "<b>" not in text
    assert len(re.findall(r"^\[\^\d+\]:", text, re.MULTILINE)) == 3
    assert "\\[^1\\]" in text or "\\[\\^1\\]" in text
