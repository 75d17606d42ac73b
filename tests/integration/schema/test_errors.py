"""Errors as data, over HTTP against the real app: every client mistake comes back with a code
from the documented list (docs/api-errors.md) and no internal text, a mutation answers expected
failures with typed results carrying a code, one failing field nulls only itself, and closed
sets of values are enums."""

from __future__ import annotations

import logging
import re
from typing import Any

import httpx
import pytest

from schema.errors import CODES
from tests.support.api import INGEST, LEAKS, READER, WRITER, post, post_raw
from tests.support.paths import REPO_ROOT

DOCUMENTED = set(
    re.findall(r"^\| `([A-Z_]+)` \|", (REPO_ROOT / "docs/api-errors.md").read_text(), re.M)
)
INVALID = "... on InvalidInputError { code message }"
TYPED = INVALID + " ... on NotFoundError { code message }"

# name: (query, variables, headers, expected code) of one client mistake answered by an error.
MISTAKES: dict[str, tuple[str, dict[str, Any], dict[str, str], str]] = {
    "malformed_id_in_query": ('{ channel(id: "abc") { id } }', {}, READER, "BAD_ID"),
    "bad_cursor": ('{ channels(after: "nope") { nodes { id } } }', {}, READER, "BAD_CURSOR"),
    "first_0": ("{ channels(first: 0) { nodes { id } } }", {}, READER, "PAGE_SIZE"),
    "first_minus_1": ("{ channels(first: -1) { nodes { id } } }", {}, READER, "PAGE_SIZE"),
    "first_10001": ("{ channels(first: 10001) { nodes { id } } }", {}, READER, "PAGE_SIZE"),
    "unknown_field": ("{ channels { nope } }", {}, READER, "VALIDATION"),
    "parse_error": ("{ channels { ", {}, READER, "PARSE"),
    "wrong_type_variable": (
        "query($n: Int) { channels(first: $n) { nodes { id } } }",
        {"n": "ten"},
        READER,
        "VALIDATION",
    ),
    "too_costly": (
        "{ documents(first: 100) { nodes { canonicalText } } }",
        {},
        READER,
        "TOO_COMPLEX",
    ),
    "reader_mutation": ('mutation { cancelJob(id: "1") { __typename } }', {}, READER, "FORBIDDEN"),
    "unknown_enum_in_filter": (
        "query($f: KnowledgeItemFilter) { knowledgeItems(filter: $f) { nodes { id } } }",
        {"f": {"kind": "commands"}},
        READER,
        "VALIDATION",
    ),
    "unknown_enum_literal": (
        "{ digests(filter: {signalQuality: high}) { nodes { id } } }",
        {},
        READER,
        "VALIDATION",
    ),
    "nul_in_string": (
        "query($q: String) { knowledgeItems(filter: {query: $q}) { nodes { id } } }",
        {"q": "a\x00b"},
        READER,
        "BAD_USER_INPUT",
    ),
}


def checked_errors(body: dict[str, Any]) -> list[dict[str, Any]]:
    errors: list[dict[str, Any]] = body["errors"]
    for error in errors:
        code = error["extensions"]["code"]
        assert code in DOCUMENTED and code in CODES, error
        assert not any(leak in error["message"] for leak in LEAKS), error
    return errors


def test_the_documented_list_is_the_code_list() -> None:
    assert DOCUMENTED == set(CODES)


@pytest.mark.parametrize("case", sorted(MISTAKES))
async def test_each_client_mistake_has_a_documented_code(
    api: httpx.AsyncClient, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    query, variables, headers, code = MISTAKES[case]
    response = await post(api, query, variables, headers=headers)
    assert response.status_code == 200, response.text
    assert [e["extensions"]["code"] for e in checked_errors(response.json())] == [code]
    # Logged at info in one line with its code and the request id; no traceback, nothing louder.
    request_id = response.headers["x-request-id"]
    lines = [
        r.getMessage()
        for r in caplog.records
        if request_id in r.getMessage() and f"code={code}" in r.getMessage()
    ]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert all(
        r.levelno <= logging.INFO and r.exc_info is None
        for r in caplog.records
        if r.name.startswith(("schema", "server", "strawberry"))
    )


async def test_unknown_enum_values_are_refused_with_the_allowed_ones(
    api: httpx.AsyncClient,
) -> None:
    """The typo "commands" used to match nothing, silently."""
    query, variables, headers, _ = MISTAKES["unknown_enum_in_filter"]
    (error,) = checked_errors((await post(api, query, variables, headers=headers)).json())
    assert "'commands'" in error["message"] and "COMMAND, RECOMMENDATION" in error["message"], error


async def test_too_large_and_no_token_have_codes(api: httpx.AsyncClient) -> None:
    large = await post_raw(
        api,
        b'{"query": "' + b" " * (2 * 1024 * 1024) + b'{ channels { nodes { id } } }"}',
        headers=READER,
    )
    assert large.status_code == 413 and [
        e["extensions"]["code"] for e in checked_errors(large.json())
    ] == ["REQUEST_TOO_LARGE"]
    anonymous = await api.post("/graphql", json={"query": "{ channels { nodes { id } } }"})
    assert anonymous.status_code == 401 and [
        e["extensions"]["code"] for e in checked_errors(anonymous.json())
    ] == ["UNAUTHENTICATED"]


async def test_mutations_answer_expected_failures_typed_with_a_code(api: httpx.AsyncClient) -> None:
    cases = {
        'mutation { cancelJob(id: "abc") { %s } }': ("InvalidInputError", "BAD_ID"),
        'mutation { cancelJob(id: "999") { %s } }': ("NotFoundError", "NOT_FOUND"),
        'mutation { triggerDigest(channelId: "0x1") { %s } }': ("InvalidInputError", "BAD_ID"),
        'mutation { triggerDigest(channelId: "999") { %s } }': ("NotFoundError", "NOT_FOUND"),
        'mutation { triggerDocumentDigest(documentId: "-1", query: "q") { %s } }': (
            "InvalidInputError",
            "BAD_ID",
        ),
        'mutation { triggerDocumentDigest(documentId: "999", query: "q") { %s } }': (
            "NotFoundError",
            "NOT_FOUND",
        ),
        'mutation { ingestMessages(channel: {name: " "}, messages: []) { %s } }': (
            "InvalidInputError",
            "BAD_USER_INPUT",
        ),
        "mutation { ingestDocument(input: {}) { %s } }": ("InvalidInputError", "BAD_USER_INPUT"),
    }
    for query, (typename, code) in cases.items():
        members = INVALID if "ingest" in query else TYPED  # the ingests find nothing by id
        body = (await post(api, query % f"__typename {members}", headers=WRITER)).json()
        assert "errors" not in body, (query, body)
        (result,) = body["data"].values()
        assert result["__typename"] == typename and result["code"] == code and result["message"], (
            query,
            result,
        )


async def test_one_bad_argument_nulls_only_its_field(api: httpx.AsyncClient) -> None:
    await post(
        api,
        INGEST,
        {
            "c": {"name": "general"},
            "m": [{"id": "m1", "author": "a", "ts": "2024-01-01T00:00:00Z", "text": "hi"}],
        },
    )
    query = '{ good: channels { nodes { name } } bad: channels(after: "nope") { nodes { name } } jobs: digestJobs(first: 0) { nodes { id } } }'
    body = (await post(api, query, headers=READER)).json()
    assert body["data"] == {"good": {"nodes": [{"name": "general"}]}, "bad": None, "jobs": None}
    assert sorted(e["extensions"]["code"] for e in checked_errors(body)) == [
        "BAD_CURSOR",
        "PAGE_SIZE",
    ]
