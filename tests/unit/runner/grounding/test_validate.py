"""The validator: nothing invented survives, and every drop says why."""

from __future__ import annotations

from typing import Any

from runner.core.contract import ChunkSummary, Digest
from runner.grounding.validate import validate_output

TEXTS = {
    "100": "We decided to move the staging cluster to Kubernetes 1.29 next sprint.",
    "101": "I'll write the migration runbook for the staging cluster by Friday.",
    "102": "See https://example.org/runbook for the old process.",
    "103": "```\nkubectl drain node-3 --ignore-daemonsets\n```",
    "104": "Мы перенесём базу данных на новый сервер в понедельник.",
}


def summary(**fields: Any) -> ChunkSummary:
    base: dict[str, Any] = {
        "chunk_summary": "Staging moves to Kubernetes.",
        "signal_quality": {"level": "high", "reason": "decisions and actions"},
    }
    base.update(fields)
    return ChunkSummary.model_validate(base)


def test_valid_items_are_kept() -> None:
    result = validate_output(
        summary(
            decisions=[
                {"text": "Move the staging cluster to Kubernetes 1.29", "message_ids": ["100"]}
            ],
            action_items=[
                {
                    "text": "Write the migration runbook for staging",
                    "owner": "ann",
                    "message_ids": ["101"],
                }
            ],
            links=[
                {
                    "url": "https://example.org/runbook",
                    "description": "old process",
                    "message_ids": ["102"],
                }
            ],
            artifacts=[
                {
                    "kind": "command",
                    "title": "drain",
                    "pointer": {
                        "message_id": "103",
                        "char_start": 4,
                        "char_end": 45,
                        "quote": "kubectl drain node-3 --ignore-daemonsets",
                    },
                }
            ],
        ),
        TEXTS,
    )
    assert result.rejections == []
    out = result.output
    assert len(out.decisions) == len(out.action_items) == len(out.links) == len(out.artifacts) == 1
    pointer = out.artifacts[0].pointer
    assert (
        TEXTS["103"][pointer.char_start : pointer.char_end]
        == "kubectl drain node-3 --ignore-daemonsets"
    )


def test_fabricated_message_ids_are_dropped() -> None:
    result = validate_output(
        summary(
            decisions=[{"text": "Move staging to Kubernetes", "message_ids": ["100", "999"]}],
            notable_message_ids=["100", "12345"],
        ),
        TEXTS,
    )
    assert result.output.decisions == []
    assert result.rejections[0].reason.startswith("unknown_message_id")
    assert result.output.notable_message_ids == ["100"]


def test_out_of_bounds_and_mismatched_pointers_are_dropped() -> None:
    result = validate_output(
        summary(
            knowledge_items=[
                {
                    "key": "K1",
                    "kind": "command",
                    "title": "oob",
                    "content_pointer": {"message_id": "103", "char_start": 10, "char_end": 999},
                },
                {
                    "key": "K2",
                    "kind": "command",
                    "title": "lie",
                    "content_pointer": {
                        "message_id": "103",
                        "char_start": 0,
                        "char_end": 5,
                        "quote": "rm -rf /",
                    },
                },
                {
                    "key": "K3",
                    "kind": "command",
                    "title": "ghost",
                    "content_pointer": {"message_id": "555", "char_start": 0, "char_end": 5},
                },
            ]
        ),
        TEXTS,
    )
    assert result.output.knowledge_items == []
    assert [r.reason.split(":")[0] for r in result.rejections] == ["pointer_unresolved"] * 3


def test_empty_citations_and_unsupported_claims_are_dropped() -> None:
    result = validate_output(
        summary(
            knowledge_items=[
                {
                    "key": "K1",
                    "kind": "recommendation",
                    "title": "x",
                    "content": "Use Kubernetes 1.29 for staging",
                    "message_ids": ["100"],
                },
                {
                    "key": "K2",
                    "kind": "recommendation",
                    "title": "y",
                    "content": "Bananas are rich in potassium and sunlight",
                    "message_ids": ["100"],
                },
            ],
            open_questions=[{"text": "Who owns the payroll export?", "message_ids": ["101"]}],
        ),
        TEXTS,
    )
    assert [k.key for k in result.output.knowledge_items] == ["K1"]
    reasons = sorted(r.reason.split(":")[0] for r in result.rejections)
    assert reasons == ["low_support", "low_support"]


def test_model_refuses_items_without_citations_or_with_both_forms() -> None:
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        summary(decisions=[{"text": "x", "message_ids": []}])
    with pytest.raises(ValidationError):
        summary(
            knowledge_items=[
                {
                    "key": "K1",
                    "kind": "fact",
                    "title": "t",
                    "content": "c",
                    "message_ids": ["100"],
                    "content_pointer": {"message_id": "100", "char_start": 0, "char_end": 2},
                }
            ]
        )
    with pytest.raises(ValidationError):
        summary(knowledge_items=[{"key": "K1", "kind": "fact", "title": "t", "content": "c"}])


def test_signal_empty_with_items_is_corrected_and_flagged() -> None:
    result = validate_output(
        summary(
            signal_quality={"level": "empty", "reason": "nothing"},
            decisions=[{"text": "Move staging cluster to Kubernetes", "message_ids": ["100"]}],
        ),
        TEXTS,
    )
    assert result.output.signal_quality.level.value == "low"
    assert result.output_flags and result.output_flags[0].startswith("signal_inconsistent")
    consistent = validate_output(
        summary(signal_quality={"level": "empty", "reason": "chit-chat"}), TEXTS
    )
    assert consistent.output_flags == [] and consistent.output.signal_quality.level.value == "empty"


def test_version_sensitive_without_version_and_language_mismatch_are_flagged() -> None:
    result = validate_output(
        summary(
            knowledge_items=[
                {
                    "key": "K1",
                    "kind": "command",
                    "title": "drain",
                    "content_pointer": {"message_id": "103", "char_start": 4, "char_end": 24},
                },
                {
                    "key": "K2",
                    "kind": "command",
                    "title": "drain",
                    "context_version": "Kubernetes 1.29",
                    "content_pointer": {"message_id": "103", "char_start": 4, "char_end": 24},
                },
            ],
            decisions=[
                {
                    "text": "Database moves to the new server on Monday (база данных, сервер)",
                    "message_ids": ["104"],
                }
            ],
        ),
        TEXTS,
        min_overlap=0.0,
    )
    flags = result.item_flags
    assert flags["knowledge_items"][0][0].startswith("missing_context_version")
    assert flags["knowledge_items"][1] == []
    assert flags["decisions"][0][0].startswith("language_mismatch")


def test_links_must_appear_in_cited_message() -> None:
    result = validate_output(
        summary(links=[{"url": "https://evil.example/phish", "message_ids": ["102"]}]), TEXTS
    )
    assert result.output.links == [] and result.rejections[0].reason.startswith("url_not_in_source")


def test_digest_validation_uses_the_whole_window() -> None:
    digest = Digest.model_validate(
        {
            "title": "Staging",
            "overview": [{"sentence": "Staging moves.", "message_ids": ["100"]}],
            "coverage": {"messages_total": 5, "messages_covered": 5},
            "signal_quality": {"level": "medium", "reason": "one decision"},
            "decisions": [
                {"text": "Move staging cluster to Kubernetes 1.29", "message_ids": ["100"]}
            ],
        }
    )
    result = validate_output(digest, TEXTS)
    assert len(result.output.decisions) == 1 and result.rejections == []
