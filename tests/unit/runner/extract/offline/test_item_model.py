"""The learned item decisions: features that read speech acts and replies (not words of one
window), a deterministic fit, the weights file round trip, and the gate in the map step keeping
every item a grounded quote."""

from __future__ import annotations

from runner.core.chunks import chunk_messages
from runner.core.vocabulary import MappedChunk
from runner.extract.offline.chunk import summarize_chunk
from runner.extract.offline.digest import build_digest
from runner.extract.offline.item_model import (
    FEATURE_NAMES,
    KINDS,
    Example,
    ItemModel,
    KindModel,
    context_of,
    default_model,
    fit,
    message_features,
)
from runner.grounding.validate import validate_output
from tests.support.offline import _window


def features_of(*rows: tuple[str, str]) -> list[dict[str, float]]:
    messages = _window(*rows).messages
    context = context_of(messages)
    return [message_features(context, i) for i in range(len(messages))]


def test_features_read_commitments_questions_and_replies() -> None:
    commit, ack, question, other = features_of(
        ("ana", "@bob can you rotate the staging keys before Thursday?"),
        ("bob", "sure, I'll rotate the staging keys tonight"),
        ("gos", "why does the nightly build hang on the arm runners?"),
        ("ana", "lunch anyone"),
    )
    assert commit["rule_action"] == 1.0 and commit["rule_action_owner_other"] == 1.0
    assert commit["addressed"] == 1.0 and commit["others_after"] > 0
    assert ack["future"] == 1.0 and ack["first_person"] == 1.0 and ack["rule_action"] == 1.0
    assert question["rule_question"] == 1.0 and question["ends_with_question_mark"] == 1.0
    assert question["unanswered_question"] == 1.0 and question["answered"] == 0.0
    assert other["rule_action"] == other["rule_question"] == 0.0
    assert set(commit) == set(FEATURE_NAMES)


def test_an_answered_question_and_an_agreed_proposal() -> None:
    asked, answer, proposal, agreement = features_of(
        ("ana", "how do I pin the postgres version in compose?"),
        ("bob", "ana: set image: postgres:16.2 in the service"),
        ("gos", "let's move the standup to 10:00 from next week"),
        ("ana", "agreed"),
    )
    assert asked["answered"] == 1.0 and asked["unanswered_question"] == 0.0
    assert answer["addressed"] == 1.0
    assert proposal["rule_proposal"] == 1.0 and proposal["agreement_after"] == 1.0
    assert agreement["short"] == 1.0


def test_advice_taken_up_and_an_asker_still_stuck() -> None:
    asked, advice, taken, stuck = features_of(
        ("ana", "how do I stop the exporter from crashing on start?"),
        ("bob", "ana: try running it with the --no-cache flag"),
        ("ana", "bob: ok will do"),
        ("ana", "bob: still crashing, same error"),
    )
    assert advice["suggestion"] == 1.0 and advice["advice_taken_after"] == 1.0
    assert taken["takes_advice"] == 1.0 and asked["advice_taken_after"] == 0.0
    assert asked["asker_unresolved"] == 1.0 and stuck["asker_unresolved"] == 0.0


def toy_examples() -> list[Example]:
    """Decisions are the messages with a proposal that someone agreed to."""
    examples = []
    for i in range(40):
        proposal, agreed = i % 2 == 0, i % 3 == 0
        labels = frozenset({"decisions"} if proposal and agreed else ())
        features = {"rule_proposal": float(proposal), "agreement_after": float(agreed)}
        examples.append(Example(features, labels))
    return examples


def test_fit_is_deterministic_and_learns_the_toy_rule() -> None:
    first, second = fit(toy_examples()), fit(toy_examples())
    assert first.to_json() == second.to_json()  # byte for byte
    decisions = first.kinds["decisions"]
    both = {"rule_proposal": 1.0, "agreement_after": 1.0}
    assert decisions.accepts(both)
    assert not decisions.accepts({"rule_proposal": 1.0})
    assert not decisions.accepts({"agreement_after": 1.0})
    assert set(first.kinds) == set(KINDS) and all(m.mode == "rules" for m in first.kinds.values())


def test_weights_round_trip_and_modes() -> None:
    model = fit(toy_examples(), {"decisions": "filter", "open_questions": "propose"})
    again = ItemModel.from_json(model.to_json("about"))
    assert again == model and again.fingerprint() == model.fingerprint()
    assert again.gated("decisions") is not None and again.gated("action_items") is None
    assert again.kinds["open_questions"].propose and not again.kinds["decisions"].propose
    switched = again.with_modes({"decisions": "rules"})
    assert switched.gated("decisions") is None and switched.fingerprint() != model.fingerprint()


def test_shipped_weights_load_with_every_kind() -> None:
    model = default_model()
    assert set(model.kinds) == set(KINDS)
    assert all(set(m.weights) <= set(FEATURE_NAMES) for m in model.kinds.values())


TEAM = (
    ("ana", "let's move the standup to 10:00 from next week"),
    ("bob", "agreed"),
    ("gos", "what port does the metrics exporter listen on in staging?"),
    ("ana", "gos I will look it up after lunch and post the port"),
)


def summary_with(model: ItemModel | None):  # type: ignore[no-untyped-def]
    window = _window(*TEAM)
    [chunk] = chunk_messages(list(window.messages), 4000)
    return summarize_chunk(chunk, model), {m.message_id: m.normalized_text for m in window.messages}


def constant(probability_positive: bool, mode: str) -> KindModel:
    return KindModel(
        bias=30.0 if probability_positive else -30.0, weights={}, threshold=0.5, mode=mode
    )


def test_a_rejecting_filter_drops_the_rules_items() -> None:
    rules, _ = summary_with(None)
    assert rules.decisions  # the rules find the agreed proposal
    model = ItemModel({"decisions": constant(False, "filter")})
    gated, _ = summary_with(model)
    assert gated.decisions == [] and gated.action_items == rules.action_items


def test_proposals_are_grounded_quotes_of_the_accepted_message() -> None:
    model = ItemModel({"open_questions": constant(True, "propose")})
    summary, texts = summary_with(model)
    cited = {q.message_ids[0] for q in summary.open_questions}
    assert cited == {"x0", "x1", "x2", "x3"} - {"x1"}  # "agreed" has no two content words
    checked = validate_output(summary, texts)
    assert checked.rejections == []
    for question in summary.open_questions:
        assert question.asked_by == next(
            r[0] for i, r in enumerate(TEAM) if f"x{i}" == question.message_ids[0]
        )


def test_the_reduce_asks_the_model_whether_a_question_is_still_open() -> None:
    window = _window(*TEAM)
    [chunk] = chunk_messages(list(window.messages), 4000)
    mapped = [MappedChunk(summarize_chunk(chunk), tuple(chunk.message_ids))]
    rules = build_digest(mapped, window, [])
    assert [q.message_ids for q in rules.open_questions] == [["x2"]]
    closing = ItemModel({"open_questions": constant(False, "filter")})
    assert build_digest(mapped, window, [], closing).open_questions == []
    keeping = ItemModel({"open_questions": constant(True, "filter")})
    assert build_digest(mapped, window, [], keeping).open_questions == rules.open_questions
