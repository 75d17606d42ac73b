"""The `reports` list: a keyset-paginated connection of Report nodes, newest first, filtered by a
channel or a document the report read; a bad cursor is a BAD_CURSOR error."""

from __future__ import annotations

from typing import Any

import asyncpg

from schema import build_schema
from schema.context import ApiConfig, Context, Role
from schema.types.ids import CHANNEL, DIGEST_JOB, DOCUMENT, global_id
from tests.support.database import add_channel, messages
from tests.support.reports import _report, ops_and_runbook
from tests.support.schema import gql

LIST = """
query($first: Int, $after: String, $last: Int, $before: String, $filter: ReportFilter) {
  reports(first: $first, after: $after, last: $last, before: $before, filter: $filter) {
    edges { cursor node { id question title createdAt audit { coverage sources } } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"""


async def _errors(pool: asyncpg.Pool, **variables: Any) -> list[dict[str, Any]]:
    result = await build_schema().execute(
        LIST,
        variable_values=variables,
        context_value=Context(pool=pool, role=Role.READER, config=ApiConfig()),
    )
    assert result.errors, result.data
    return [{"message": e.message, **(e.extensions or {})} for e in result.errors]


def _questions(page: dict[str, Any]) -> list[str]:
    return [edge["node"]["question"] for edge in page["edges"]]


async def test_reports_page_newest_first_filter_by_source_and_refuse_bad_cursors(
    db: asyncpg.Pool, database_url: str
) -> None:
    ops, document_id = await ops_and_runbook(db)
    web = await add_channel(
        db,
        "web",
        messages(
            [
                ("ann", "The release of the web frontend waits for the design review on Monday."),
                ("dan", "The design review of the web frontend moved to Tuesday morning."),
            ]
        ),
    )
    ops_id, web_id = global_id(CHANNEL, ops), global_id(CHANNEL, web)
    doc_id = global_id(DOCUMENT, document_id)
    asked = [
        ("When does the database migration run?", {"channelIds": [ops_id]}),
        ("When is the design review of the web frontend?", {"channelIds": [web_id]}),
        (
            "Who approves a database migration rollback?",
            {"channelIds": [ops_id], "documentIds": [doc_id]},
        ),
    ]
    made = [(await _report(db, database_url, q, s))["report"]["id"] for q, s in asked]
    newest_first = [q for q, _ in reversed(asked)]

    first = (await gql(db, LIST, first=2))["reports"]
    assert _questions(first) == newest_first[:2]
    assert (
        first["pageInfo"]["hasNextPage"] is True and first["pageInfo"]["hasPreviousPage"] is False
    )
    assert [e["node"]["id"] for e in first["edges"]] == made[::-1][:2]
    assert first["edges"][0]["node"]["audit"] == {"coverage": 1.0, "sources": 3}
    rest = (await gql(db, LIST, first=2, after=first["pageInfo"]["endCursor"]))["reports"]
    assert _questions(rest) == newest_first[2:]
    assert rest["pageInfo"]["hasNextPage"] is False and rest["pageInfo"]["hasPreviousPage"] is True
    back = (await gql(db, LIST, last=2, before=rest["pageInfo"]["startCursor"]))["reports"]
    assert _questions(back) == newest_first[:2]

    by_channel = (await gql(db, LIST, filter={"channelId": ops_id}))["reports"]
    assert _questions(by_channel) == [asked[2][0], asked[0][0]]
    by_document = (await gql(db, LIST, filter={"documentId": doc_id}))["reports"]
    assert _questions(by_document) == [asked[2][0]]
    by_both = (await gql(db, LIST, filter={"channelId": web_id, "documentId": doc_id}))["reports"]
    assert by_both["edges"] == []

    (garbage,) = await _errors(db, first=2, after="not-a-cursor")
    assert garbage["code"] == "BAD_CURSOR"
    assert garbage["message"] == "invalid cursor: the cursor is not one this API produced"
    jobs = (await gql(db, "{ digestJobs(first: 1) { pageInfo { endCursor } } }"))["digestJobs"]
    (foreign,) = await _errors(db, first=2, after=jobs["pageInfo"]["endCursor"])
    assert foreign["code"] == "BAD_CURSOR"
    assert foreign["message"] == "invalid cursor: the cursor belongs to digestJobs, not reports"
    (size,) = await _errors(db, first=0)
    assert size["message"] == "first must be between 1 and 100, got 0"
    (wrong_type,) = await _errors(db, filter={"channelId": global_id(DIGEST_JOB, 1)})
    assert "Channel" in wrong_type["message"], wrong_type
