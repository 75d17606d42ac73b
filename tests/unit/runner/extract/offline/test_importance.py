"""Conversations ranked by importance, not size; noise never told; the signal level earned."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from runner.core.contract import SignalLevel
from runner.core.window import Window, WindowMessage
from runner.extract.offline.digest import _signal
from runner.extract.offline.importance import (
    echo_question,
    importance,
    is_noise,
    names_its_subject,
    personal_plan,
    worth_quoting,
)
from runner.extract.offline.topics import ranked_conversations
from runner.grounding.normalize import normalize_text
from tests.support.offline import run_offline

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def _conversation(key: str, rows: list[tuple[str, str]], start: int) -> list[WindowMessage]:
    return [
        WindowMessage(
            message_id=f"{key}{i}",
            author=author,
            ts=T0 + timedelta(minutes=start + i),
            normalized_text=normalize_text(text),
            conversation=key,
        )
        for i, (author, text) in enumerate(rows)
    ]


RESOLVED = [
    ("ann", "my wifi drops every few minutes after the upgrade to 22.04, any idea why?"),
    ("bob", "ann: check dmesg for iwlwifi errors, power saving breaks that driver"),
    ("ann", "dmesg shows iwlwifi firmware error messages indeed"),
    ("bob", "set wifi.powersave = 2 in /etc/NetworkManager/conf.d/default-wifi-powersave-on.conf"),
    ("ann", "that fixed it, thanks bob"),
]
LUNCH = [
    ("cid", "anyone up for lunch? the pizza place opened again downstairs"),
    ("dee", "lunch sounds great, pizza it is for me today"),
    ("eve", "count me in for lunch, I am starving after this long morning"),
    ("fay", "pizza again? fine, lunch at noon then, see you all downstairs"),
    ("gus", "I'll join you for lunch later, save me a slice of pizza"),
    ("cid", "lol ok, lunch at noon downstairs, the pizza place by the door"),
    ("dee", "haha great, see you at lunch"),
    ("eve", "going to grab a coffee before lunch"),
]
THANKS = [
    ("hal", "thanks everyone for all the help yesterday, really appreciated it a lot"),
    ("ivy", "you're welcome hal, glad we could help you out with it"),
    ("jon", "thanks hal, any time, that is what the channel is for"),
    ("hal", "thanks again all, have a nice day everyone"),
    ("kim", "cheers hal, have a great day too"),
]


def _window() -> Window:
    messages = [
        *_conversation("lunch", LUNCH, 0),
        *_conversation("thanks", THANKS, 20),
        *_conversation("wifi", RESOLVED, 40),
    ]
    return Window(channel_name="help", messages=tuple(messages))


@pytest.mark.parametrize(
    "text",
    [
        "thanks!",
        "ok I'm going to micowave my dinner",
        "Had to go last night",
        "lol",
        "hi all",
        "brb",
        "good night everyone",
        "*** alice has joined #ubuntu",
    ],
)
def test_greetings_meals_leaving_thanks_jokes_and_join_lines_are_noise(text: str) -> None:
    assert is_noise(text)


@pytest.mark.parametrize(
    "text",
    [
        "thanks, setting the MTU to 1400 in /etc/network/interfaces fixed the dropped packets",
        "How do I mount an NTFS partition read-write at boot?",
        "we decided to pin postgres to 16 until the benchmark is done",
    ],
)
def test_work_that_mentions_thanks_or_asks_is_not_noise(text: str) -> None:
    assert not is_noise(text)


def test_a_thanks_or_lunch_thread_never_outranks_a_resolved_problem() -> None:
    ranked = ranked_conversations(_window().messages)
    assert ranked is not None
    titles = [r.topic.title for r in ranked]
    # The lunch thread is the largest (8 messages, 5 people) and the thanks thread has more
    # people than the wifi one: size and head count alone would put either first.
    assert ranked[0].topic.message_ids[0].startswith("wifi"), titles
    assert ranked[0].importance.worth_telling and ranked[0].importance.earned
    wifi_score = ranked[0].importance.score
    for members in (LUNCH, THANKS):
        found = importance(_conversation("x", members, 0), set())
        assert found.score < wifi_score
        assert not found.worth_telling
        assert not found.earned


async def test_noise_is_never_in_the_overview_or_the_highlights() -> None:
    window = _window()
    digest = (await run_offline(window)).digest
    told = [*digest.overview, *digest.highlights]
    assert told, "the resolved problem is told"
    cited = {m for sentence in told for m in sentence.message_ids}
    assert any(m.startswith("wifi") for m in cited)
    assert not any(m.startswith(("lunch", "thanks")) for m in cited), [s.sentence for s in told]
    assert "pizza" not in " ".join(s.sentence for s in told).casefold()
    # The title names the important conversation and counts the others.
    assert "wifi" in digest.title and "more conversation" in digest.title


COUNTS = {
    "decisions": 2,
    "action items": 3,
    "open questions": 4,
    "links": 3,
    "artifacts": 2,
    "knowledge items": 3,
}


def test_high_signal_needs_a_firm_decision_or_answered_problems() -> None:
    # Plenty of items (what the level used to count), nothing earned: MEDIUM, and it says why.
    unearned = _signal(COUNTS, True, [], firm_decisions=0, answered=0)
    assert unearned.level == SignalLevel.MEDIUM
    assert "no firm decision" in unearned.reason
    assert _signal(COUNTS, True, [], firm_decisions=1, answered=0).level == SignalLevel.HIGH
    ranked = ranked_conversations(_window().messages)
    assert ranked is not None
    # One answered problem in a threaded window is not enough; two are.
    assert _signal(COUNTS, True, ranked, 0, 0).level == SignalLevel.MEDIUM
    assert _signal(COUNTS, True, [*ranked, *ranked], 0, 0).level == SignalLevel.HIGH
    # Not threaded: answered questions (Q&A items) count instead of conversations.
    assert _signal(COUNTS, True, None, 0, answered=2).level == SignalLevel.HIGH
    # Few items stay below HIGH whatever was earned.
    few = dict.fromkeys(COUNTS, 0) | {"links": 2}
    assert _signal(few, True, ranked, 3, 3).level == SignalLevel.LOW


PROBLEMS = [
    "why does apt-get fail with a hash sum mismatch on the security mirror?",
    "how do I mount an NTFS partition read-write at boot with fstab?",
    "why does grub fail to boot the new kernel after the upgrade?",
    "how can I make the nvidia driver survive a kernel update?",
]


def _day(key: str, day: int, question: str) -> list[WindowMessage]:
    rows = [
        ("ann", question),
        ("bob", f"ann: check the logs under /var/log for the {key} error first, then the config"),
        ("ann", f"the {key} error is in /var/log/syslog indeed, the config file looks fine"),
        ("bob", f"then reinstall the {key} package with sudo apt-get install --reinstall"),
        ("ann", "that worked, thanks"),
    ]
    return _conversation(key, rows, day * 24 * 60)


async def test_a_window_of_several_days_is_told_day_by_day_after_a_roll_up() -> None:
    keys = ["apt", "ntfs", "grub", "nvidia"]
    messages = [m for day, key in enumerate(keys) for m in _day(key, day, PROBLEMS[day])]
    digest = (await run_offline(Window(channel_name="help", messages=tuple(messages)))).digest
    dated = [s for s in digest.overview if s.sentence[:4] == "2025"]
    # Two conversations in the roll-up, the other days one dated sentence each, in date order.
    assert [s.sentence[:10] for s in dated] == sorted(s.sentence[:10] for s in dated)
    assert len(dated) == 2, [s.sentence for s in digest.overview]
    for sentence in dated:
        day = int(sentence.sentence[8:10]) - T0.day
        assert sentence.message_ids == [f"{keys[day]}0"]
    undated = [s for s in digest.overview if " asked: " in s.sentence and s not in dated]
    assert len(undated) == 2


@pytest.mark.parametrize(
    ("text", "firm"),
    [
        ("we decided to pin postgres to 16 until the benchmark is done", True),
        ("#agreed ship 2.1 on friday", True),
        ("From now on, pull requests need two reviews", True),
        ("the team signed off on the 2.1 release plan", True),
        ("I want to install it on p2-400 256mb ram and 32mb vid card", False),
        ("Tuntun then i decided to reformat.", False),
        ("If you've decided to get down and dirty with linux, go get slackware.", False),
        ("Everyone's contacts have signed off for everyone I know using Gaim.", False),
        ("so what is preventing you from using those, we'll go with Consul?", False),
    ],
)
def test_a_told_decision_is_the_groups_not_an_intention(text: str, firm: bool) -> None:
    from runner.extract.offline.patterns import firm_decision

    assert firm_decision(text) is firm


FOLLOW_UP = [
    ("sam", "I am installing Ubuntu off a USB disk and the download step is stuck at 97 percent"),
    ("tom", "sam: those last few percent depend on your internet speed, the mirror is fine"),
    ("sam", "tom: approx how much is it downloading at the last 3%? it's been 30 minutes"),
    ("tom", "sam: a few hundred megabytes, you may skip it and update after the reboot"),
    ("sam", "tom: skipped it and the install finished, thanks"),
]


async def test_a_follow_up_put_to_a_helper_is_told_by_the_problem_it_follows() -> None:
    # The title is the opener's first question with a question mark (the follow-up to tom);
    # the overview quotes what the conversation is about: the problem stated first.
    window = Window(channel_name="help", messages=tuple(_conversation("usb", FOLLOW_UP, 0)))
    digest = (await run_offline(window)).digest
    asked = [s for s in digest.overview if s.sentence.startswith("sam ")]
    assert asked and asked[0].message_ids == ["usb0"], [s.sentence for s in digest.overview]
    assert not any("usb2" in s.message_ids for s in digest.overview)


@pytest.mark.parametrize(
    ("question", "told"),
    [
        ("I must do it on every host?", False),
        ("is it the same?", False),
        ("why is the bind9 cache only hit when I run screen?", True),
        ("how to check what wifi drivers are loaded to my system?", True),
    ],
)
def test_a_told_question_names_its_subject(question: str, told: bool) -> None:
    assert names_its_subject(question) is told


@pytest.mark.parametrize(
    ("snippet", "told"),
    [
        ("ps -aux", False),
        ("docker inspect <container_id>", False),
        ("sudo mount /dev/sdb1 /home/jacob/usbdrive -o uid=1000,gid=1000", True),
        ("[Service]\nRestart=always", True),
        ("./et-linux-2.56-2.x86.run: Permission denied", False),
    ],
)
def test_a_highlighted_snippet_is_more_than_a_short_command(snippet: str, told: bool) -> None:
    assert worth_quoting(snippet) is told


@pytest.mark.parametrize(
    ("text", "plan"),
    [
        ("wilee-nilee: however as we speak i just decided to clone disk by disk", True),
        ("I'm going to reinstall the whole thing tonight", True),
        ("we decided to pin postgres to 16 until the benchmark is done", False),
        ("#agreed ship 2.1 on friday", False),
        ("ubuntu no longer uses mir or upstart going forward.", False),
    ],
)
def test_one_persons_plan_is_no_told_decision(text: str, plan: bool) -> None:
    assert personal_plan(text) is plan


@pytest.mark.parametrize(
    ("reply", "echo"),
    [
        ("slow wifi? i use the same wifi, works fine for me", True),
        ("what? no", True),
        ("Maybe pulseaudio is crashing? Have you tried killall pulseaudio in a terminal", False),
        ("kernels have a minor version that uname does not show", False),
    ],
)
def test_a_reply_echoing_a_question_back_is_no_answer(reply: str, echo: bool) -> None:
    assert echo_question(reply) is echo


async def test_a_nick_cut_short_is_no_action_marker() -> None:
    # "action:" addresses actionparsnip (IRC users type a nick's first letters); the side
    # chat is not told, so its rule-found "action" is no highlight.
    side = [
        ("actionparsnip", "ageeb: is the shadow shown on all desktops or only the first one?"),
        ("ageeb", "action: if i turn off compiz shadow goes away"),
    ]
    messages = [*_conversation("wifi", RESOLVED, 0), *_conversation("side", side, 30)]
    digest = (await run_offline(Window(channel_name="help", messages=tuple(messages)))).digest
    assert any("compiz" in a.text for a in digest.action_items)
    assert not any("compiz" in s.sentence for s in digest.highlights)
