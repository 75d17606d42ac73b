"""The phrase families channel memory reads state changes from, each with its false friends:
a task reported done, the asker's question closed, a decision retracted, reverted or switched
away from. The sentences are the shapes people write in chat, not copies of one window."""

from __future__ import annotations

import pytest

from runner.memory.cues import closes_question, completion, retracts, reverts, switches


@pytest.mark.parametrize(
    "text",
    [
        "staging certs are updated, done",
        "done",
        "EriC^^ : done",
        "ok done, it is on the pastebin",
        "Staging upgrade done:\n$ psql -c 'select version();'",
        "crimsun: done, and then?",
        "Done, and done.",
        "already done thank you",
        "I've pushed the fix",
        "just merged it",
        "the migration is finished",
        "fixed that too, thanks",
        "the backups too - done - yes",
        "ok ... done",
    ],
)
def test_a_clause_reporting_the_task_finished_is_a_completion(text: str) -> None:
    found = completion(text)
    assert found is not None and found.group(0).casefold() in text.casefold()


@pytest.mark.parametrize(
    "text",
    [
        "Reading package lists... Done",
        "Building dependency tree... Done",
        "done this a year ago",
        "vi has always done that",
        "I have done several installs before",
        "I'm done for today",
        "I'm done with exams next week",
        "when im done recording and press stop",
        "if that's done you're finished",
        "the ifup should have done it",
        "has it already been done?",
        "you haven't done anything that could cause this",
        "they fixed nautilus, it used to crash",
        "nicely done, tritium",
        "bmp merged into audacious :)",
        "a newer (fixed) version is out",
        "I have just done 1 & 2, about to do 3",
        "not merged yet",
        "I just finished watching the dvd",
        "i had done that manually :D",
        "I had already pushed it last night",
        "almost done",
        "nearly finished, one more table",
        "I thought the cron job was fixed",
        "I asked twice and got no answer, so i'm done",
        "and I'm done there..... sorry",
        "it's merged upstream now, right?",
    ],
)
def test_false_friends_of_done_are_no_completion(text: str) -> None:
    assert completion(text) is None


def test_a_long_statement_naming_the_task_is_a_completion_only_when_length_is_allowed() -> None:
    text = "the deploy docs for the backup flow are updated and merged"
    assert completion(text) is None  # too long to stand for the owner's own task unnamed
    assert completion(text, short=False) is not None  # fine when it names the task


@pytest.mark.parametrize(
    "text",
    [
        "nvm, found it",
        "oh wait nvm",
        "nvm.",
        "ok nvm. it was the proxy",
        "never mind, SMS arrived",
        "i just found it :)",
        "cafuego: Figured it out; thanks.",
        "that fixed it, thanks!",
        "aptitude install graphviz solved the problem :-)",
        "Rolling back to 1.12.5 stable fixed everything!",
        "alright it works now",
        "problem solved",
        "okay, fixed that using fsck -y",
        "I solved my issue with help from the #debian folks",
        "I think I solved my original problem by switching to pulse",
        "solved (needed a trailing slash)",
        "[solved]",
        "rex: [solved]",
        "thanks ... it's fixed now :)",
        "you fixed it, thanks a lot",
        "ok got my wifi sorted finally",
        "i fixed the samba mount problem, it was the uid option",
    ],
)
def test_the_asker_closes_their_question(text: str) -> None:
    assert closes_question(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "still haven't figured it out",
        "I didn't find it, where is it?",
        "hopefully i get this solved",
        'export NVM_DIR="$HOME/.nvm"',
        "source nvm.sh first",
        "did that fix it?",
        "you never know who has gone through the same thing and solved it",
        "i had a similar issue, problem solved when i uninstalled zeroconf",
        "nice, you found it",
        "he fixed it on his laptop, not mine",
        "i have found that the card works with the old driver, where do I get it?",
        "I found it as Systemmonitor in the menu, right?",
        "fixed in the next release",
        "solved what?",
    ],
)
def test_false_friends_of_a_closed_question(text: str) -> None:
    assert closes_question(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "scratch that, we'll keep Postgres 16",
        "monzie scratch that",
        "oh scratch that, the old one is fine",
        "Sorry, forget that, it doesn't give you the vendor",
        "never mind",
        "nvm. the old one is fine",
    ],
)
def test_a_retraction_opens_the_message(text: str) -> None:
    assert retracts(text) is not None


@pytest.mark.parametrize(
    "text",
    ["I can't scratch that itch", "should we scratch that?", "the nvm docs say so"],
)
def test_retraction_words_elsewhere_are_no_retraction(text: str) -> None:
    assert retracts(text) is None


def test_a_revert_is_reported_with_what_it_names() -> None:
    found = reverts("so I reverted back and then it works")
    assert found is not None and found[1] == ""  # unnamed: the conversation's latest decision
    named = reverts("the inotify and abi breakage was reverted, so you're safe")
    assert named is not None and "breakage" in named[1]
    assert reverts("will that be reverted on reboot?") is None
    assert reverts("if it breaks we could roll back") is None
    undid = reverts("i undid the obvious things")
    assert undid is not None and undid[1] == "obvious things"  # named: not just the latest


@pytest.mark.parametrize(
    "text",
    [
        "tried the new theme for a day and then reverted",
        "so I reverted back to xfce",
        "had to revert to the 304 driver",
        "we rolled back to 1.12",
    ],
)
def test_a_story_or_going_back_to_something_is_no_revert(text: str) -> None:
    assert reverts(text) is None


def test_going_back_to_something_is_a_switch() -> None:
    assert switches("we reverted back to the old runner") is not None


@pytest.mark.parametrize(
    "text",
    [
        "after the benchmark we're switching to Postgres 17 instead of 16",
        "let's go with borg rather than restic",
        "we decided to switch to borg instead of restic",
        "I'm moving to the new runner",
    ],
)
def test_a_committed_switch_supersedes(text: str) -> None:
    assert switches(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "you can try switching to the fglrx driver",
        "i'm having a clock drift problem since switching to ubuntu breezy",
        "change the line to nvidia instead of nv",
        "should we switch to Postgres 17?",
        "I won't be switching to breezy before that",
        "perhaps I'll load host volumes instead of copying",
    ],
)
def test_advice_background_questions_and_hedges_are_no_switch(text: str) -> None:
    assert switches(text) is None
