"""The plan for one digest (runner/memory/plan.py): its items linked to tracked ones or created
with where they were said, the items that cite nothing of the window left out, and of the
changes proposed only the first of each item whose evidence stands, the others rejected with
why."""

from __future__ import annotations

from datetime import timedelta

from runner.memory.items import ItemKind, NewItem, TrackedItem, item_key
from runner.memory.plan import Created, plan_items
from tests.support.items import DAY1, DAY2
from tests.support.memory import QUESTION, message


def test_the_same_item_said_again_is_linked_not_duplicated() -> None:
    window = [message("q9", "ann", 5, "how do I make the backup script skip the cache dir?")]
    again = NewItem(
        ItemKind.QUESTION, 0, "How do I make the backup script skip the cache dir?", "ann", ("q9",)
    )
    plan = plan_items([QUESTION], [again], window)
    assert plan.created == [] and [(link.new, link.tracked) for link in plan.links] == [(again, 1)]
    other_owner = NewItem(ItemKind.QUESTION, 0, again.text, "zed", ("q9",))
    plan = plan_items([QUESTION], [other_owner], window)
    assert plan.links == [] and [c.new for c in plan.created] == [other_owner]


def test_a_new_item_is_created_where_it_was_said_and_one_citing_nothing_is_left_out() -> None:
    said = "eve: I'll rotate the backup keys tonight"
    window = [message("x1", "bob", 1, "who rotates the keys?", 4), message("x2", "eve", 2, said)]
    task = NewItem(ItemKind.ACTION_ITEM, 0, "rotate the backup keys", "eve", ("x1", "x2"))
    lost = NewItem(ItemKind.ACTION_ITEM, 1, "water the plants", "eve", ("gone",))
    plan = plan_items([], [task, lost], window)
    (created,) = plan.created
    # Said first at x1, in the conversation of its owner's message, quoted from the latest.
    assert (created.new, created.conversation_id, created.said_at) == (task, 7, window[0].ts)
    assert created.evidence is not None and created.evidence.message_ids == ("x1", "x2")
    assert created.evidence.pointer is not None
    message_id, start, end, quote = created.evidence.pointer
    assert message_id == "x2" and said[start:end] == quote and "rotate the backup keys" in quote
    assert plan.links == [] and plan.changes == [] and plan.rejected == []


def test_a_change_without_evidence_that_validates_is_not_applied() -> None:
    # The answer came before the question was asked (a backfill): no evidence of an answer.
    early = [message("a2", "bob", -60 * 24, "add --exclude=cache to the rsync line")]
    plan = plan_items([QUESTION], [], early)
    assert plan.changes == []
    # A knowledge item naming a tracked item it supersedes, citing nothing of the window.
    tip = TrackedItem(4, ItemKind.KNOWLEDGE, "rsync excludes", None, 7, ("k1",), DAY1)
    later = NewItem(
        ItemKind.KNOWLEDGE,
        0,
        "rsync exclude patterns",
        None,
        ("gone",),
        "K1",
        supersedes=item_key(4),
    )
    assert plan_items([tip], [later], [message("k2", "bob", 1, "use --exclude")]).changes == []
    cited = NewItem(
        ItemKind.KNOWLEDGE, 0, "rsync exclude patterns", None, ("k2",), "K1", supersedes=item_key(4)
    )
    (change,) = plan_items([tip], [cited], [message("k2", "bob", 1, "use --exclude")]).changes
    assert (change.item, change.to_status, change.related) == (4, "superseded", cited)


def test_evidence_older_than_the_item_is_rejected_with_why() -> None:
    tip = TrackedItem(
        4, ItemKind.KNOWLEDGE, "rsync excludes", None, 7, ("k1",), DAY2 + timedelta(minutes=10)
    )
    older = NewItem(
        ItemKind.KNOWLEDGE, 0, "rsync exclude patterns", None, ("k2",), "K1", item_key(4)
    )
    plan = plan_items([tip], [older], [message("k2", "bob", 1, "use --exclude")])
    assert plan.changes == []
    ((change, why),) = plan.rejected
    assert (change.item, change.to_status, why) == (4, "superseded", "evidence_before_item")
    assert [c.new for c in plan.created] == [older]


def test_an_item_changes_once_by_the_first_change_whose_evidence_stands() -> None:
    tip = TrackedItem(4, ItemKind.KNOWLEDGE, "rsync excludes", None, 7, ("k1",), DAY1)
    window = [message("k2", "bob", 1, "use --exclude"), message("k3", "dee", 2, "or --filter")]
    first = NewItem(ItemKind.KNOWLEDGE, 0, "rsync --exclude", None, ("k2",), "K1", item_key(4))
    second = NewItem(ItemKind.KNOWLEDGE, 1, "rsync --filter", None, ("k3",), "K2", item_key(4))
    plan = plan_items([tip], [first, second], window)
    (change,) = plan.changes
    assert (change.item, change.related) == (4, first) and plan.rejected == []


def test_a_replacing_decision_is_created_and_supersedes_the_one_in_force() -> None:
    wiki = TrackedItem(
        3, ItemKind.DECISION, "We will host the wiki on the old VPS", None, 7, ("d1",), DAY1
    )
    window = [message("d2", "bob", 5, "we will host the wiki on github pages instead of the VPS")]
    new = NewItem(
        ItemKind.DECISION,
        0,
        "We will host the wiki on GitHub pages instead of the VPS",
        None,
        ("d2",),
    )
    plan = plan_items([wiki], [new], window)
    assert plan.created == [Created(new, 7, window[0].ts, plan.created[0].evidence)]
    assert plan.links == []
    (change,) = plan.changes
    assert (change.item, change.to_status, change.related) == (3, "superseded", new)
