"""Linking (runner/memory/linking.py): a new digest's item is the tracked item it cites the
message of, or shares enough words with in its conversation or anywhere in the channel; never
one of another kind or owner, never a decision it reverses or replaces, and never on a few
shared words of a short item or one differing word of a command."""

from __future__ import annotations

from collections.abc import Sequence

from runner.memory.items import ItemKind, NewItem, TrackedItem, rule_item
from runner.memory.linking import link_target
from runner.memory.window import MemoryMessage, MemoryWindow
from tests.support.items import DAY1
from tests.support.memory import QUESTION, message


def _target(
    new: NewItem, tracked: Sequence[TrackedItem], messages: Sequence[MemoryMessage]
) -> tuple[int | NewItem, str] | None:
    """The tracked item `new` (said in `messages`) is linked to, by id, with the reason."""
    item = MemoryWindow(messages).rule_item(new)
    assert item is not None
    found = link_target(item, [rule_item(t) for t in tracked])
    return None if found is None else (found[0].ref, found[1])


def _question(text: str, owner: str | None = "ann", mid: str = "q9") -> NewItem:
    return NewItem(ItemKind.QUESTION, 0, text, owner, (mid,))


def test_the_same_question_asked_again_in_its_conversation_is_linked() -> None:
    again = "how do I make the backup script skip the cache dir?"
    window = [message("q9", "ann", 5, again)]
    assert _target(_question(again), [QUESTION], window) == (
        1,
        "same conversation, 71% shared words",
    )
    # Asked by someone else: another question, whatever its words.
    assert _target(_question(again, owner="zed"), [QUESTION], window) is None


def test_an_item_citing_the_tracked_items_message_is_it_whatever_its_words() -> None:
    window = [message("q1", "ann", 0, "skip cache how?", start=DAY1)]
    reworded = _question("Which flag excludes a folder from rsync?", mid="q1")
    assert _target(reworded, [QUESTION], window) == (1, "cites the same message")
    as_task = NewItem(ItemKind.ACTION_ITEM, 0, QUESTION.text, "ann", ("q1",))
    assert _target(as_task, [QUESTION], window) is None  # another kind is another thing


def test_elsewhere_in_the_channel_an_item_needs_most_of_its_words_and_four_of_them() -> None:
    said = "how can the backup script skip the cache directory"
    window = [message("q9", "ann", 5, said, conversation=9)]
    assert _target(_question(said), [QUESTION], window) == (1, "83% shared words")
    vlc = TrackedItem(2, ItemKind.QUESTION, "apt-get install vlc player", None, 3, ("v1",), DAY1)
    plugin = "apt-get install vlc plugin"  # 3 words of 5 shared: 60%, but only three
    window = [message("v2", "bob", 5, plugin, conversation=9)]
    assert _target(_question(plugin, owner=None, mid="v2"), [vlc], window) is None
    unrelated = "does the cron job run at night"
    window = [message("q9", "ann", 5, unrelated)]  # its conversation, no word shared
    assert _target(_question(unrelated), [QUESTION], window) is None


def test_a_command_one_word_apart_is_another_knowledge_item() -> None:
    grep = "cat /etc/X11/xorg.conf | grep Driver"
    tracked = TrackedItem(4, ItemKind.KNOWLEDGE, grep, None, 7, ("k1",), DAY1)
    radeon = "cat /etc/X11/xorg.conf | grep radeon"  # 6 of 8 words shared: 75%
    window = [message("k2", "bob", 5, radeon), message("k3", "bob", 6, grep)]
    assert _target(NewItem(ItemKind.KNOWLEDGE, 0, radeon, None, ("k2",)), [tracked], window) is None
    same = NewItem(ItemKind.KNOWLEDGE, 0, grep, None, ("k3",))
    assert _target(same, [tracked], window) == (4, "100% shared words")
    # The same words as questions are linked: 75% is enough for an item that is no command.
    asked = TrackedItem(5, ItemKind.QUESTION, grep, None, 3, ("k1",), DAY1)
    question = NewItem(ItemKind.QUESTION, 0, radeon, None, ("k2",))
    assert _target(question, [asked], window) == (5, "75% shared words")


def test_a_decision_replacing_the_one_in_force_is_not_the_same_decision() -> None:
    wiki = TrackedItem(
        3, ItemKind.DECISION, "We will host the wiki on the old VPS", None, 7, ("d1",), DAY1
    )
    replacing = "We will host the wiki on GitHub pages instead of the VPS"
    restated = "We will host the wiki on the old VPS box"
    window = [message("d2", "bob", 5, replacing), message("d3", "dee", 6, restated)]
    new = NewItem(ItemKind.DECISION, 0, replacing, None, ("d2",))
    assert _target(new, [wiki], window) is None
    again = NewItem(ItemKind.DECISION, 1, restated, None, ("d3",))
    assert _target(again, [wiki], window) == (3, "same conversation, 80% shared words")


def test_of_the_tracked_items_that_fit_the_one_citing_the_same_message_wins() -> None:
    twin = TrackedItem(6, ItemKind.QUESTION, "skip a folder in a backup", "ann", 8, ("q6",), DAY1)
    said = "how do I make the backup script skip the cache directory?"
    window = [message("q6", "ann", 5, said, conversation=8)]
    new = _question(said, mid="q6")
    for tracked in ([QUESTION, twin], [twin, QUESTION]):
        assert _target(new, tracked, window) == (6, "cites the same message")
