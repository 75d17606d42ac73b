"""State changes of channel items (runner/memory/transitions.py) on hand-made windows: a
question answered or dropped, an action item done or cancelled, a decision reversed or
superseded by a later one, a knowledge item superseded or contradicted; and the messages that
look like an answer or a completion report and are not."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

from runner.memory.items import ItemKind, NewItem, TrackedItem, item_key, rule_item, words
from runner.memory.transitions import StateChange, decision_ending, propose_changes
from runner.memory.window import SAME_TIME, MemoryMessage, MemoryWindow
from tests.support.items import DAY1, DAY2
from tests.support.memory import QUESTION, message


def _changes(
    tracked: Sequence[TrackedItem],
    messages: Sequence[MemoryMessage],
    new: Sequence[NewItem] = (),
) -> list[StateChange]:
    """The changes proposed for `tracked` and the digest's `new` items in the window."""
    window = MemoryWindow(messages)
    fresh = [item for item in map(window.rule_item, new) if item is not None]
    return [change for change, _ in propose_changes([rule_item(t) for t in tracked], fresh, window)]


TASK = TrackedItem(
    2,
    ItemKind.ACTION_ITEM,
    "update the deploy docs for the backup flow",
    "cid",
    7,
    ("t1",),
    DAY1,
)
WIKI = TrackedItem(
    3, ItemKind.DECISION, "We will host the wiki on the old VPS", None, 7, ("d1",), DAY1
)


def test_a_question_is_answered_across_digests_with_the_answers_pointer() -> None:
    answer = "ann: add --exclude=cache to the rsync line. That skips it."
    window = [
        message("a0", "ann", 0, "still stuck on that one?"),  # the asker: no answer
        message("a1", "dee", 1, "what do you mean?"),  # a question back: no answer
        message("a2", "bob", 2, answer),
    ]
    (change,) = _changes([QUESTION], window)
    assert (change.item, change.from_status, change.to_status) == (1, "open", "answered")
    assert change.evidence.message_ids == ("a2",) and change.evidence.at == window[2].ts
    assert change.evidence.pointer is not None
    message_id, start, end, quote = change.evidence.pointer
    assert message_id == "a2" and answer[start:end] == quote and "--exclude=cache" in quote


def test_an_answer_in_another_conversation_does_not_answer_it() -> None:
    window = [message("a2", "bob", 2, "add --exclude=cache to the rsync line", conversation=8)]
    assert _changes([QUESTION], window) == []


def test_thanks_a_word_to_someone_else_or_a_speakers_continuation_is_no_answer() -> None:
    window = [
        message("a1", "bob", 1, "ann, thanks for all your help with the backup cache"),
        message("a2", "dee", 2, "eve: the backup cache is fine on my side"),  # to someone else
        message("a3", "eve", 3, "dee: good, then the cache stays"),
        message("a4", "bob", 4, "ann: and try the backup script with the cache flag too"),
    ]
    assert _changes([QUESTION], window) == []


def test_a_question_put_to_someone_is_answered_by_them_only() -> None:
    put = TrackedItem(
        9,
        ItemKind.QUESTION,
        "Do you see the new drive in fdisk?",
        "zen",
        7,
        ("q5",),
        DAY1,
        "vee: ok so do you see the new drive in fdisk?",
    )
    other = [message("a1", "stevie", 1, "zen, well the drive shows up in fdisk for me")]
    assert _changes([put], other) == []
    asked = [message("a2", "vee", 2, "zen: yes, the drive is listed as /dev/sdb in fdisk")]
    (change,) = _changes([put], asked)
    assert change.evidence.message_ids == ("a2",)


def test_a_reply_answers_without_naming_the_asker_or_repeating_the_question() -> None:
    said = "try the exclude flag of rsync then"
    assert _changes([QUESTION], [message("a1", "bob", 1, said)]) == []
    (change,) = _changes([QUESTION], [message("a1", "bob", 1, said, reply_to="q1")])
    assert (change.item, change.to_status) == (1, "answered")


def test_one_message_answers_the_one_question_it_fits_best() -> None:
    port = TrackedItem(
        5,
        ItemKind.QUESTION,
        "Which port does the postgres server listen on?",
        "ann",
        7,
        ("q2",),
        DAY1 + timedelta(minutes=1),
    )
    window = [message("a1", "bob", 1, "ann: the postgres server listens on port 5432")]
    for tracked in ([QUESTION, port], [port, QUESTION]):
        (change,) = _changes(tracked, window)
        assert (change.item, change.to_status, change.evidence.message_ids) == (
            5,
            "answered",
            ("a1",),
        )


def test_the_asker_withdrawing_drops_the_question() -> None:
    window = [message("a1", "ann", 3, "never mind, figured it out")]
    (change,) = _changes([QUESTION], window)
    assert change.to_status == "dropped" and change.evidence.pointer is not None
    assert change.evidence.pointer[3].startswith("never mind")


def test_a_reply_that_is_only_an_addressee_and_a_shrug_answers_nothing() -> None:
    assert _changes([QUESTION], [message("a1", "bob", 1, "ann: nvm :)")]) == []


def test_a_question_back_without_a_question_mark_is_no_answer() -> None:
    window = [
        message("a1", "bob", 1, "ann: are u running the backup script from cron"),
        message("a2", "dee", 2, "ann, what version of rsync does the backup script use"),
    ]
    assert _changes([QUESTION], window) == []


def test_an_action_item_is_done_when_its_owner_says_merged_in_its_conversation() -> None:
    window = [
        message("b1", "cid", 1, "the docs are not merged yet"),  # negated
        message("b2", "cid", 2, "is it merged?"),  # a question
        message("b3", "cid", 3, "ok, merged: https://github.com/acme/ops/pull/12"),
    ]
    (change,) = _changes([TASK], window)
    assert (change.item, change.from_status, change.to_status) == (2, "open", "done")
    assert change.evidence.message_ids == ("b3",)
    # A "fixed" inside a name is no "fixed".
    named = [message("b4", "cid", 4, "the error: storage.mount-fixed auth_admin_keep_always")]
    assert _changes([TASK], named) == []
    elsewhere = [message("c1", "eve", 1, "fixed my bike today", conversation=9)]
    assert _changes([TASK], elsewhere) == []


def test_an_action_item_is_done_when_anyone_anywhere_names_it_done() -> None:
    window = [
        message("c1", "eve", 1, "the deploy docs for the backup flow are updated and merged", 9)
    ]
    (change,) = _changes([TASK], window)
    assert change.to_status == "done" and change.reason == "eve says it is done (names the task)"
    # Someone else's bare "done" in its conversation does not name it.
    assert _changes([TASK], [message("c2", "eve", 2, "done")]) == []


def test_an_action_item_is_cancelled_by_its_owner_in_its_conversation() -> None:
    (change,) = _changes([TASK], [message("b1", "cid", 1, "scrap that, no longer needed")])
    assert (change.item, change.to_status, change.evidence.message_ids) == (2, "cancelled", ("b1",))
    assert _changes([TASK], [message("b2", "eve", 2, "scrap that, no longer needed")]) == []
    assert _changes([TASK], [message("b3", "cid", 3, "scrap that", conversation=9)]) == []


def test_a_done_word_about_something_else_in_the_owners_message_is_no_completion_report() -> None:
    task = TrackedItem(
        4,
        ItemKind.ACTION_ITEM,
        "paste the default.pa file for the headphones",
        "gus",
        7,
        ("t2",),
        DAY1,
    )
    # Said by the owner, in the task's conversation, but about something else.
    aside = [
        message(
            "e1",
            "gus",
            1,
            "ray: correct, you can set that somewhere, done this over a year ago, give us a minute",
        )
    ]
    assert _changes([task], aside) == []
    watched = [
        message("e2", "gus", 2, "ray: all software is installed, I just finished watching the dvd")
    ]
    assert _changes([task], watched) == []
    pasted = [message("e4", "gus", 2, "Reading package lists... Done")]
    assert _changes([task], pasted) == []
    report = [message("e3", "gus", 3, "ray: ok done, it is on the pastebin")]
    (change,) = _changes([task], report)
    assert change.to_status == "done" and change.evidence.message_ids == ("e3",)


def test_a_later_decision_replacing_one_in_force_supersedes_it() -> None:
    window = [message("d2", "bob", 5, "we will host the wiki on github pages instead of the VPS")]
    new = NewItem(
        ItemKind.DECISION,
        0,
        "We will host the wiki on GitHub pages instead of the VPS",
        None,
        ("d2",),
    )
    (change,) = _changes([WIKI], window, [new])
    assert (change.item, change.from_status, change.to_status) == (3, "in_force", "superseded")
    assert change.related == new and change.reason == "a later decision in its conversation"
    assert change.evidence.message_ids == ("d2",) and change.evidence.pointer is not None


def test_a_later_decision_saying_the_opposite_reverses_it() -> None:
    window = [message("d2", "bob", 5, "we will not host the wiki on the old VPS after all")]
    new = NewItem(
        ItemKind.DECISION, 0, "We will not host the wiki on the old VPS after all", None, ("d2",)
    )
    (change,) = _changes([WIKI], window, [new])
    assert (change.item, change.to_status, change.related) == (3, "reversed", new)


def test_a_decision_on_another_topic_or_said_before_ends_nothing() -> None:
    window = [message("d2", "bob", 5, "we will switch to tabs instead of spaces", 9)]
    other = NewItem(ItemKind.DECISION, 0, "Switch to tabs instead of spaces", None, ("d2",))
    assert _changes([WIKI], window, [other]) == []
    old = rule_item(WIKI)
    text = "host the wiki on github pages instead"
    earlier = replace(old, ref=8, text=text, tokens=words(text))
    assert decision_ending(old, earlier) is None  # said no later than the one it would end
    assert decision_ending(old, replace(earlier, said_at=DAY2)) == "superseded"


def test_a_knowledge_item_naming_a_tracked_key_supersedes_or_contradicts_it() -> None:
    tip = TrackedItem(4, ItemKind.KNOWLEDGE, "rsync excludes", None, 7, ("k1",), DAY1)
    window = [message("k2", "bob", 1, "use --exclude")]
    later = NewItem(
        ItemKind.KNOWLEDGE, 0, "rsync exclude patterns", None, ("k2",), "K1", item_key(4)
    )
    (change,) = _changes([tip], window, [later])
    assert (change.item, change.from_status, change.to_status) == (4, "current", "superseded")
    assert change.related == later and change.evidence.message_ids == ("k2",)
    against = NewItem(
        ItemKind.KNOWLEDGE, 0, "rsync has no excludes", None, ("k2",), "K1", None, item_key(4)
    )
    (change,) = _changes([tip], window, [against])
    assert (change.item, change.to_status, change.reason) == (
        4,
        "conflict",
        "a later item contradicts it",
    )
    assert _changes([tip], window, [NewItem(ItemKind.KNOWLEDGE, 0, "x", None, ("k2",))]) == []


def test_a_knowledge_item_may_supersede_one_of_its_own_digest_said_in_the_same_message() -> None:
    window = [message("k1", "bob", 1, "use --exclude, or better --exclude-from=file")]
    first = NewItem(ItemKind.KNOWLEDGE, 0, "rsync --exclude", None, ("k1",), "K1")
    second = NewItem(ItemKind.KNOWLEDGE, 1, "rsync --exclude-from=file", None, ("k1",), "K2", "K1")
    live = MemoryWindow(window)
    fresh = [live.rule_item(first), live.rule_item(second)]
    assert None not in fresh
    ((change, since),) = propose_changes([], [i for i in fresh if i is not None], live)
    assert (change.item, change.to_status, change.related) == (first, "superseded", second)
    # Its evidence may be exactly as old as the item: the check is against a moment before.
    assert change.evidence.at == window[0].ts and since == window[0].ts - SAME_TIME


CERTS = TrackedItem(
    5, ItemKind.ACTION_ITEM, "renew the staging certs this afternoon", "bob", 7, ("c1",), DAY1
)
POSTGRES = TrackedItem(
    6, ItemKind.DECISION, "Use Postgres 16 for the new cluster", "dee", 7, ("p1",), DAY1
)


def test_done_at_the_end_of_the_owners_short_statement_closes_the_action_item() -> None:
    (change,) = _changes([CERTS], [message("c2", "bob", 1, "staging certs are updated, done")])
    assert (change.item, change.to_status) == (5, "done")
    assert change.evidence.pointer is not None and "done" in change.evidence.pointer[3]
    for aside in ("I'm done for today", "done this a year ago", "Reading package lists... Done"):
        assert _changes([CERTS], [message("c3", "bob", 2, aside)]) == [], aside
    # Someone else's report of their own step does not close bob's task.
    assert _changes([CERTS], [message("c4", "eve", 3, "done")]) == []


def test_nvm_found_it_closes_the_askers_own_question_only() -> None:
    (change,) = _changes([QUESTION], [message("n1", "ann", 1, "nvm, found it")])
    assert (change.item, change.to_status) == (1, "dropped")
    assert _changes([QUESTION], [message("n2", "ann", 2, "still haven't figured it out")]) == []
    # Another person finding their own thing is neither the asker withdrawing nor an answer.
    assert _changes([QUESTION], [message("n3", "eve", 3, "nvm, found it")]) == []


def test_a_committed_switch_naming_the_decision_supersedes_it_without_a_new_decision() -> None:
    switch = "after the benchmark we're switching to Postgres 17 instead of 16"
    (change,) = _changes([POSTGRES], [message("p3", "dee", 1, switch)])
    assert (change.item, change.from_status, change.to_status) == (6, "in_force", "superseded")
    assert change.evidence.message_ids == ("p3",) and change.related is None
    advice = "you can try switching to Postgres 17 instead of 16"
    assert _changes([POSTGRES], [message("p4", "eve", 2, advice)]) == []
    elsewhere = "we're switching to the blue office printer instead"
    assert _changes([POSTGRES], [message("p5", "dee", 3, elsewhere)]) == []


def test_its_author_scratching_that_reverses_the_latest_decision_only() -> None:
    later = NewItem(
        ItemKind.DECISION, 0, "we're switching to Postgres 17 instead of 16", "dee", ("p3",)
    )
    window = [
        message("p3", "dee", 1, "we're switching to Postgres 17 instead of 16"),
        message("p4", "dee", 2, "scratch that, we'll keep Postgres 16"),
    ]
    changes = _changes([POSTGRES], window, [later])
    ends = {(c.item if isinstance(c.item, int) else "switch"): c.to_status for c in changes}
    # Postgres 16 is superseded by the switch; the switch, the latest, is what is scratched.
    assert ends == {6: "superseded", "switch": "reversed"}
    # Someone else's "scratch that" does not withdraw dee's decision.
    assert _changes([POSTGRES], [message("p6", "eve", 3, "scratch that")]) == []


def test_reverted_ends_the_latest_decision_or_the_one_it_names() -> None:
    (change,) = _changes([POSTGRES], [message("r1", "eve", 1, "reverted")])
    assert change.to_status == "reversed"
    named_else = "the kernel abi breakage was reverted upstream"
    assert _changes([POSTGRES], [message("r2", "eve", 2, named_else)]) == []
    asked = "will the Postgres 16 cluster be reverted?"
    assert _changes([POSTGRES], [message("r3", "eve", 3, asked)]) == []


def test_a_revert_naming_something_else_or_told_as_a_story_ends_nothing() -> None:
    for said in (
        "i undid the obvious things",  # names what it undid: not the decision
        "tried the new theme for a day and then reverted",  # a story
        "so I had to revert to the 304 driver",  # going back to something: a switch
    ):
        assert _changes([POSTGRES], [message("r4", "eve", 1, said)]) == [], said
    back = "we reverted back to Postgres 15 for the new cluster"
    (change,) = _changes([POSTGRES], [message("r5", "dee", 2, back)])
    assert change.to_status == "superseded"  # a switch naming the decision


def test_the_asker_saying_it_is_fixed_in_other_words_drops_the_question() -> None:
    for said in ("thanks ... it's fixed now :)", "fixed it using the exclude flag", "[solved]"):
        (change,) = _changes([QUESTION], [message("f1", "ann", 1, said)])
        assert (change.item, change.to_status) == (1, "dropped"), said
    assert _changes([QUESTION], [message("f2", "ann", 2, "backup cache fixed, right?")]) == []
