"""A catch-up's sections from plain rows: what counts as a question put to the person, an action
item of theirs, a mention, a decision since; quotes that slice the cited message; and channels
ranked by what needs the person first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from runner.catchup.handles import Handles
from runner.catchup.ranking import EntryKind, Rankable, ranked, score
from runner.catchup.sections import (
    MAX_QUOTE_CHARS,
    ChannelInfo,
    SaidMessage,
    WeighedItem,
    quote_span,
    sections,
)

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
ALICE = Handles.of([("alice", None)])
CHANNELS = {
    1: ChannelInfo(1, "ops", None, T0),
    2: ChannelInfo(2, "dev", "acme", T0),
    3: ChannelInfo(3, "random", None, T0),
}


def said(row: int, channel: int, author: str, text: str, minutes: int = 5) -> SaidMessage:
    return SaidMessage(row, channel, f"m{row}", author, T0 + timedelta(minutes=minutes), 1, text)


def item(
    id: int,
    channel: int,
    kind: str,
    message: SaidMessage | None,
    owner: str | None = None,
    status: str = "open",
    replied: str | None = None,
    minutes: int = 5,
) -> WeighedItem:
    return WeighedItem(
        id,
        channel,
        kind,
        status,
        f"item {id}",
        owner,
        T0 + timedelta(minutes=minutes),
        message,
        replied,
    )


def test_each_kind_is_found_and_the_channel_with_a_question_to_her_comes_first() -> None:
    question = said(1, 2, "bob", "alice: can you rotate the staging keys today?")
    reply_question = said(2, 2, "cid", "does that also cover the replica?")
    not_hers = said(3, 2, "bob", "who knows why CI is slow?")
    own = said(4, 1, "alice", "I will check the backups, can someone review?")
    messages = [
        said(10, 1, "dan", "thanks alice, the backups look fine"),
        said(11, 1, "eve", "ping @alice about the release notes"),
        said(12, 1, "alice", "I am alice and this is mine"),
        said(13, 1, "eve", "old news for alice", minutes=-5),  # before the channel's start
        said(14, 3, "eve", "alice mentioned once here"),
        question,
    ]
    items = [
        item(1, 2, "question", question, owner="bob"),
        item(2, 2, "question", reply_question, owner="cid", replied="Alice_"),
        item(3, 2, "question", not_hers, owner="bob"),
        item(4, 1, "question", own, owner="alice"),
        item(5, 1, "action_item", own, owner="Alice"),
        item(6, 1, "action_item", None, owner="bob"),
        item(7, 1, "decision", said(20, 1, "dan", "We go with borg."), status="in_force"),
        item(8, 1, "decision", said(21, 1, "dan", "Old one."), minutes=-30),
        item(9, 2, "question", question, owner="bob", status="answered"),
    ]
    found = sections(ALICE, CHANNELS, messages, items)
    assert [s.channel.name for s in found] == ["dev", "ops", "random"]
    dev, ops, rand = found
    assert dev.counts == {EntryKind.QUESTION: 2}  # the mention in the question is not repeated
    assert {e.item_id for e in dev.entries} == {1, 2}
    assert ops.counts == {EntryKind.ACTION_ITEM: 1, EntryKind.MENTION: 2, EntryKind.DECISION: 1}
    assert [e.kind for e in ops.entries] == [
        EntryKind.ACTION_ITEM,
        EntryKind.MENTION,
        EntryKind.MENTION,
        EntryKind.DECISION,
    ]
    assert rand.counts == {EntryKind.MENTION: 1}
    for section in found:
        for entry in section.entries:
            for cited in entry.citations:
                source = next(
                    m
                    for m in [
                        *messages,
                        reply_question,
                        own,
                        said(20, 1, "dan", "We go with borg."),
                    ]
                    if m.row_id == cited.row_id
                )
                assert source.text[cited.char_start : cited.char_end] == cited.quote


def test_a_quote_is_the_sentence_naming_her_cut_at_a_word() -> None:
    text = "Unrelated opener here. " + "word " * 80 + "alice can you check? Tail."
    named = ALICE.mentions(1, text)
    start, end = quote_span(text, named, question=False)
    assert start <= named[0][0] < end and end - start <= MAX_QUOTE_CHARS
    assert quote_span("Hi all. Is the VPN down? thanks", [], question=True) == (8, 24)


def test_scores_weigh_questions_over_action_items_over_capped_mentions_and_decisions() -> None:
    assert score({EntryKind.QUESTION: 1}) == 30
    assert score({EntryKind.ACTION_ITEM: 1}) == 20
    # Anything waiting on her outweighs any amount of news.
    assert score({EntryKind.MENTION: 40, EntryKind.DECISION: 40}) == 15
    one_question = Rankable("b", {EntryKind.QUESTION: 1}, T0)
    many_mentions = Rankable("a", {EntryKind.MENTION: 30}, T0 + timedelta(hours=1))
    two_actions = Rankable("c", {EntryKind.ACTION_ITEM: 2}, T0)
    assert ranked([many_mentions, one_question, two_actions]) == [2, 1, 0]
    # A tie in score goes to the question.
    tie = Rankable("x", {EntryKind.ACTION_ITEM: 1, EntryKind.MENTION: 5}, T0 + timedelta(1))
    assert score(tie.counts) == score(one_question.counts)
    assert ranked([tie, one_question]) == [1, 0]


def test_an_items_quote_is_the_sentence_that_says_it() -> None:
    text = (
        "Release branch release/2.4 is cut. Please only merge fixes with the "
        "`release-blocker` label from now on."
    )
    decision = "Please only merge fixes with the `release-blocker` label from now on."
    start, end = quote_span(text, [], question=False, about=decision)
    assert text[start:end] == decision
    # Nothing in common: the first sentence, as before.
    start, end = quote_span(text, [], question=False, about="Upgrade to Postgres 16")
    assert text[start:end] == "Release branch release/2.4 is cut."
