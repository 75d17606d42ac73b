"""Tool schemas without their bounds: nothing else of the schema changes, a property named like a
keyword is kept, the validator still enforces every bound, and grammar errors are told from other
refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from runner.core.contract import CHUNK_SUMMARY_TOOL, DIGEST_TOOL, ChunkSummary, tool_schema
from runner.llm.bounds import (
    BOUND_KEYWORDS,
    has_bounds,
    is_grammar_error,
    remember_refusal,
    send_bounds,
    strip_bounds,
    tool_without_bounds,
)


def keywords_used(schema: Any, under_names: bool = False) -> set[str]:
    """Every keyword of a schema (not the property names under `properties`)."""
    found: set[str] = set()
    if isinstance(schema, list):
        for item in schema:
            found |= keywords_used(item)
    elif isinstance(schema, dict):
        for key, value in schema.items():
            if not under_names:
                found.add(key)
            found |= keywords_used(value, under_names=key in ("properties", "$defs"))
    return found


def assert_equal_but_bounds(original: Any, stripped: Any, path: str = "") -> None:
    """`stripped` is `original` with exactly the bound keywords removed, at every level."""
    if isinstance(original, dict):
        assert isinstance(stripped, dict), path
        kept = {
            key
            for key in original
            if key not in BOUND_KEYWORDS or path.endswith(("/properties", "/$defs"))
        }
        assert set(stripped) == kept, path
        for key in kept:
            assert_equal_but_bounds(original[key], stripped[key], f"{path}/{key}")
    elif isinstance(original, list):
        assert isinstance(stripped, list) and len(stripped) == len(original), path
        for index, (left, right) in enumerate(zip(original, stripped, strict=True)):
            assert_equal_but_bounds(left, right, f"{path}/{index}")
    else:
        assert stripped == original, path


@pytest.mark.parametrize("name", [CHUNK_SUMMARY_TOOL, DIGEST_TOOL])
def test_a_contract_schema_without_bounds_is_otherwise_the_same(name: str) -> None:
    tool = tool_schema(name)
    parameters = tool["function"]["parameters"]
    assert keywords_used(parameters) & {"maxLength", "maxItems", "minLength"}  # bounds to strip
    stripped = tool_without_bounds(tool)
    assert keywords_used(stripped["function"]["parameters"]) & BOUND_KEYWORDS == set()
    assert {k: v for k, v in stripped.items() if k != "function"} == {
        k: v for k, v in tool.items() if k != "function"
    }
    assert stripped["function"]["name"] == name
    assert stripped["function"]["description"] == tool["function"]["description"]
    assert_equal_but_bounds(parameters, stripped["function"]["parameters"])
    assert tool == tool_schema(name)  # the original is left alone
    assert has_bounds(tool) and not has_bounds(stripped)
    assert len(json.dumps(stripped)) < len(json.dumps(tool))


def test_a_property_named_like_a_keyword_is_kept() -> None:
    schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "maxLength": 5},
            "items": {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": 3},
        },
        "required": ["pattern"],
        "$defs": {"maxLength": {"type": "string", "pattern": "^a"}},
        "anyOf": [{"minProperties": 1}, {"type": "object"}],
    }
    assert strip_bounds(schema) == {
        "type": "object",
        "properties": {
            "pattern": {"type": "string"},
            "items": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["pattern"],
        "$defs": {"maxLength": {"type": "string"}},
        "anyOf": [{}, {"type": "object"}],
    }


def test_the_validator_still_enforces_what_is_no_longer_sent() -> None:
    summary = {
        "chunk_summary": "x",
        "signal_quality": {"level": "low", "reason": "r"},
        "decisions": [{"text": "y" * 600, "message_ids": ["1"]}],
    }
    with pytest.raises(ValidationError, match="at most 500 characters"):
        ChunkSummary.model_validate(summary)


@pytest.mark.parametrize(
    "text",
    [
        "Failed to parse grammar",  # llama.cpp server
        "failed to parse grammar: llguidance is not enabled",
        "llama_grammar_init_impl: error parsing grammar: expecting name at ::=",
        "Error code: 500 - {'detail': 'Grammar is invalid: rule root not defined'}",
        "could not build grammar from the JSON schema",
    ],
)
def test_grammar_errors_are_recognized(text: str) -> None:
    assert is_grammar_error(text)


@pytest.mark.parametrize(
    "text",
    [
        "This model's maximum context length is 8192 tokens",
        "Incorrect API key provided",
        "Error code: 503 - overloaded",
        "the request exceeds the available context size",
    ],
)
def test_other_refusals_are_not_grammar_errors(text: str) -> None:
    assert not is_grammar_error(text)


class Client:
    """Stands for an `openai` client: what the memory of refusals is keyed by."""


def test_the_setting_decides_unless_the_client_was_refused() -> None:
    client, refused = Client(), Client()
    remember_refusal(refused)
    assert send_bounds("auto", client) and not send_bounds("auto", refused)
    assert send_bounds("send", refused) and not send_bounds("omit", client)
