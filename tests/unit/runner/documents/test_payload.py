"""DigestPayload v1.0 against its JSON schema (loaded from the schema file itself, which must be the
specification's schema when ../shared/seeds holds the specification text), and the locator contract:
exact slices, page-relative offsets, no `char:0-0` fallback."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import jsonschema
import pytest

from runner.documents.canonical import join_pages
from runner.documents.errors import LocatorError, PayloadError
from runner.documents.locators import (
    locator_context,
    make_locator,
    parse_locator,
    resolve_locator,
    verify_locator,
)
from runner.documents.payload import (
    DigestPayload,
    EvidenceSnippet,
    deserialize_payload,
    payload_schema,
    serialize_payload,
    validate_payload_dict,
)
from tests.support.paths import REPO_ROOT

SPECIFICATIONS = REPO_ROOT.parent / "shared" / "seeds"
SCHEMA_FILE = REPO_ROOT / "runner" / "documents" / "digest_payload_v1.schema.json"


def _valid() -> dict[str, Any]:
    return {
        "version": "1.0",
        "content_type": "digest/v1",
        "query_hash": "ab12cd34",
        "summary": "A summary.",
        "key_points": ["One point."],
        "evidence_snippets": [{"text": "quoted", "locator": "char:10-16", "relevance_score": 0.5}],
        "original_chars": 1000,
        "digest_chars": 27,
        "compression_ratio": 0.027,
        "source_text_hash": "sha256:" + "a" * 64,
    }


def test_schema_file_is_the_specifications_schema() -> None:
    specification = (
        next(iter(sorted(SPECIFICATIONS.glob("000_*.txt"))), None)
        if SPECIFICATIONS.is_dir()
        else None
    )
    if specification is None:
        pytest.skip("../shared/seeds is absent")
    text = specification.read_text(encoding="utf-8")
    section = text[text.index("On-Wire JSON Schema") :]
    block = re.search(r"```json\n(.*?)```", section, re.DOTALL)
    assert block is not None
    shipped = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert shipped == json.loads(block.group(1)) == payload_schema()
    jsonschema.Draft7Validator.check_schema(shipped)


def test_valid_payload_round_trips() -> None:
    content = serialize_payload(_valid())
    payload = deserialize_payload(content)
    assert payload.evidence_snippets[0] == EvidenceSnippet("quoted", "char:10-16", 0.5)
    assert serialize_payload(payload) == content
    jsonschema.validate(json.loads(content), payload_schema())


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("version",), "2.0"),
        (("content_type",), "text/plain"),
        (("query_hash",), "ABCDEF12"),
        (("query_hash",), "abc"),
        (("summary",), "x" * 2001),
        (("key_points",), ["p"] * 11),
        (("key_points",), ["x" * 501]),
        (("evidence_snippets",), [{"text": "t", "locator": "char:0-1", "relevance_score": 1}] * 11),
        (("evidence_snippets", 0, "text"), "x" * 501),
        (("evidence_snippets", 0, "relevance_score"), 1.5),
        (("original_chars",), -1),
        (("compression_ratio",), 1.2),
        (("source_text_hash",), "md5:abc"),
    ],
)
def test_invalid_payloads_are_rejected(path: tuple[Any, ...], value: Any) -> None:
    data = copy.deepcopy(_valid())
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(PayloadError) as caught:
        serialize_payload(data)
    assert caught.value.code == "schema"
    with pytest.raises(PayloadError):
        deserialize_payload(json.dumps(data))


def test_missing_field_and_garbage_are_rejected() -> None:
    data = _valid()
    del data["source_text_hash"]
    with pytest.raises(PayloadError):
        validate_payload_dict(data)
    with pytest.raises(PayloadError) as caught:
        deserialize_payload("{not json")
    assert caught.value.code == "not_json"


def test_raw_content_can_never_be_serialized() -> None:
    for data in (
        {**_valid(), "_raw_content": "the whole document"},
        {**_valid(), "evidence_snippets": [{**_valid()["evidence_snippets"][0], "_raw": 1}]},
    ):
        with pytest.raises(PayloadError) as caught:
            serialize_payload(data)
        assert caught.value.code == "private_field"
        assert "the whole document" not in str(caught.value)


def test_bad_locators_are_rejected_on_write() -> None:
    for locator in ("char:0-0", "char:5-3", "chars:1-2", "page:0:char:1-2", "char:01-5", ""):
        data = _valid()
        data["evidence_snippets"][0]["locator"] = locator
        with pytest.raises(PayloadError) as caught:
            serialize_payload(data)
        assert caught.value.code == "locator", locator


def test_locator_formats_and_slices() -> None:
    text = "Hello world. The quick brown fox."
    assert make_locator(text, 13, 18, "The q") == "char:13-18"
    assert parse_locator("char:13-18").start == 13
    with pytest.raises(LocatorError) as caught:
        make_locator(text, 13, 18, "The Q")  # does not slice to its snippet: an error, no fallback
    assert caught.value.code == "locator_mismatch"
    with pytest.raises(LocatorError):
        verify_locator("char:30-40", "x", text)  # beyond the text


def test_pdf_locators_are_page_relative() -> None:
    text, spans = join_pages(["first page text", "second page has the answer here", "third"])
    start = text.index("the answer")
    locator = make_locator(text, start, start + 10, "the answer", page=2, page_spans=spans)
    page_two = text[spans[1][0] : spans[1][1]]
    parsed = parse_locator(locator)
    assert locator == "page:2:char:16-26" and page_two[parsed.start : parsed.end] == "the answer"
    assert resolve_locator(locator, text, spans) == (start, start + 10)
    with pytest.raises(LocatorError):
        make_locator(text, start, start + 10, "the answer", page=1, page_spans=spans)
    with pytest.raises(LocatorError):
        verify_locator("page:3:char:0-10", "third", text, spans)  # past the end of page 3
    with pytest.raises(LocatorError):
        verify_locator("page:9:char:0-1", "x", text, spans)


def test_payload_dataclass_matches_schema_fields() -> None:
    payload = DigestPayload(
        query_hash="0011aabb",
        summary="",
        original_chars=0,
        digest_chars=0,
        compression_ratio=0.0,
        source_text_hash="sha256:" + "0" * 64,
    )
    assert set(payload.to_dict()) == set(payload_schema()["properties"])
    assert set(payload_schema()["required"]) == set(payload.to_dict())


def test_context_around_a_located_snippet_stays_in_its_page() -> None:
    text, spans = join_pages(["alpha beta gamma delta", "one two three four five six"])
    start = text.index("three")
    locator = make_locator(text, start, start + 5, "three", page=2, page_spans=spans)
    assert locator_context(locator, text, spans, chars=8) == ("one two ", " four")
    before, after = locator_context(locator, text, spans, chars=500)
    assert before == "one two " and after == " four five six"  # never crosses into page 1
