"""The API at its edge, over HTTP against the real app and PostgreSQL: hostile or broken input
gets a clear client error saying where and why, an unexpected fault gets a generic error with a
request id that the log holds the details under, oversized or costly requests are refused before
they cost anything, and ids have one spelling."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections import Counter
from typing import Any

import asyncpg
import httpx
import pytest

from schema import DigestSchema
from schema.gate import request_gate
from server import graphql_http
from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.api import INGEST, LEAKS, READER, WRITER, post, post_raw
from tests.support.servers import running_server


def only_error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert len(body["errors"]) == 1, body
    error: dict[str, Any] = body["errors"][0]
    for leak in LEAKS:
        assert leak not in error["message"], (leak, error)
    return error


async def test_an_empty_selection_set_is_a_validation_error(api: httpx.AsyncClient) -> None:
    cases = {
        "{ channels { } }": "channels",
        "{ channels { nodes { } } }": "nodes",
        "query Q { ...F } fragment F on Query { channels { } }": "channels",
    }
    for query, field in cases.items():
        response = await post(api, query, headers=READER)
        assert response.status_code == 200
        error = only_error(response)
        assert error["extensions"]["code"] == "VALIDATION", error
        assert error["message"].startswith(f"Field '{field}' has an empty selection set"), error
        assert response.json()["data"] is None


KNOWLEDGE = "query($f: KnowledgeItemFilter) { knowledgeItems(filter: $f) { nodes { id } } }"
MESSAGES = (
    "query($f: MessageFilter!, $a: String) { messages(filter: $f, after: $a) { nodes { id } } }"
)


def cursor(payload: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


BAD_VALUES: dict[str, tuple[str, dict[str, Any], str]] = {
    # name: (query, variables, what the message must say)
    "nul_in_filter": (
        KNOWLEDGE,
        {"f": {"kind": "deci\x00sion"}},
        "variables.f.kind: contains a NUL",
    ),
    "nul_in_literal": (
        '{ knowledgeItems(filter: {kind: "a\\u0000b"}) { nodes { id } } }',
        {},
        "knowledgeItems(filter).kind: contains a NUL",
    ),
    "nul_in_channel_name": (
        INGEST,
        {"c": {"name": "gen\x00eral"}, "m": []},
        "variables.c.name: contains a NUL",
    ),
    "lone_surrogate": (
        KNOWLEDGE,
        {"f": {"kind": "\ud800"}},
        "variables.f.kind: contains a lone UTF-16 surrogate",
    ),
    "cursor_row_id_2_70": (
        MESSAGES,
        {"f": {"channelId": "1"}, "a": cursor(["messages", "2024-01-01T00:00:00+00:00", 2**70])},
        "invalid cursor",
    ),
    "cursor_naive_time": (
        MESSAGES,
        {"f": {"channelId": "1"}, "a": cursor(["messages", "9999-12-31T23:00:00-14:00", 1])},
        "invalid cursor",
    ),
    "date_9999_minus_14": (
        MESSAGES,
        {"f": {"channelId": "1", "since": "9999-12-31T23:00:00-14:00"}},
        "out of range",
    ),
    "date_year_1_plus_14": (
        MESSAGES,
        {"f": {"channelId": "1", "until": "0001-01-01T01:00:00+14:00"}},
        "out of range",
    ),
    "tsquery_400_words": (KNOWLEDGE, {"f": {"query": "- " * 200}}, "at most 32"),
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
async def test_bad_values_are_refused_with_where_and_why(api: httpx.AsyncClient, case: str) -> None:
    query, variables, expected = BAD_VALUES[case]
    # ensure_ascii: the lone surrogate travels as the JSON escape "\ud800", as a client sends it.
    response = await post_raw(api, json.dumps({"query": query, "variables": variables}))
    assert response.status_code == 200, response.text
    error = only_error(response)
    # A bad cursor has its own code.
    assert error["extensions"]["code"] == (
        "BAD_CURSOR" if case.startswith("cursor_") else "BAD_USER_INPUT"
    ), error
    assert expected in error["message"], error


async def test_a_search_of_400_dashes_runs(api: httpx.AsyncClient) -> None:
    """A run of dashes (each a nested NOT) overflowed Postgres' tsquery stack; now it is one."""
    response = await post(api, KNOWLEDGE, {"f": {"query": "-" * 400}}, headers=READER)
    body = response.json()
    assert "errors" not in body, body
    assert body["data"]["knowledgeItems"]["nodes"] == []


async def test_attachments_nested_900_deep_are_refused(api: httpx.AsyncClient) -> None:
    message = (
        '{"id": "m1", "author": "ann", "ts": "2024-01-01T00:00:00Z", "text": "hi", "attachments": [%s]}'
        % nested(900)
    )
    body = '{"query": %s, "variables": {"c": {"name": "general"}, "m": [%s]}}' % (
        json.dumps(INGEST),
        message,
    )
    response = await post_raw(api, body)
    error = only_error(response)
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert (
        "variables.m[0].attachments[0].a" in error["message"]
        and "nested deeper than 32" in error["message"]
    )


BAD_BODIES: dict[str, tuple[str, str]] = {
    "null": ("null", "must be a JSON object"),
    "list": ('[{"query": "{ channels { nodes { id } } }"}]', "batched requests"),
    "number_5000_digits": (
        '{"query": "query($n: Int) { channels(first: $n) { nodes { id } } }", "variables": {"n": %s}}'
        % ("9" * 5000),
        "number of 5000 characters",
    ),
    "json_5000_deep": (
        '{"query": "{ channels { nodes { id } } }", "variables": {"x": %s}}' % nested(5000),
        "nested too deeply",
    ),
    "not_json": ("{nope", "not JSON"),
    "nan": (
        '{"query": "{ channels { nodes { id } } }", "variables": {"x": NaN}}',
        "not strict JSON",
    ),
    "no_query": ('{"variables": {}}', "has no query"),
}


@pytest.mark.parametrize("case", sorted(BAD_BODIES))
async def test_bad_bodies_are_http_400(api: httpx.AsyncClient, case: str) -> None:
    body, expected = BAD_BODIES[case]
    response = await post_raw(api, body, headers=READER)
    assert response.status_code == 400, response.text
    error = only_error(response)
    assert error["extensions"] == {"code": "BAD_REQUEST"}
    assert expected in error["message"], error
    assert response.headers["x-request-id"]


async def test_an_internal_fault_is_generic_for_the_client_and_detailed_in_the_log(
    api: httpx.AsyncClient, db: asyncpg.Pool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    # A real fault: the table a resolver reads is gone (as after a botched manual migration).
    async with db.acquire() as connection:
        await connection.execute("ALTER TABLE channels RENAME TO channels_moved")
    try:
        response = await post(api, "{ channels { nodes { id } } }", headers=READER)
    finally:
        async with db.acquire() as connection:
            await connection.execute("ALTER TABLE channels_moved RENAME TO channels")
    request_id = response.headers["x-request-id"]
    assert response.status_code == 200
    assert response.json()["errors"] == [
        {
            "message": "Internal server error",
            "extensions": {"code": "INTERNAL", "requestId": request_id},
        }
    ]
    assert "channels" not in json.dumps(response.json()["errors"])
    faults = [
        r for r in caplog.records if request_id in r.getMessage() and r.levelno >= logging.ERROR
    ]
    assert faults and faults[0].exc_info is not None, "the fault is logged with its traceback"
    assert "UndefinedTable" in faults[0].getMessage() + repr(faults[0].exc_info[1])


async def test_client_mistakes_are_logged_without_a_traceback(
    api: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    responses = [
        await post(api, '{ channel(id: "abc") { id } }', headers=READER),
        await post(api, "{ channels { nope } }", headers=READER),
        await post(api, "{ channels { ", headers=READER),
        await post(api, 'mutation { cancelJob(id: "1") { __typename } }', headers=READER),
        await post_raw(api, "null", headers=READER),
    ]
    codes = [only_error(r)["extensions"]["code"] for r in responses]
    assert codes == ["BAD_ID", "VALIDATION", "PARSE", "FORBIDDEN", "BAD_REQUEST"]
    for response in responses:
        request_id = response.headers["x-request-id"]
        records = [r for r in caplog.records if request_id in r.getMessage()]
        assert records, f"the refusal of {request_id} is logged"
        assert all(
            r.levelno <= logging.INFO and r.exc_info is None and r.stack_info is None
            for r in records
        )
    api_loggers = ("schema", "server", "strawberry")
    assert not [
        r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith(api_loggers)
    ]


async def test_every_response_carries_a_request_id(api: httpx.AsyncClient) -> None:
    responses = [
        await api.get("/healthz"),
        await api.post("/graphql", json={"query": "{ channels { nodes { id } } }"}),  # 401
        await post(api, "{ channels { nodes { id } } }", headers=READER),
        await post_raw(api, b"x" * (2 * 1024 * 1024), headers=READER),  # 413
    ]
    assert [r.status_code for r in responses] == [200, 401, 200, 413]
    ids = [r.headers.get("x-request-id") for r in responses]
    assert all(ids) and len(set(ids)) == len(ids)


def huge_ingest(count: int) -> bytes:
    messages = [
        {
            "id": f"m{i}",
            "author": "ann",
            "ts": "2024-01-01T00:00:00Z",
            "text": f"message number {i}",
        }
        for i in range(count)
    ]
    return json.dumps(
        {"query": INGEST, "variables": {"c": {"name": "flood"}, "m": messages}}
    ).encode()


class Flood:
    """What one request made the server do: the steps of request_gate and the GraphQL
    endpoint it reached, counted (a spy on each, which still runs it), and the CPU time of the
    event loop's thread (the server runs in this loop: a heartbeat of an in-process worker
    would have waited as long). CPU time, unlike wall time, does not grow while other
    processes hold the cores."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: Counter[str] = Counter()
        for owner, name in (
            (graphql_http, "decode_json"),
            (request_gate, "check_variables"),
            (DigestSchema, "execute"),
        ):
            monkeypatch.setattr(owner, name, self._counted(name, getattr(owner, name)))

    def _counted(self, name: str, step: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return step(*args, **kwargs)

        return counted

    async def post(
        self, http: httpx.AsyncClient, body: bytes, headers: dict[str, str]
    ) -> tuple[httpx.Response, float, float, float]:
        """The response, its wall time (reported only), the loop thread's CPU time for it, and
        the most CPU time that thread spent between two ticks of a 10 ms heartbeat."""
        self.calls.clear()
        worst = 0.0
        done = asyncio.Event()

        async def heartbeat() -> None:
            nonlocal worst
            while not done.is_set():
                started = time.thread_time()
                await asyncio.sleep(0.01)
                worst = max(worst, time.thread_time() - started)

        task = asyncio.create_task(heartbeat())
        started, cpu_started = time.perf_counter(), time.thread_time()
        response = await post_raw(http, body, headers=headers)
        elapsed, cpu = time.perf_counter() - started, time.thread_time() - cpu_started
        done.set()
        await task
        return response, elapsed, cpu, worst


async def test_a_flood_is_refused_before_coercion(
    api: httpx.AsyncClient, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """300,000 messages (22 MB) froze the process for 18 s before the permission check and the
    5,000 cap refused them. Now a reader is refused by size at once and a writer by count."""
    body = huge_ingest(300_000)
    assert 20 * 1024 * 1024 < len(body) < 32 * 1024 * 1024
    flood = Flood(monkeypatch)
    reader, reader_seconds, reader_cpu, _ = await flood.post(api, body, READER)
    assert (
        reader.status_code == 413
        and only_error(reader)["extensions"]["code"] == "REQUEST_TOO_LARGE"
    )
    assert flood.calls == {}  # refused by its length: the body is not even decoded
    writer, writer_seconds, writer_cpu, writer_stall = await flood.post(api, body, WRITER)
    error = only_error(writer)
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and "300000" in error["message"], error
    # Decoded once, then refused by the count of its list: no value checked, nothing executed
    # (so no variable coerced).
    assert flood.calls == {"decode_json": 1}
    with capsys.disabled():
        print(
            f"\n22 MB ingest of 300,000 messages: reader refused in {reader_seconds:.2f} s "
            f"({reader_cpu:.2f} s CPU on the loop), writer refused in {writer_seconds:.2f} s "
            f"({writer_cpu:.2f} s CPU on the loop, at most {writer_stall:.2f} s between two "
            "ticks); before (same machine): 13.7 to 32.7 s, the loop blocked throughout"
        )
    # Generous CPU bounds on the loop's thread (decoding 22 MB of JSON is most of the writer's).
    assert reader_cpu < 2 and writer_cpu < 10
    assert writer_stall < 3

    # A reader's mutation is refused before its variables are even looked at.
    small = await post(api, INGEST, {"c": {"name": "x"}, "m": [{"id": 1.5}]}, headers=READER)
    assert only_error(small)["extensions"]["code"] == "FORBIDDEN"
    # Only the ingest mutations may send a large body: a 2 MB query is refused, for a writer too.
    padded = await post(
        api, "query($pad: String) { channels { nodes { id } } }", {"pad": "x" * (2 * 1024 * 1024)}
    )
    assert (
        padded.status_code == 413
        and only_error(padded)["extensions"]["code"] == "REQUEST_TOO_LARGE"
    )
    # The cap counts every ingestMessages of the request, inline lists too.
    two = 'mutation($m: [MessageInput!]!) { a: ingestMessages(channel: {name: "x"}, messages: $m) { __typename } b: ingestMessages(channel: {name: "y"}, messages: $m) { __typename } }'
    messages = [
        {"id": f"m{i}", "author": "a", "ts": "2024-01-01T00:00:00Z", "text": "t"}
        for i in range(2600)
    ]
    assert "5200" in only_error(await post(api, two, {"m": messages}))["message"]


async def test_responses_are_bounded(api: httpx.AsyncClient) -> None:
    """30 aliases of a document's canonicalText returned 282 MB to a reader."""
    text = " ".join(f"word{i % 997}" for i in range(1_000_000))  # ~7 MB of canonical text
    ingest = "mutation($t: String!) { ingestDocument(input: {text: $t}) { ... on Document { id chars } ... on InvalidInputError { message } } }"
    document = (await post(api, ingest, {"t": text})).json()["data"]["ingestDocument"]
    assert document["chars"] > 6_000_000, document
    aliases = (
        "{ "
        + " ".join(f'd{i}: document(id: "{document["id"]}") {{ canonicalText }}' for i in range(30))
        + " }"
    )
    costly = await post(api, aliases, headers=READER)
    error = only_error(costly)
    assert error["extensions"]["code"] == "TOO_COMPLEX" and costly.json()["data"] is None
    assert error["extensions"]["cost"] > error["extensions"]["maxCost"]
    # Within the cost limit, the response cap (16 MB) still holds: three copies are ~21 MB.
    three = (
        "{ "
        + " ".join(f'd{i}: document(id: "{document["id"]}") {{ canonicalText }}' for i in range(3))
        + " }"
    )
    large = await post(api, three, headers=READER)
    assert only_error(large)["extensions"]["code"] == "RESPONSE_TOO_LARGE"
    assert len(large.content) < 10_000
    one = await post(
        api, f'{{ document(id: "{document["id"]}") {{ canonicalText }} }}', headers=READER
    )
    assert len(one.json()["data"]["document"]["canonicalText"]) == document["chars"]


@pytest.mark.parametrize(
    "spelling",
    ["١", "1_0", " 7 ", "+1", "01", "1.0", "1e1", "-1", "", "9223372036854775808", "1\x00"],
)
async def test_ids_have_one_spelling(api: httpx.AsyncClient, spelling: str) -> None:
    created = (
        await post(
            api,
            INGEST,
            {
                "c": {"name": "general"},
                "m": [{"id": "m1", "author": "a", "ts": "2024-01-01T00:00:00Z", "text": "hi"}],
            },
        )
    ).json()
    channel_one = base64.b64encode(b"Channel:1").decode()  # a global id
    assert created["data"]["ingestMessages"]["channel"]["id"] == channel_one
    for query, variables in (
        ("query($id: ID!) { channel(id: $id) { id } }", {"id": spelling}),
        (
            "query($id: ID!) { messages(filter: {channelId: $id}) { nodes { id } } }",
            {"id": spelling},
        ),
        ("query($id: ID) { digests(filter: {channelId: $id}) { nodes { id } } }", {"id": spelling}),
    ):
        error = only_error(await post(api, query, variables))
        # A NUL is refused with the variables, before any id is read.
        assert error["extensions"]["code"] == (
            "BAD_USER_INPUT" if "\x00" in spelling else "BAD_ID"
        ), (query, error)
        assert "id" in error["message"]
    # A mutation answers a malformed id with its typed error, like an unknown one (a NUL is
    # refused in any string, before the request runs).
    mutation = "mutation($id: ID!) { triggerDigest(channelId: $id) { ... on InvalidInputError { code message } } }"
    if "\x00" in spelling:
        assert (
            only_error(await post(api, mutation, {"id": spelling}))["extensions"]["code"]
            == "BAD_USER_INPUT"
        )
        return
    typed = (await post(api, mutation, {"id": spelling})).json()
    assert "errors" not in typed, typed
    assert (
        typed["data"]["triggerDigest"]["code"] == "BAD_ID"
        and "id" in typed["data"]["triggerDigest"]["message"]
    )
    canonical = (
        await post(api, '{ channel(id: "1") { id } zero: channel(id: "0") { id } }')
    ).json()
    assert canonical["data"] == {"channel": {"id": channel_one}, "zero": None}


async def test_get_runs_queries_only_and_serves_graphiql(api: httpx.AsyncClient) -> None:
    page = await api.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200 and "graphiql" in page.text.lower()
    query = await api.get(
        "/graphql", params={"query": "{ channels { nodes { id } } }"}, headers=READER
    )
    assert query.json() == {"data": {"channels": {"nodes": []}}}
    mutation = await api.get(
        "/graphql",
        params={"query": 'mutation { cancelJob(id: "1") { __typename } }'},
        headers=WRITER,
    )
    assert mutation.status_code == 400 and "over GET" in only_error(mutation)["message"]
    subscription = await post(api, "subscription { channels { nodes { id } } }")
    assert only_error(subscription)["extensions"]["code"] == "VALIDATION"
    bad_variables = await api.get(
        "/graphql",
        params={"query": "{ channels { nodes { id } } }", "variables": "[1"},
        headers=READER,
    )
    assert (
        bad_variables.status_code == 400
        and only_error(bad_variables)["extensions"]["code"] == "BAD_REQUEST"
    )
    # A GET has no body: the message names the parameter that is not JSON.
    assert only_error(bad_variables)["message"].startswith(
        "the `variables` parameter of the URL is not JSON"
    ), bad_variables.text


async def test_a_method_graphql_is_not_served_over_gets_the_api_error_body(
    api: httpx.AsyncClient,
) -> None:
    for method in ("PUT", "DELETE", "PATCH"):
        refused = await api.request(
            method, "/graphql", json={"query": "{ __typename }"}, headers=WRITER
        )
        assert refused.status_code == 405, (method, refused.text)
        error = only_error(refused)
        assert error["extensions"] == {"code": "BAD_REQUEST"}, error
        assert method in error["message"] and "GET" in error["message"], error
        assert {"GET", "POST"} <= {m.strip() for m in refused.headers["allow"].split(",")}


async def test_message_fields_are_repaired_not_refused(api: httpx.AsyncClient) -> None:
    """A NUL or a lone surrogate in a message is repaired like an imported record's; the same in
    the channel name (stored as is) is refused."""
    messages = [
        {
            "id": "m\x001",
            "author": "a\ud800",
            "ts": "2024-01-01T00:00:00Z",
            "text": "hi\x00 there \udfff",
            "attachments": [{"k\x00": "v"}],
        }
    ]
    body = json.dumps({"query": INGEST, "variables": {"c": {"name": "general"}, "m": messages}})
    stored = (await post_raw(api, body)).json()["data"]["ingestMessages"]
    assert stored["accepted"] == 1 and stored["rejected"] == 0
    page = await post(
        api,
        '{ messages(filter: {channelId: "1"}) { nodes { messageId author text attachments } } }',
    )
    node = page.json()["data"]["messages"]["nodes"][0]
    assert node == {
        "messageId": "m1",
        "author": "a\ufffd",
        "text": "hi there \ufffd",
        "attachments": [{"k": "v"}],
    }


async def test_an_exception_outside_graphql_is_a_generic_500(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Whatever escapes the app (here a route that fails) is logged with its traceback under the
    request id, and the client gets only the generic error with that id."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.routing import Route

    from server.request_id import RequestIdMiddleware

    async def broken(request: Request) -> None:
        raise KeyError("secret-internal-detail")

    app = Starlette(routes=[Route("/broken", broken)], middleware=[Middleware(RequestIdMiddleware)])
    caplog.set_level(logging.INFO)
    async with running_server(app) as base_url, httpx.AsyncClient(base_url=base_url) as http:
        response = await http.get("/broken")
    request_id = response.headers["x-request-id"]
    assert response.status_code == 500
    assert response.json() == {
        "errors": [
            {
                "message": "Internal server error",
                "extensions": {"code": "INTERNAL", "requestId": request_id},
            }
        ]
    }
    logged = [r for r in caplog.records if request_id in r.getMessage()]
    assert logged and logged[0].levelno == logging.ERROR and logged[0].exc_info is not None


async def test_only_a_json_media_type_is_read_as_a_graphql_body(
    db: asyncpg.Pool, settings: Settings
) -> None:
    """A page on any origin may POST without a CORS preflight if its Content-Type is text/plain,
    form data or multipart, whatever parameters follow: on a server without tokens, a body taken
    for JSON because `application/json` appears somewhere in the header would run the page's
    mutation. The media type is compared as a media type: its essence, in any case, and a
    charset that is UTF-8."""
    planted = {
        "c": {"name": "planted"},
        "m": [{"id": "x1", "author": "page", "ts": "2025-03-10T11:30:00Z", "text": "hi"}],
    }
    body = json.dumps({"query": INGEST, "variables": planted})
    app = create_app(settings, AppOptions(run_workers=0))  # no tokens: the local caller may write
    async with running_server(app) as base_url, httpx.AsyncClient(base_url=base_url) as http:
        for content_type in (
            "text/plain; a=application/json",
            "text/plain;application/json",
            "application/x-www-form-urlencoded; x=application/json",
            "multipart/form-data; boundary=application/json",
            "application/json-seq",
            "application/json; charset=latin1",
        ):
            refused = await http.post(
                "/graphql",
                content=body,
                headers={"content-type": content_type, "origin": "https://page.example"},
            )
            assert refused.status_code == 415, (content_type, refused.text)
            assert only_error(refused)["extensions"] == {"code": "BAD_REQUEST"}
        async with db.acquire() as connection:
            assert await connection.fetchval("SELECT count(*) FROM channels") == 0
        for content_type in ("Application/JSON", 'application/json; Charset="UTF-8"'):
            read = await http.post("/graphql", content=body, headers={"content-type": content_type})
            assert read.status_code == 200, (content_type, read.text)
            assert read.json()["data"]["ingestMessages"]["accepted"] == 1


async def test_fragments_spread_twice_down_a_chain_are_refused_at_once(
    api: httpx.AsyncClient,
) -> None:
    """Fragments each spreading the next one twice: with thirty, 2 KB of query that names 2**30
    fields, and walking every path through them held the event loop for good. Each fragment is
    walked once: twenty-four (16 million paths, half a minute of CPU before) are refused as too
    complex in a blink. The server runs in this process, so its CPU time is counted here."""
    chain = " ".join(f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}" for i in range(24))
    query = f"query {{ ...F0 }} {chain} fragment F24 on Query {{ __typename }}"
    started = time.process_time()
    refused = await post(api, query, headers=READER)
    spent = time.process_time() - started
    error = only_error(refused)
    assert error["extensions"]["code"] == "TOO_COMPLEX", error
    assert spent < 2, f"{spent:.1f} s of CPU to refuse it"
