"""How a message names a person: folded handles, word-bounded mentions, IRC suffixes, and
channel-scoped handles."""

from __future__ import annotations

import pytest

from runner.catchup.handles import Handles, handle_key


@pytest.mark.parametrize(
    ("given", "key"),
    [
        ("Alice", "alice"),
        ("@alice", "alice"),
        ("alice_", "alice"),
        ("alice__", "alice"),
        ("alice^", "alice"),
        ("alice|away", "alice"),
        ("ann#0420", "ann"),
        ("  Bob  ", "bob"),
        ("alice2", "alice2"),
    ],
)
def test_a_handle_folds_case_at_discriminators_and_irc_decorations(given: str, key: str) -> None:
    assert handle_key(given) == key


ALICE = Handles.of([("alice", None), ("al-ops", 7)])


def _named(text: str, channel: int = 1) -> list[str]:
    return [text[start:end] for start, end in ALICE.mentions(channel, text)]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("@alice can you look?", ["@alice"]),
        ("alice: the build is red", ["alice"]),
        ("Alice, the build is red", ["Alice"]),
        ("thanks alice_ that worked", ["alice_"]),
        ("alice|away: ping", ["alice|away"]),
        ("ask alice.", ["alice"]),
        ("alice's patch", ["alice"]),
    ],
)
def test_a_mention_is_the_handle_as_a_whole_word(text: str, found: list[str]) -> None:
    assert _named(text) == found


@pytest.mark.parametrize(
    "text",
    [
        "malice aforethought",
        "alicebot restarted",
        "alice2 is someone else",
        "mail alice@example.com",
        "see example.com/alice for it",
        "the alice-bot crashed",
    ],
)
def test_a_handle_inside_another_word_address_or_path_is_no_mention(text: str) -> None:
    assert _named(text) == []


def test_a_channel_scoped_handle_names_the_person_only_in_that_channel() -> None:
    assert _named("al-ops: deploy?", channel=7) == ["al-ops"]
    assert _named("al-ops: deploy?", channel=1) == []
    assert ALICE.is_person(7, "AL-OPS") and not ALICE.is_person(1, "al-ops")
    assert ALICE.is_person(1, "Alice_")


def test_the_prefilter_is_a_superset_of_the_exact_match() -> None:
    assert ALICE.prefilter() == r"(al\-ops|alice)"
