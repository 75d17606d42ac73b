"""The offline writer's answer: statements chosen for the question (relevance, the parts of the
question they cover, no near-duplicates), in source order, one section per source with
evidence; and the reasons a chosen source has no section."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from runner.reports.coverage import ChosenSource, missing_sections
from runner.reports.evidence import (
    ChannelMessage,
    DocumentText,
    gather_evidence,
    question_terms,
    rank_evidence,
)
from runner.reports.extractive import write_extractive_report
from runner.reports.report import Report

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def channel(name: str, *lines: str, author: str = "ann") -> list[ChannelMessage]:
    return [
        ChannelMessage(name, f"{name}{i}", 1, author, T0 + timedelta(minutes=i), text)
        for i, text in enumerate(lines)
    ]


def write(question: str, *channels: list[ChannelMessage]) -> Report:
    units = gather_evidence(list(channels), [])
    return write_extractive_report(question, rank_evidence(question, units))


def answer_of(report: Report) -> list[str]:
    assert report.sections[0].heading == "Answer"
    return [sentence.sentence for sentence in report.sections[0].sentences]


def test_the_answer_states_rather_than_asks() -> None:
    report = write(
        "How is the staging database backup restored?",
        channel(
            "ops",
            "How is the staging database backup restored when the disk fails?",
            "The staging database backup is restored with the restore script from the vault.",
        ),
    )
    answer = answer_of(report)
    assert answer == [
        "The staging database backup is restored with the restore script from the vault."
    ]
    # The question asked in the channel is an open point, not an answer.
    assert report.sections[-1].heading == "Open points"
    assert [s.sentence for s in report.sections[-1].sentences] == [
        "How is the staging database backup restored when the disk fails?"
    ]


def test_a_sentence_repeating_a_chosen_one_is_not_quoted_twice() -> None:
    said = "The release build is signed with the hardware key in the office safe."
    report = write(
        "How is the release build signed?",
        channel("ops", said, said.replace("office safe", "office safe!"), said.lower()),
    )
    quoted = [sentence.sentence for sentence in report.sentences()]
    assert len(quoted) == 1 and quoted[0] == said


def test_each_part_of_the_question_gets_a_sentence() -> None:
    # Four sentences on the deploy window outrank, by BM25, the one on the rollback; the answer
    # still covers the rollback, the question's other part.
    report = write(
        "When does the deploy window open and who approves a rollback?",
        channel(
            "ops",
            "The deploy window opens on Friday at six in the evening.",
            "Lunch is at noon.",
            "The deploy window opens for the deploy of hotfixes at any hour.",
            "The coffee machine is broken again.",
            "The deploy window opens after the freeze on the deploy branch is lifted.",
            "The printer on the second floor is out of paper.",
            "The deploy window opens once the staging deploy passed its smoke tests.",
            "The meeting room is booked all afternoon.",
            "A rollback is approved by the on-call lead before it runs.",
        ),
    )
    answer = answer_of(report)
    assert "A rollback is approved by the on-call lead before it runs." in answer
    assert any("deploy window" in sentence for sentence in answer)


def test_the_answer_opens_with_its_best_sentence_and_the_rest_read_in_source_order() -> None:
    # The second sentence ranks first: it opens the answer, the other follows as said.
    report = write(
        "How are database migration rollbacks approved?",
        channel(
            "ops",
            "A database migration is reviewed by two people before it is merged.",
            "Lunch is at noon today.",
            "Rollbacks of a database migration are approved by the on-call lead.",
        ),
    )
    assert answer_of(report) == [
        "Rollbacks of a database migration are approved by the on-call lead.",
        "A database migration is reviewed by two people before it is merged.",
    ]


def test_every_source_with_evidence_gets_its_section() -> None:
    # ops says much more on the subject than dev; dev's one sentence still gets a section of its
    # own instead of vanishing under ops' sentences.
    ops = channel(
        "ops",
        "Database migration rollbacks are approved by the on-call lead.",
        "Approved rollbacks of a database migration go into the incident log.",
        "A database migration rollback needs a ticket before it is approved.",
        "Rollbacks approved for a database migration are announced in the channel.",
        "The database migration rollback approval expires after a day.",
        "Database migration rollbacks approved at night are reviewed the next morning.",
        "An approved database migration rollback is run by the release bot.",
        "Rejected database migration rollbacks are reopened as incidents, approved or not.",
        "Database migration rollbacks are approved in the change board on Tuesdays.",
        "Database migration rollbacks get approved faster with a tested script.",
        "Database migration rollbacks approved twice in one week trigger a review.",
        "Old database migration rollbacks are approved only by the architect.",
    )
    dev = channel("dev", "The database is backed up before a migration runs in the evening.")
    report = write("How are database migration rollbacks approved?", ops, dev)
    headings = [section.heading for section in report.sections]
    assert headings[:1] == ["Answer"] and "In #ops" in headings and "In #dev" in headings
    # Each source's section is short: its best few sentences, not a wall of quotes.
    assert all(len(section.sentences) <= 3 for section in report.sections)


def test_words_saying_how_a_question_asks_are_not_evidence_words() -> None:
    units = gather_evidence(
        [channel("ops", "I think we discussed lunch and the weather today.", author="Barry")], []
    )
    question = "What did Barry think when they discussed the legal framework?"
    assert question_terms(question) == ["barry", "legal", "framework"]
    # "think" and "discussed" alone would have made small talk evidence.
    assert rank_evidence(question, units) == []


def test_a_source_without_a_section_is_named_with_its_reason() -> None:
    ops = channel("ops", "Rollbacks of the database migration are approved by the on-call lead.")
    social = channel("social", "The football match starts at eight tonight in the pub.")
    chatter = channel("chatter", "ok")
    blank = DocumentText("9", "Blank", "", "hash", None)
    question = "How are database migration rollbacks approved?"
    units = gather_evidence([ops, social, chatter, []], [blank])
    ranked = rank_evidence(question, units)
    report = write_extractive_report(question, ranked)
    sources = [
        ChosenSource("channel", 1, "ops", False),
        ChosenSource("channel", 2, "social", False),
        ChosenSource("channel", 3, "chatter", False),
        ChosenSource("channel", 4, "quiet", True),
        ChosenSource("document", 9, "Blank", True),
    ]
    warnings = missing_sections(sources, units, ranked, report)
    assert [(w["source_id"], w["reason"]) for w in warnings] == [
        (2, "no_match"),
        (3, "nothing_quotable"),
        (4, "window_empty"),
        (9, "window_empty"),
    ]
    assert all(w["code"] == "no_section" for w in warnings)
    assert "question's words" in warnings[0]["message"]
    # A source the writer had evidence for but left out is named as such.
    unused = missing_sections(sources[:1], units, ranked, Report(question, "q", ()))
    assert [w["reason"] for w in unused] == ["not_cited"]


def test_the_answer_opens_with_sentences_that_stand_alone() -> None:
    """A sentence leaning on what came before ("However, ..."), a greeting with a problem and a
    table's caption name the question's words as often as the answer does; the answer's first
    sentence is the one that reads alone."""
    report = write(
        "How is the staging database backup restored?",
        channel(
            "ops",
            "However, the staging database backup restore was slow last time.",
            "hi, my staging database backup restore fails with an error",
            "Table 2 lists the staging database backup restore times.",
            "Restore the staging database backup with the vault script, then check the rows.",
        ),
    )
    answer = answer_of(report)
    assert answer[0].startswith("Restore the staging database backup")


def test_what_makes_a_poor_opening() -> None:
    from runner.reports.answer_shape import POOR_OPENING_WEIGHT, answer_opening_weight

    poor = [
        ("However, the index is rebuilt nightly.", False),
        ("bob: yes it is rebuilt nightly", True),
        ("Thanks, that rebuilt the index", True),
        ("Hello, my index rebuild fails with an error", True),
        ("I have to rebuild several indexes so that the search is fast.", True),
        ("bob: I'm trying to rebuild the index", True),
        ("Figure 3 shows the index size.", False),
        ("4\\.1 Dataset Comparison Table 1 presents properties of our data.", False),
    ]
    good = [
        ("The index is rebuilt nightly by the cron job.", False),
        ("bob: run reindex --all, it rebuilds every index", True),
        ("The problem of index bloat is solved by a nightly rebuild.", False),
        ("I rebuild the index with reindex --all every night.", True),
    ]
    assert [answer_opening_weight(t, chat=c) for t, c in poor] == [POOR_OPENING_WEIGHT] * len(poor)
    assert [answer_opening_weight(t, chat=c) for t, c in good] == [1.0] * len(good)
