"""A report question's sub-questions by the rules, the model's answer checked, the evidence of
each sub-question merged without one crowding out the others, and the open points and bounded
additions of the refinement round, all as plain data."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from runner.reports.decompose import MAX_SUB_QUESTIONS, split_question
from runner.reports.digest_evidence import (
    DIGEST_EVIDENCE_KIND,
    StoredDigest,
    digest_snippets,
    snippet_evidence,
)
from runner.reports.evidence import (
    ChannelMessage,
    DocumentText,
    Evidence,
    RankedEvidence,
    message_evidence,
)
from runner.reports.extractive import write_extractive_report
from runner.reports.llm_decompose import SubQuestionList, checked_sub_questions
from runner.reports.merge import gather_for_sub_questions, merge_rankings
from runner.reports.refine import REFINE_MAX_UNITS, open_points, refine_evidence
from runner.reports.research import run_extractive_report
from runner.reports.sources import MessageSource

T0 = datetime(2024, 5, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "question",
    [
        "How are database migration rollbacks approved?",
        "What are the pros and cons?",  # each part one word: one question
        "Summarize the divergence between the law in England and Wales.",
        "and and ?? ,,",
    ],
)
def test_an_atomic_question_is_its_own_one_sub_question(question: str) -> None:
    assert split_question(question) == (" ".join(question.split()),)


def test_conjunctions_and_question_marks_split_a_question_into_its_parts() -> None:
    assert split_question("How are rollbacks approved and who pays the cloud bill?") == (
        "How are rollbacks approved",
        "who pays the cloud bill?",
    )
    assert split_question(
        "What is docker? How do I install it on ubuntu; and what about permissions?"
    ) == (
        "What is docker?",
        "How do I install it on ubuntu",
        "what about permissions?",
    )


def test_a_one_word_part_joins_its_neighbour_and_a_stopword_part_is_dropped() -> None:
    assert split_question(
        "Summarize the button layout, the shape and the appearance of the remote"
    ) == (
        "Summarize the button layout, the shape",
        "the appearance of the remote",
    )
    assert split_question("Who approves rollbacks, and so on, and who pays the cloud bill") == (
        "Who approves rollbacks",
        "who pays the cloud bill",
    )


def test_an_enumeration_is_capped_with_the_last_sub_question_taking_the_rest() -> None:
    parts = split_question(
        "install docker engine, configure the daemon, run compose files, debug container "
        "networking, clean dangling images"
    )
    assert len(parts) == MAX_SUB_QUESTIONS
    assert parts[-1] == "debug container networking; clean dangling images"


def test_the_models_sub_questions_are_checked() -> None:
    question = "How are database rollbacks approved and who pays the cloud hosting bill?"
    good = SubQuestionList(
        sub_questions=["How are database rollbacks approved?", "Who pays the cloud bill?"]
    )
    assert checked_sub_questions(question, good) == (
        "How are database rollbacks approved?",
        "Who pays the cloud bill?",
    )
    with pytest.raises(ValueError, match="names none of the question's words"):
        checked_sub_questions(
            question, SubQuestionList(sub_questions=["What is the weather in Paris?"])
        )
    with pytest.raises(ValueError, match="repeats another"):
        checked_sub_questions(
            question, SubQuestionList(sub_questions=["cloud bill paid?", "paid cloud bill"])
        )
    one = SubQuestionList(sub_questions=["rollbacks approved"])
    assert checked_sub_questions(question, one) == (question,)


def _channel(texts: list[str]) -> list[ChannelMessage]:
    return [
        ChannelMessage("ops", str(i), 1, f"user{i}", T0 + timedelta(minutes=i), text)
        for i, text in enumerate(texts)
    ]


ROLLBACKS = [
    f"Rollback approval rule {i}: database rollbacks are approved by the lead." for i in range(12)
]
BILL = "The cloud hosting bill is paid by the finance team each month."


def test_the_merge_is_round_robin_so_a_rare_part_is_not_crowded_out() -> None:
    units = message_evidence(_channel([*ROLLBACKS, BILL]), 0)
    gathered = gather_for_sub_questions(
        ["How are database rollbacks approved", "who pays the cloud hosting bill"], units
    )
    # The bill's one unit comes second, right after the best rollback unit, not thirteenth.
    assert gathered.merged[1].evidence.text == BILL
    assert gathered.merged[1].serves == (1,)
    assert gathered.gathered_counts() == [12, 1]


def _ranked(source_text: str, message: str, score: float, index: int) -> RankedEvidence:
    source = MessageSource("ops", message, 1, "ann", T0, source_text, 0, len(source_text))
    return RankedEvidence(Evidence(source_text, source, "#ops", 0, 0), score, (index,))


def test_a_unit_gathered_twice_is_kept_once_with_every_sub_question_it_serves() -> None:
    shared = "Rollbacks of the database need the lead and the finance team."
    first = [_ranked(shared, "1", 1.0, 0)]
    second = [_ranked(shared, "1", 1.0, 1), _ranked(shared, "2", 0.5, 1)]  # same words again
    merged = merge_rankings([first, second])
    assert len(merged) == 1 and merged[0].serves == (0, 1)


def test_an_uncited_sub_question_is_an_open_point_and_the_refinement_is_bounded() -> None:
    units = message_evidence(_channel([*ROLLBACKS, BILL]), 0)
    sub_questions = ["How are database rollbacks approved", "who pays the cloud hosting bill"]
    question = " and ".join(sub_questions)
    # Only the rollback part gathered (as if the bill's units had been past the bound).
    gathered = gather_for_sub_questions(sub_questions[:1], units)
    first = write_extractive_report(question, gathered.merged)
    points = open_points(question, sub_questions, gathered.merged, first)
    assert [(p.reason, p.sub_question) for p in points] == [("no_cited_evidence", 1)]
    added = refine_evidence(points, units, gathered.merged)
    assert [item.evidence.text for item in added] == [BILL] and added[0].serves == (1,)
    many = [f"The cloud hosting bill line {i} is paid by finance." for i in range(30)]
    added = refine_evidence(points * 5, message_evidence(_channel(many), 0), [])
    assert len(added) <= REFINE_MAX_UNITS


def test_the_offline_report_cites_both_parts_of_a_two_part_question() -> None:
    run = run_extractive_report(
        "How are database rollbacks approved and who pays the cloud hosting bill?",
        [_channel([*ROLLBACKS, BILL])],
        [],
    )
    research = run.research.as_json(run.report)
    assert [s["cited"] for s in research["sub_questions"]] == [True, True]
    assert BILL in [sentence.sentence for sentence in run.report.sentences()]


def _document(text: str) -> DocumentText:
    return DocumentText("7", "Handbook", text, "sha256:" + "a" * 64)


def _digest(
    digest_id: int, query: str, snippets: list[tuple[str, str]], hash_: str
) -> StoredDigest:
    payload = {
        "source_text_hash": hash_,
        "evidence_snippets": [
            {"text": t, "locator": loc, "relevance_score": 0.5} for loc, t in snippets
        ],
    }
    return StoredDigest(digest_id, query, payload)


def test_a_digest_for_the_same_normalized_query_gives_its_checked_snippets_once() -> None:
    first = "Rollbacks are approved by the on-call lead of the week."
    second = "The cloud hosting bill is paid by the finance team."
    text = f"{first} {second}"
    document = _document(text)
    whole = f"char:0-{len(first)}"
    inside = "char:0-9"  # overlaps the first snippet: the same span again
    wrong = f"char:1-{len(first)}"  # does not slice to its text
    later = f"char:{len(first) + 1}-{len(text)}"
    snippets = [(whole, first), (inside, first[:9]), (wrong, first), (later, second)]
    digests = [
        _digest(3, "other question", [(later, second)], document.source_text_hash),
        _digest(2, "who approves  rollbacks?", snippets, "sha256:" + "b" * 64),  # other text
        _digest(1, "who approves  rollbacks?", snippets, document.source_text_hash),
    ]
    chosen = digest_snippets(document, digests, ["who approves rollbacks?"])
    assert chosen is not None and chosen.digest_id == 1
    assert chosen.snippets == ((whole, first), (later, second)) and chosen.left_out == 2
    units = snippet_evidence(replace(document, snippets=chosen.snippets), 1)
    assert [u.text for u in units] == [first, second]
    assert [u.kind for u in units] == [DIGEST_EVIDENCE_KIND] * 2
    assert digest_snippets(document, digests, ["another question"]) is None
