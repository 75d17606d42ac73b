"""Figures on a tiny hand-made case: counts, P/R/F1, grounding, and their rendering."""

from __future__ import annotations

import json

import pytest

from runner.core.contract import (
    ActionItem,
    Artifact,
    ArtifactKind,
    ContentPointer,
    Coverage,
    Decision,
    Digest,
    KnowledgeItem,
    KnowledgeKind,
    Link,
    SignalLevel,
    SignalQuality,
)
from runner.digests.pipeline import PipelineResult
from runner.evaluation.gold import GoldFile
from runner.evaluation.scoring import Counts, grounding_of, score_fields
from runner.evaluation.tables import (
    EvalSection,
    render_table,
    section_from_dict,
    section_to_dict,
)
from runner.grounding.validate import Rejection, ValidationResult

TEXTS = {
    "a": "We decided to ship on Friday. Config: retries=5",
    "b": "I'll write the release notes. See https://example.org/notes",
    "c": "lunch?",
}


def gold_file() -> GoldFile:
    return GoldFile.model_validate(
        {
            "format": "digestd-gold/1",
            "name": "tiny",
            "annotator": "test",
            "window": {
                "root": "repo",
                "path": "x.jsonl",
                "channel": "c",
                "first_message_id": "a",
                "last_message_id": "c",
                "message_count": 3,
            },
            "decisions": [
                {"text": "Ship on Friday", "message_ids": ["a"]},
                {"text": "Freeze the API", "message_ids": ["c"]},
            ],
            "action_items": [
                {"text": "Write the release notes", "owner": "Bo", "message_ids": ["b"]}
            ],
            "links": [{"url": "https://example.org/notes", "message_ids": ["b"]}],
            "artifacts": [
                {
                    "kind": "config",
                    "title": "retries",
                    "message_id": "a",
                    "char_start": 38,
                    "char_end": 47,
                    "quote": "retries=5",
                }
            ],
        }
    )


def digest(pointer_end: int = 47) -> Digest:
    return Digest(
        title="t",
        signal_quality=SignalQuality(level=SignalLevel.HIGH, reason="r"),
        coverage=Coverage(messages_total=3, messages_covered=3),
        decisions=[
            Decision(text="We decided to ship on Friday", message_ids=["a"]),
            Decision(text="Dinner at noon", message_ids=["c"]),
        ],
        action_items=[
            ActionItem(text="Write the release notes", owner="Bo Berg", message_ids=["b"])
        ],
        links=[Link(url="https://example.org/notes", message_ids=["b"])],
        artifacts=[
            Artifact(
                kind=ArtifactKind.CONFIG,
                title="cfg",
                pointer=ContentPointer(
                    message_id="a", char_start=30, char_end=pointer_end, quote=TEXTS["a"][30:47]
                ),
            )
        ],
        knowledge_items=[
            KnowledgeItem(
                key="K1",
                kind=KnowledgeKind.FACT,
                title="notes",
                content="release notes written",
                message_ids=["b"],
            )
        ],
    )


def test_counts_and_f1_on_a_hand_made_case() -> None:
    scores = score_fields(gold_file(), digest())
    decisions = scores["decisions"]
    # "Ship on Friday" matches; "Dinner at noon" shares message c with "Freeze the API" but no
    # content word.
    assert decisions.counts == Counts(gold=2, extracted=2, matched=1)
    assert decisions.lenient == Counts(gold=2, extracted=2, matched=2)
    assert [i.text for i in decisions.missed] == ["Freeze the API"]
    assert scores["action_items"].counts == Counts(1, 1, 1)
    assert scores["action_items"].owner_agreement == (1, 1)  # "Bo" is "Bo Berg"
    assert scores["links"].counts == Counts(1, 1, 1)
    assert scores["artifacts"].counts == Counts(1, 1, 1)  # [30:47] overlaps [38:47]
    assert scores["topics"].counts == Counts(0, 0, 0)
    total = sum((s.counts for s in scores.values()), Counts())
    assert total == Counts(gold=5, extracted=5, matched=4)
    assert total.precision == total.recall == 0.8
    assert total.f1 == pytest.approx(0.8)


def test_undefined_ratios_are_none_not_zero_or_one() -> None:
    assert Counts(0, 0, 0).precision is None and Counts(0, 0, 0).f1 is None
    nothing_found = Counts(gold=3, extracted=0, matched=0)
    assert nothing_found.precision is None and nothing_found.recall == 0.0
    assert nothing_found.f1 == 0.0


def result_of(output: Digest, rejections: list[Rejection]) -> PipelineResult:
    validation = ValidationResult(output, {}, {}, rejections)
    return PipelineResult(validation, 1, 0, [], [], [], 0.0, 0)


def test_grounding_counts_verbatim_pointers_and_passing_claims() -> None:
    rejected = [
        Rejection("decisions", "made up", "low_support: 10% of its words ..."),
        Rejection("artifacts", "bad", "pointer_unresolved: quote not found"),
    ]
    grounding = grounding_of(result_of(digest(), rejected), TEXTS, min_overlap=0.5)
    assert (grounding.pointers_stored, grounding.pointers_verbatim) == (1, 1)
    assert grounding.pointers_rejected == 1
    # Stored claims: 2 decisions + 1 action item + 1 synthesized knowledge item; 1 was rejected.
    assert (grounding.claims_emitted, grounding.claims_passed) == (5, 4)
    assert grounding.claims_pass_share == pytest.approx(0.8)
    # "Dinner at noon" is stored in this hand-made digest but "lunch?" does not support it.
    assert grounding.claims_rechecked == 3


def test_a_pointer_off_by_one_is_not_verbatim() -> None:
    grounding = grounding_of(result_of(digest(pointer_end=46), []), TEXTS, min_overlap=0.5)
    assert grounding.pointers_stored == 1 and grounding.verbatim_share == 0.0


def test_render_table_and_json_round_trip() -> None:
    section = EvalSection(
        "Figures", ["field", "P", "n"], [["decisions", 0.5, 3], ["x", "-", 10]], ["a note"]
    )
    table = render_table(section)
    lines = table.splitlines()
    assert lines[0] == "Figures" and lines[1] == "=" * len("Figures")
    assert "decisions  0.500   3" in table and lines[-1] == "note: a note"
    data = json.loads(json.dumps(section_to_dict(section)))
    assert data["records"][0] == {"field": "decisions", "P": 0.5, "n": 3}
    assert section_from_dict(data) == section
