"""The offline digest's quality rules (action items need a task, decisions from agreement in chat,
no placeholder topics, no hex-dump artifacts, capped lists say "N of M") and what keeps the reduce
step linear (the analysed sample, topic candidates at scale). Every example is written here for the
rule, not taken from the gold windows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from runner.core.contract import ArtifactKind, ChunkSummary, Link, SignalLevel, SignalQuality
from runner.core.vocabulary import MappedChunk
from runner.core.window import Window, WindowMessage
from runner.extract.offline import offline_map_concurrency, patterns
from runner.extract.offline.artifacts import find_snippets, is_dump
from runner.extract.offline.digest import (
    MAX_ANALYSED_MESSAGES,
    analysed_messages,
    build_digest,
)
from runner.extract.offline.merge import even_sample
from runner.extract.offline.text import view_message
from runner.extract.offline.topics import key_phrases
from tests.support.offline import PEOPLE, _message, _window, run_offline

# --- action items: an actor and a task ------------------------------------------------------


def test_courtesy_pronouns_and_time_words_are_no_task() -> None:
    for text in (
        "Thanks for the hint, I'll do that next time.",
        "ok i will look into it...cheers",
        "I'll try again later, thanks!",
        "Sure, I'll check it now",
    ):
        assert patterns.action(text, "bob", PEOPLE) is None, text
    assert not patterns.is_task("do it tomorrow, thx")
    assert patterns.is_task("rotate the staging keys tonight")


def test_past_tense_is_a_report_not_a_task() -> None:
    reported = patterns.action("#action bob migrated the dashboards to the new VMs", "gos", PEOPLE)
    assert reported is None
    assert patterns.action("TODO: already fixed the importer crash", "bob", PEOPLE) is None
    assert not patterns.is_task("updated the helm chart for the canary")
    # "need" ends in -ed but is no past tense.
    assert patterns.is_task("need the release notes proofread by someone")


def test_real_tasks_keep_their_actor() -> None:
    mine = patterns.action("Yes, I'll rotate the staging keys tonight.", "bob", PEOPLE)
    assert mine is not None and mine.owner == "bob" and mine.text.startswith("Rotate the staging")
    asked = patterns.action("@Ana can you please merge the docs PR before the cut?", "bob", PEOPLE)
    assert asked is not None and asked.owner == "Ana Souza"
    assert patterns.action("Did you restart the exporter?", "bob", PEOPLE) is None  # a question
    passed_on = patterns.action("Thanks, I will ask him to check the repo scope", "bob", PEOPLE)
    assert passed_on is not None and passed_on.owner == "bob"
    assert patterns.action("I'll ask in the kde channel then", "bob", PEOPLE) is None


def test_taking_up_advice_names_little_of_its_own() -> None:
    for text in (
        "ok will do, and any idea about the other player?",
        "I'll try it now. Thank you",
        "rae: gonna try that",
        "I don't believe so, but I'll double check",
        "sure, I'll give it a try",
    ):
        assert patterns.takes_advice(text, PEOPLE), text
    for text in (
        "I'll try again later, thanks!",
        "let me see",  # a momentary step, not a commitment
        "I will check the whole migration plan with the staging team tomorrow",  # its own task
        "we could try the other mirror",
    ):
        assert not patterns.takes_advice(text, PEOPLE), text


def test_suggestions_and_their_task() -> None:
    assert patterns.is_suggestion("have you tried running it with --no-cache?", PEOPLE)
    assert patterns.is_suggestion("try switching the backend to xine", PEOPLE)
    assert not patterns.is_suggestion("do you use vim or nano?", PEOPLE)
    assert not patterns.is_suggestion("the build finished an hour ago", PEOPLE)
    assert (
        patterns.suggested_task("have you tried running it with --no-cache", PEOPLE)
        == "try running it with --no-cache"
    )
    assert patterns.suggested_task("you could pin the image to 16.2", PEOPLE) == (
        "pin the image to 16.2"
    )


async def test_advice_taken_up_is_the_advised_persons_action_item() -> None:
    window = _window(
        ("rae", "my video player stutters on every file since the upgrade"),
        ("sol", "rae: try switching the player backend to xine, you can always go back"),
        ("tim", "the mirror is slow today"),
        ("rae", "sol: ok will do, thanks"),
    )
    actions = (await run_offline(window)).digest.action_items
    assert len(actions) == 1
    [taken] = actions
    assert taken.owner == "rae" and taken.message_ids[:2] == ["x1", "x3"]
    assert "xine" in taken.text


async def test_an_acceptance_with_nothing_suggested_is_no_action_item() -> None:
    window = _window(
        ("rae", "the mirror is slow today"),
        ("sol", "I'll try it now"),
    )
    assert (await run_offline(window)).digest.action_items == []


def test_the_asker_saying_the_answer_did_not_help_keeps_a_question_open() -> None:
    stuck = _window(
        ("uma", "how do I get the wifi card to connect on the new kernel?"),
        ("vic", "uma: reinstall the firmware package"),
        ("uma", "vic: done, still not connecting"),
    ).messages
    assert patterns.asker_unresolved(stuck, 0)
    thanked = _window(
        ("uma", "how do I get the wifi card to connect on the new kernel?"),
        ("vic", "uma: reinstall the firmware package"),
        ("uma", "vic: thanks, that fixed it"),
        ("uma", "the other laptop is still slow though"),
    ).messages
    assert not patterns.asker_unresolved(thanked, 0)


# --- decisions: agreement reached in chat ----------------------------------------------------


def test_agreement_phrasing_is_a_decision() -> None:
    agreed = patterns.decision("agreed, we pin numpy below 2.0 for the 1.x branch", PEOPLE)
    assert agreed is not None and agreed.text == "We pin numpy below 2.0 for the 1.x branch"
    assert patterns.decision("Agreed.", PEOPLE) is None
    dropped = patterns.decision("We'll drop Python 3.8 support in the next minor release.", PEOPLE)
    assert dropped is not None
    assert patterns.decision("we'll see how the benchmark looks", PEOPLE) is None
    assert patterns.decision("ok let's go with the hosted runner for arm64 builds", PEOPLE)


async def test_a_plan_confirmed_in_the_thread_is_a_decision() -> None:
    window = _window(
        ("dana", "so I should move the nightly export into the worker pool and drop the cron box"),
        ("erik", "that would work"),
        ("dana", "what about the retention job, keep it where it is?"),
        ("erik", "let's rename the priority queue to ingest-high before the release"),
        ("dana", "ok"),
        ("fay", "we should rewrite the scheduler in Rust someday"),
        ("gus", "the build is green again"),
        ("erik", "ok"),
    )
    decisions = (await run_offline(window)).digest.decisions
    texts = {d.text: d.message_ids for d in decisions}
    plan = next(ids for text, ids in texts.items() if "nightly export" in text)
    assert plan[:2] == ["x0", "x1"]
    rename = next(ids for text, ids in texts.items() if "priority queue" in text)
    assert rename[:2] == ["x3", "x4"]
    # An "ok" two messages later agrees with something else, not with the rewrite.
    assert not any("scheduler" in text for text in texts)


async def test_decision_words_in_one_persons_story_are_no_decision() -> None:
    window = _window(
        ("jo", "The kernel I compiled a week ago just decided to start working."),
        ("kai", "I decided to dualboot with Windows because of my schoolwork."),
        ("lu", "We decided to move the build cache to the shared volume."),
    )
    decisions = (await run_offline(window)).digest.decisions
    assert [d.message_ids[0] for d in decisions] == ["x2"]


async def test_an_intention_that_someone_answers_is_no_decision() -> None:
    window = _window(
        ("mo", "I want to install it on a p2-400 with 256mb ram"),
        ("ned", "ok"),
        ("mo", "let's pin the mirror to the university one for the lab machines"),
        ("ned", "agreed"),
    )
    decisions = (await run_offline(window)).digest.decisions
    assert [d.message_ids[:2] for d in decisions] == [["x2", "x3"]]


async def test_plus_one_merged_agrees_with_the_proposal_it_replies_to() -> None:
    window = _window(
        ("hana", "Proposal: let's vendor the protobuf runtime instead of pinning it"),
        ("ivo", "+1 merged", "x0"),
    )
    decisions = (await run_offline(window)).digest.decisions
    assert [d.message_ids[:2] for d in decisions] == [["x0", "x1"]]


# --- topics: never placeholders --------------------------------------------------------------


def test_placeholders_are_never_topics() -> None:
    messages = [
        _message(i, author, text)
        for i, (author, text) in enumerate(
            [
                ("kim", "see [<-LINK->] for the compose file of the proxy"),
                ("lee", "the proxy config is here [<-LINK->] and the error <-CODE->"),
                ("kim", "my proxy setup: <-CODE-> and [<-LINK->]"),
                ("lee", "ok the proxy works with [<-LINK->] now [IMAGE]"),
            ]
        )
    ]
    titles = [title.casefold() for title, _ in key_phrases([view_message(m) for m in messages], 10)]
    assert "proxy" in titles
    assert not {"link", "code", "image"} & set(titles)


def test_topic_candidates_list_each_message_once_in_order() -> None:
    messages = [
        _message(i, "kim" if i % 2 else "lee", f"the ingest queue stalls again, ingest queue {i}")
        for i in range(50)
    ]
    phrases = dict(key_phrases([view_message(m) for m in messages], 3))
    ids = phrases["ingest queue"]
    assert ids == [f"x{i}" for i in range(50)]  # once each, window order


# --- artifacts: what a person would copy ------------------------------------------------------


def test_hex_dumps_and_ids_are_not_artifacts() -> None:
    raw = "0100000002" + "ab34" * 40
    assert is_dump(ArtifactKind.LOG, raw)
    hashed = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c winnings 3"
    assert is_dump(ArtifactKind.OTHER, hashed)
    assert is_dump(ArtifactKind.LOG, "123e4567-e89b-12d3-a456-426614174000 queued")
    # A command is copied whole, ids and all; an error message is kept even with ids in it.
    assert not is_dump(ArtifactKind.COMMAND, "./node-cli sendraw " + raw)
    assert not is_dump(ArtifactKind.LOG, f"error: tx {raw} rejected: fee too low")
    assert not is_dump(ArtifactKind.LOG, f"me@box:~/src$ ./node-cli sendraw {raw}")  # a prompt
    assert not is_dump(ArtifactKind.LOG, f'walletinfo {raw}\n{{\n  "balance": "12.5"\n}}')
    message = _message(0, "kim", f"here it is\n```\n{raw}\n```\nand `git log --oneline -5`")
    kinds = [s.kind for s in find_snippets(view_message(message))]
    assert kinds == [ArtifactKind.COMMAND]


# --- capped lists say N of M -----------------------------------------------------------------


def test_capped_link_list_says_how_many_were_kept_of_how_many() -> None:
    messages = tuple(_message(i, "kim", f"docs https://example.org/page/{i}") for i in range(70))
    window = Window(channel_name="links", messages=messages)
    chunks = []
    for first in range(0, 70, 14):  # a chunk summary holds at most 15 links
        ids = tuple(f"x{i}" for i in range(first, first + 14))
        links = [
            Link(url=f"https://example.org/page/{m[1:]}", description="docs", message_ids=[m])
            for m in ids
        ]
        summary = ChunkSummary(
            chunk_summary="links",
            signal_quality=SignalQuality(level=SignalLevel.LOW, reason="links"),
            links=links,
        )
        chunks.append(MappedChunk(summary, ids))
    digest = build_digest(chunks, window, [])
    assert len(digest.links) == 60
    assert "kept 60 of 70 links" in digest.coverage.notes


# --- linear at scale ---------------------------------------------------------------------------


def test_analysed_sample_keeps_cited_messages_and_its_size() -> None:
    count = MAX_ANALYSED_MESSAGES + 5_000
    messages = [_message(i, "kim", "x") for i in range(count)]
    cited = {"x3", f"x{count - 1}"}
    sample = analysed_messages(messages, cited)
    ids = [m.message_id for m in sample]
    assert len(ids) == MAX_ANALYSED_MESSAGES and cited <= set(ids)
    assert ids == sorted(ids, key=lambda m: int(m[1:]))  # window order
    assert analysed_messages(messages[:100], set()) == messages[:100]
    # Evenly spaced: no stretch of the window is left out.
    assert even_sample(list(range(100)), lambda n: False, 10) == list(range(0, 100, 10))


def test_offline_map_runs_one_chunk_per_pool_process() -> None:
    assert offline_map_concurrency(3) == 3
    assert offline_map_concurrency(0) == 1  # a thread: one at a time
    assert offline_map_concurrency() >= 1


async def test_a_decision_refined_in_the_thread_is_one_decision() -> None:
    window = _window(
        ("hana", "Proposal: let's cache the geocoder results in Redis for 10 minutes"),
        ("ivo", "+1 but make it 30 minutes and skip errors", "x0"),
        ("hana", "agreed, we cache the geocoder results in Redis for 30 minutes, errors skipped"),
        ("jo", "unrelated: the office wifi password changed"),
    )
    decisions = (await run_offline(window)).digest.decisions
    assert len(decisions) == 1
    assert "30 minutes" in decisions[0].text
    assert {"x0", "x2"} <= set(decisions[0].message_ids)


def _conversation(key: str, rows: list[tuple[str, str]], start: int) -> list[WindowMessage]:
    return [
        WindowMessage(
            f"{key}{i}",
            author,
            datetime(2024, 3, 1, 9, tzinfo=UTC) + timedelta(minutes=start + i),
            text,
            conversation=key,
        )
        for i, (author, text) in enumerate(rows)
    ]


def test_a_threaded_windows_topics_are_its_real_conversations() -> None:
    from runner.extract.offline.topics import conversation_topics

    printer = _conversation(
        "p",
        [
            ("ann", "hi"),
            ("ann", "Why does the office printer reject jobs from the laptop?"),
            ("bob", "ann: which driver does the laptop use for the printer queue?"),
            ("ann", "the generic postscript driver from the vendor site"),
            ("bob", "switch to the ipp everywhere driver, the generic one breaks duplex jobs"),
        ],
        0,
    )
    chat = _conversation(
        "c", [("cid", "morning all"), ("dee", "morning!"), ("cid", "coffee?"), ("dee", "sure")], 10
    )
    monologue = _conversation(
        "m", [("eve", f"note {i} about the backup rotation schedule") for i in range(5)], 20
    )
    topics = conversation_topics([*printer, *chat, *monologue], 12)
    assert topics is not None and len(topics) == 1  # small talk and a monologue are no topics
    (topic,) = topics
    assert topic.title == "Why does the office printer reject jobs from the laptop?"
    assert topic.message_ids[0] == "p1" and "p0" not in topic.message_ids
    unthreaded = [WindowMessage(m.message_id, m.author, m.ts, m.normalized_text) for m in printer]
    assert conversation_topics(unthreaded, 12) is None  # not threaded: key phrases instead


def test_in_a_threaded_window_only_the_questions_own_conversation_answers_it() -> None:
    from runner.extract.offline.threads import Participants, find_answer

    asked = _conversation("q", [("ann", "How do I rotate the backup disks every week?")], 0)
    other = _conversation(
        "o", [("bob", "rotate the logs weekly with logrotate and compress them")], 1
    )
    window = [*asked, *other]
    assert find_answer(window, 0, Participants.of(window), asked[0].normalized_text) is None
    answered = _conversation(
        "q",
        [
            ("ann", "How do I rotate the backup disks every week?"),
            ("bob", "ann: which disks do you have?"),  # a question back does not answer
            ("bob", "label them A and B and swap them every Friday"),
        ],
        0,
    )
    answer = find_answer(answered, 0, Participants.of(answered), answered[0].normalized_text)
    assert (
        answer is not None and answer.message.message_id == "q2" and answer.rule == "conversation"
    )


async def test_a_threaded_windows_overview_tells_what_each_conversation_asked_and_got() -> None:
    printer = _conversation(
        "p",
        [
            ("ann", "Why does the office printer reject jobs from the laptop?"),
            ("bob", "ann: which driver does the laptop use for the printer queue?"),
            ("ann", "the generic postscript driver from the vendor site"),
            ("bob", "switch to the ipp everywhere driver, the generic one breaks duplex jobs"),
        ],
        0,
    )
    result = await run_offline(Window("office", tuple(printer)))
    overview = result.digest.overview
    asked = next(s for s in overview if s.sentence.startswith("ann asked:"))
    assert asked.message_ids == ["p0"] and "office printer reject jobs" in asked.sentence
    answered = next(s for s in overview if s.sentence.startswith("bob answered:"))
    assert answered.message_ids == ["p3"]  # not the question back (p1)
    assert not result.validation.rejections  # every sentence passed the validator


async def test_every_distinct_link_of_the_window_is_kept_past_a_chunks_cap() -> None:
    rows = [
        (f"user{i % 3}", f"the release notes for part {i} are at https://example.org/notes/{i}")
        for i in range(22)
    ]
    messages = _conversation("l", rows, 0)
    result = await run_offline(Window("links", tuple(messages)))
    assert result.chunk_count == 1  # one chunk, whose summary may keep only 15 links
    urls = {link.url for link in result.digest.links}
    assert urls == {f"https://example.org/notes/{i}" for i in range(22)}
    assert all(
        link.message_ids == [f"l{link.url.rsplit('/', 1)[1]}"] for link in result.digest.links
    )
