"""What an operator relies on, against the real app and PostgreSQL: /metrics in Prometheus'
text format with the queue counted by Postgres and the GraphQL counters moving, request ids
taken from the client or made and found on every log line, an access log, and JSON logs."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator

import asyncpg
import httpx
import pytest

from server.app import AppOptions, create_app
from server.logs import (
    ACCESS_LOGGER,
    JsonFormatter,
    RequestIdFilter,
    current_request_id,
)
from server.settings import Settings
from tests.support.metrics import samples
from tests.support.servers import running_server

INGEST = """mutation { ingestMessages(channel: {server: "ops", name: "metrics"}, messages: [
  {id: "1", author: "ann", ts: "2024-05-01T10:00:00Z", text: "We deploy on Friday."}
]) { ... on IngestResult { accepted channel { id } } } }"""


@pytest.fixture
async def api(db: asyncpg.Pool, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, AppOptions(run_workers=0))  # nothing takes the job: it stays queued
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as http,
    ):
        yield http


async def scrape(http: httpx.AsyncClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = await http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return samples(response.text)


async def test_metrics_count_the_queue_and_the_graphql_requests(api: httpx.AsyncClient) -> None:
    before = await scrape(api)
    queued = ("digestd_jobs", (("kind", "channel"), ("status", "queued")))
    assert before[queued] == 0
    assert before[("digestd_database_up", ())] == 1
    mutation_key = ("digestd_graphql_requests_total", (("operation_type", "mutation"),))
    mutations_before = before.get(mutation_key, 0.0)

    ingested = (await api.post("/graphql", json={"query": INGEST})).json()
    channel_id = ingested["data"]["ingestMessages"]["channel"]["id"]
    trigger = f'mutation {{ triggerDigest(channelId: "{channel_id}") {{ ... on DigestJob {{ id status }} }} }}'
    job = (await api.post("/graphql", json={"query": trigger})).json()["data"]["triggerDigest"]
    assert job["status"] == "QUEUED"
    bad = await api.post("/graphql", json={"query": "{ noSuchField }"})
    bad_code = bad.json()["errors"][0]["extensions"]["code"]

    after = await scrape(api)
    assert after[queued] == 1
    assert after[("digestd_queue_depth", (("kind", "channel"),))] == 1
    assert after[("digestd_queue_oldest_due_seconds", (("kind", "channel"),))] >= 0
    assert after[mutation_key] == mutations_before + 2
    error_key = ("digestd_graphql_errors_total", (("code", bad_code), ("operation_type", "query")))
    assert after[error_key] >= before.get(error_key, 0.0) + 1
    graphql_posts = (
        "digestd_http_request_duration_seconds_count",
        (("method", "POST"), ("route", "/graphql"), ("status", "200")),
    )
    assert after[graphql_posts] >= before.get(graphql_posts, 0.0) + 2


async def test_probing_paths_does_not_grow_the_label_set(api: httpx.AsyncClient) -> None:
    for index in range(5):
        await api.get(f"/no/such/path/{index}")
    routes = {
        dict(labels).get("route")
        for (name, labels) in (await scrape(api))
        if name.startswith("digestd_http")
    }
    assert "other" in routes
    assert not any(route and route.startswith("/no/") for route in routes)


@pytest.fixture
def access_records() -> Iterator[list[logging.LogRecord]]:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    handler.addFilter(RequestIdFilter())
    access = logging.getLogger(ACCESS_LOGGER)
    access.addHandler(handler)
    old_level = access.level
    access.setLevel(logging.INFO)
    try:
        yield records
    finally:
        access.removeHandler(handler)
        access.setLevel(old_level)


async def test_a_client_request_id_is_echoed_and_on_the_access_log_line(
    api: httpx.AsyncClient, access_records: list[logging.LogRecord]
) -> None:
    response = await api.get("/healthz", headers={"X-Request-ID": "dash-42.a"})
    assert response.headers["x-request-id"] == "dash-42.a"
    line = next(r for r in access_records if "/healthz" in r.getMessage())
    assert line.request_id == "dash-42.a"  # type: ignore[attr-defined]
    assert line.getMessage().startswith("GET /healthz 200 ")


@pytest.mark.parametrize("hostile", ["a" * 129, "x\ny", "<script>", ""])
async def test_an_unusable_client_request_id_is_replaced(
    api: httpx.AsyncClient, hostile: str
) -> None:
    response = await api.get("/healthz", headers={"X-Request-ID": hostile.replace("\n", " ")})
    echoed = response.headers["x-request-id"]
    assert echoed != hostile and len(echoed) == 32 and echoed.isalnum()
    assert response.headers.get_list("x-request-id") == [echoed]


def test_json_logs_are_one_object_per_line_with_the_request_id() -> None:
    formatter = JsonFormatter()
    record = logging.LogRecord("digestd.x", logging.ERROR, __file__, 1, "job %s failed", (7,), None)
    token = current_request_id.set("req-1")
    try:
        RequestIdFilter().filter(record)
    finally:
        current_request_id.reset(token)
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    line = formatter.format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["message"] == "job 7 failed" and entry["level"] == "ERROR"
    assert entry["request_id"] == "req-1" and entry["error_class"] == "ValueError"
    assert "Traceback" in entry["traceback"]
    assert entry["time"].endswith("+00:00")
