"""Compiled query plans (schema/compiled/) answer exactly what graphql-core answers: the same
JSON bytes for queries without errors, no answer at all (graphql-core answers) otherwise; over
HTTP the second request of a text is the plan's, byte for byte the first's; a query's answer
carries an ETag and a GET naming it gets a 304 without a body. Every query of the integration
suites runs through both with DIGESTD_CHECK_PLANS=1 (tests/support/plan_check.py); these cases
run always, on the API benchmark's data."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import asyncpg
import graphql
import httpx
import pytest

from bench._api_seed import seed
from schema import build_schema
from schema.compiled.plan import Unsupported, build_plan
from schema.compiled.run import run_plan
from schema.context import Context, Role
from server.app import AppOptions, create_app
from server.runtime import Runtime
from server.settings import Settings
from tests.support.servers import running_server

Variables = Callable[[list[int]], dict[str, Any]]

JOB_FIELDS = (
    "id kind channelId status phase progress { chunksDone chunksTotal } attempts maxAttempts "
    "error resultMessage cancelRequested stats { messages chunks llmCalls durationSeconds } "
    "warnings { code message } digestId options createdAt startedAt finishedAt durationSeconds "
    "updatedAt"
)
DIGEST_FIELDS = (
    "id channelId title excerpt signalQuality { level reason } messageCount windowStart "
    "windowEnd createdAt"
)
ITEM_COUNTS = "itemCounts { topics decisions actionItems openQuestions links artifacts }"


def job_id(index: int) -> Variables:
    return lambda ids: {"id": str(ids[index])}


def no_variables(_: list[int]) -> dict[str, Any]:
    return {}


# (name, query, variables of the seeded job ids, whether graphql-core answers it with errors)
CASES: list[tuple[str, str, Variables, bool]] = [
    (
        "job_poll",
        "query Poll($id: ID!) { job(id: $id) { id status phase progress { chunksDone chunksTotal }"
        " attempts error resultMessage digestId stats { messages chunks llmCalls durationSeconds }"
        " updatedAt } }",
        job_id(0),
        False,
    ),
    ("job_every_field", f"query($id: ID!) {{ job(id: $id) {{ {JOB_FIELDS} }} }}", job_id(3), False),
    (
        "job_nested",
        "query($id: ID!) { job(id: $id) { id channel { id name messageCount } "
        f"digest {{ {DIGEST_FIELDS.replace('excerpt ', '')} overview highlights {ITEM_COUNTS} }} }} }}",
        job_id(1),
        False,
    ),
    (
        "job_aliases_typename",
        "query($a: ID!, $b: ID!) { first: job(id: $a) { __typename id s: status } "
        "second: job(id: $b) { id status } __typename }",
        lambda ids: {"a": str(ids[0]), "b": str(ids[5])},
        False,
    ),
    (
        "job_fragments",
        "query($id: ID!) { job(id: $id) { ...Head ... on DigestJob { attempts } ... { phase } } }"
        " fragment Head on DigestJob { id status progress { chunksDone } }",
        job_id(2),
        False,
    ),
    (
        "job_merged_fields",
        "query($id: ID!) { job(id: $id) { progress { chunksDone } progress { chunksTotal } id } }",
        job_id(2),
        False,
    ),
    ("job_null", '{ job(id: "RGlnZXN0Sm9iOjk5OTk5OQ==") { id status } }', no_variables, False),
    ("job_bad_id", '{ job(id: "not-an-id") { id } }', no_variables, True),
    ("job_id_of_another_type", '{ job(id: "Q2hhbm5lbDox") { id } }', no_variables, True),
    (
        "digests_light",
        f"{{ digests(first: 20) {{ edges {{ cursor node {{ {DIGEST_FIELDS} }} }} "
        "pageInfo { hasNextPage endCursor } } }",
        no_variables,
        False,
    ),
    (
        "digests_nested",
        f"{{ digests(first: 20) {{ edges {{ cursor node {{ {DIGEST_FIELDS} channel {{ name }} "
        f"{ITEM_COUNTS} }} }} pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }} }} }}",
        no_variables,
        False,
    ),
    (
        "digests_nodes_counts",
        "query($n: Int) { digests(first: $n) { totalCount nodes { id title channel { id name } } } }",
        lambda _: {"n": 7},
        False,
    ),
    (
        "digests_page_size_out_of_range",
        "{ digests(first: 1000) { nodes { id } } }",
        no_variables,
        True,
    ),
    (
        "digests_bad_cursor",
        '{ digests(first: 2, after: "nope") { nodes { id } } }',
        no_variables,
        True,
    ),
    (
        "jobs_list",
        f"{{ digestJobs(first: 10) {{ edges {{ node {{ {JOB_FIELDS} }} }} pageInfo {{ endCursor }} }} }}",
        no_variables,
        False,
    ),
    (
        "channels",
        "{ channels(first: 5) { nodes { id name serverName createdAt messageCount "
        "uncoveredMessageCount lastDigest { id title } openItemCounts { openQuestions } } } }",
        no_variables,
        False,
    ),
    (
        "digest_detail",
        "query($id: ID!) { job(id: $id) { digest { id overview highlights flags { code message } "
        "periods { label } topics { title } decisions { text } links { url } job { id } } } }",
        job_id(4),
        False,
    ),
    ("node_interface", '{ node(id: "RGlnZXN0Sm9iOjE=") { id } }', no_variables, False),
]


@pytest.fixture
async def job_ids(db: asyncpg.Pool, database_url: str) -> list[int]:
    return await seed(database_url, 30)


def _bytes(data: Any) -> bytes:
    return json.dumps({"data": data}, ensure_ascii=False, separators=(",", ":")).encode()


@pytest.mark.parametrize(
    ("query", "variables", "fails"), [case[1:] for case in CASES], ids=[c[0] for c in CASES]
)
async def test_the_plan_answers_as_graphql_core_does(
    db: asyncpg.Pool,
    settings: Settings,
    job_ids: list[int],
    query: str,
    variables: Variables,
    fails: bool,
) -> None:
    schema = build_schema()
    config = Runtime(settings).api_config()

    def context() -> Context:
        return Context(pool=db, role=Role.READER, config=config, request_id="test")

    values = variables(job_ids)
    result = await schema.execute(query, variable_values=values, context_value=context())
    assert bool(result.errors) == fails, result.errors
    try:
        plan = build_plan(schema._schema, graphql.parse(query), None)
    except Unsupported:
        assert "node(" in query  # an interface: graphql-core's alone
        return
    data = await run_plan(plan, schema._schema, context(), values)
    if fails:
        assert data is None
    else:
        assert data is not None
        assert _bytes(data) == _bytes(result.data)


@pytest.mark.parametrize("text", ["mutation { x }", "subscription { jobProgress(id: 1) { id } }"])
def test_only_query_operations_are_planned(text: str) -> None:
    with pytest.raises(Unsupported):
        build_plan(build_schema()._schema, graphql.parse(text), None)


async def test_over_http_the_plan_answers_repeats_byte_for_byte_with_an_etag(
    db: asyncpg.Pool, settings: Settings, job_ids: list[int]
) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    query = CASES[0][1]
    body = {"query": query, "variables": {"id": str(job_ids[0])}}
    async with running_server(app) as base_url, httpx.AsyncClient(base_url=base_url) as client:
        answers = [await client.post("/graphql", json=body) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 200]
        assert len({a.content for a in answers}) == 1
        assert "errors" not in answers[0].json()
        tag = answers[0].headers["etag"]
        assert {a.headers["etag"] for a in answers} == {tag}

        params = {"query": query, "variables": json.dumps(body["variables"])}
        fresh = await client.get("/graphql", params=params)
        assert fresh.status_code == 200 and fresh.headers["etag"] == tag
        unchanged = await client.get("/graphql", params=params, headers={"If-None-Match": tag})
        assert unchanged.status_code == 304 and unchanged.content == b""
        assert unchanged.headers["etag"] == tag
        # A POST is never conditional (HTTP answers If-None-Match on POST with a 412).
        posted = await client.post("/graphql", json=body, headers={"If-None-Match": tag})
        assert posted.status_code == 200 and posted.content == answers[0].content

        # The job changes: a new tag, and the old one gets the whole answer.
        async with db.acquire() as connection:
            await connection.execute(
                "UPDATE digest_jobs SET attempts = attempts + 1, updated_at = now() WHERE id = $1",
                job_ids[0],
            )
        changed = await client.get("/graphql", params=params, headers={"If-None-Match": tag})
        assert changed.status_code == 200 and changed.headers["etag"] != tag

        # Errors are not tagged, and a mutation's answer never is.
        bad = await client.get("/graphql", params={"query": '{ job(id: "x") { id } }'})
        assert "etag" not in bad.headers
