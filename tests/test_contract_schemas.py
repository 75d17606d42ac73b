"""The tool JSON schemas are generated from the Pydantic contract and agree with it."""

from __future__ import annotations

import jsonschema
import pytest

from runner.contract import (
    CHUNK_SUMMARY_TOOL,
    DIGEST_TOOL,
    ChunkSummary,
    Digest,
    tool_schema,
)

VALID_SUMMARY = {
    "chunk_summary": "ok",
    "signal_quality": {"level": "low", "reason": "little"},
    "knowledge_items": [
        {"key": "K1", "kind": "config", "title": "t", "context_version": "v2",
         "content_pointer": {"message_id": "1", "char_start": 0, "char_end": 3, "quote": "abc"}}
    ],
}


@pytest.mark.parametrize(("name", "model"), [(CHUNK_SUMMARY_TOOL, ChunkSummary), (DIGEST_TOOL, Digest)])
def test_tool_schema_is_the_model_schema(name: str, model: type) -> None:
    tool = tool_schema(name)
    assert tool["type"] == "function"
    assert tool["function"]["name"] == name
    assert tool["function"]["parameters"] == model.model_json_schema()
    jsonschema.Draft202012Validator.check_schema(tool["function"]["parameters"])


def test_schema_and_model_agree_on_limits() -> None:
    schema = tool_schema(CHUNK_SUMMARY_TOOL)["function"]["parameters"]
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors(VALID_SUMMARY))
    ChunkSummary.model_validate(VALID_SUMMARY)
    limits = {"topics": 6, "decisions": 5, "action_items": 8, "open_questions": 6, "links": 15,
              "artifacts": 10, "knowledge_items": 15, "notable_message_ids": 10}
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
