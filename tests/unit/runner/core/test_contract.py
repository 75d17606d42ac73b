"""The tool JSON schemas are generated from the Pydantic contract and agree with it."""

from __future__ import annotations

import jsonschema
import pytest
from pydantic import BaseModel

from runner.core.contract import (
    CHUNK_SUMMARY_TOOL,
    DIGEST_TOOL,
    ChunkSummary,
    Digest,
    model_schema,
    tool_schema,
)
from runner.core.tokens import count_tokens

VALID_SUMMARY = {
    "chunk_summary": "ok",
    "signal_quality": {"level": "low", "reason": "little"},
    "knowledge_items": [
        {
            "key": "K1",
            "kind": "config",
            "title": "t",
            "context_version": "v2",
            "content_pointer": {"message_id": "1", "char_start": 0, "char_end": 3, "quote": "abc"},
        }
    ],
}


@pytest.mark.parametrize(
    ("name", "model"), [(CHUNK_SUMMARY_TOOL, ChunkSummary), (DIGEST_TOOL, Digest)]
)
def test_tool_schema_is_the_model_schema(name: str, model: type) -> None:
    tool = tool_schema(name)
    assert tool["type"] == "function"
    assert tool["function"]["name"] == name
    assert tool["function"]["parameters"] == model_schema(model)
    jsonschema.Draft202012Validator.check_schema(tool["function"]["parameters"])


def _documents() -> list[object]:
    """Arguments a model might send: valid, and wrong in each way a schema can say."""
    item = VALID_SUMMARY["knowledge_items"][0]  # type: ignore[index]
    pointer = item["content_pointer"]
    return [
        VALID_SUMMARY,
        dict(VALID_SUMMARY, action_items=[{"text": "ship", "owner": None, "message_ids": ["1"]}]),
        dict(VALID_SUMMARY, action_items=[{"text": "ship", "owner": 7, "message_ids": ["1"]}]),
        dict(VALID_SUMMARY, action_items=[{"text": "", "message_ids": ["1"]}]),
        dict(VALID_SUMMARY, action_items=[{"text": "ship", "message_ids": []}]),
        dict(VALID_SUMMARY, action_items=[{"text": "ship", "message_ids": ["1"], "extra": 1}]),
        dict(VALID_SUMMARY, knowledge_items=[dict(item, content_pointer=None)]),
        dict(
            VALID_SUMMARY, knowledge_items=[dict(item, content_pointer=dict(pointer, quote=None))]
        ),
        dict(
            VALID_SUMMARY, knowledge_items=[dict(item, content_pointer=dict(pointer, char_end=0))]
        ),
        dict(VALID_SUMMARY, knowledge_items=[dict(item, kind="opinion")]),
        dict(VALID_SUMMARY, knowledge_items=[dict(item, supersedes_id="x" * 41)]),
        dict(VALID_SUMMARY, signal_quality={"level": "high"}),
        dict(VALID_SUMMARY, topics=[{"title": "t"}] * 7),
        {"signal_quality": {"level": "low", "reason": "r"}},
    ]


@pytest.mark.parametrize("model", [ChunkSummary, Digest])
def test_the_compact_schema_accepts_exactly_what_pydantics_schema_accepts(
    model: type[BaseModel],
) -> None:
    compact = jsonschema.Draft202012Validator(model_schema(model))
    full = jsonschema.Draft202012Validator(model.model_json_schema())
    verdicts = [(compact.is_valid(doc), full.is_valid(doc)) for doc in _documents()]
    assert [c for c, _ in verdicts] == [f for _, f in verdicts]
    if model is ChunkSummary:  # the documents exercise both answers
        assert {c for c, _ in verdicts} == {True, False}


def test_the_compact_schema_leaves_out_what_constrains_nothing() -> None:
    text = str(model_schema(ChunkSummary))
    assert "'title': 'Message Ids'" not in text and "'default'" not in text
    assert "Verbatim material" not in text  # a model's docstring, written for this code
    assert "'title': {" in text  # a field named title is a field, not a keyword
    full = count_tokens(str(ChunkSummary.model_json_schema())).tokens
    assert count_tokens(text).tokens < 0.7 * full


def test_schema_and_model_agree_on_limits() -> None:
    schema = tool_schema(CHUNK_SUMMARY_TOOL)["function"]["parameters"]
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors(VALID_SUMMARY))
    ChunkSummary.model_validate(VALID_SUMMARY)
    limits = {
        "topics": 6,
        "decisions": 5,
        "action_items": 8,
        "open_questions": 6,
        "links": 15,
        "artifacts": 10,
        "knowledge_items": 15,
        "notable_message_ids": 10,
    }
    for field, limit in limits.items():
        assert schema["properties"][field]["maxItems"] == limit
    assert schema["properties"]["chunk_summary"]["maxLength"] == 1200
    too_long = dict(VALID_SUMMARY, chunk_summary="x" * 1201)
    assert list(validator.iter_errors(too_long))
    with pytest.raises(ValueError):
        ChunkSummary.model_validate(too_long)
    digest = tool_schema(DIGEST_TOOL)["function"]["parameters"]["properties"]
    assert digest["title"]["maxLength"] == 120 and digest["overview"]["maxItems"] == 12
    assert digest["highlights"]["maxItems"] == 5 and digest["search_keywords"]["maxItems"] == 10


def test_unknown_fields_are_refused_by_both() -> None:
    bad = dict(VALID_SUMMARY, invented_field=1)
    schema = tool_schema(CHUNK_SUMMARY_TOOL)["function"]["parameters"]
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(bad))
    with pytest.raises(ValueError):
        ChunkSummary.model_validate(bad)
