"""Where a GraphQL request's time goes: the two scenarios of bench/api.py (`job(id)` polling and
`digests(first: 20)`) measured in one process, layer by layer, against the plain Starlette+asyncpg
endpoint in the same run.

    .venv/bin/python bench/api_layers.py [--quick] [--database-url URL] [--requests 2000]

Every layer runs the same query with the same variables against the same database, with the
garbage collector tuned as `digestd serve` tunes it; no sockets, so uvicorn and the kernel are
out of the figures (bench/api.py measures them):

- `plain`: the baseline app of bench/api.py called through ASGI (routing, one query, JSON);
- `graphql_app`: digestd's whole app through ASGI (middleware, admission, Strawberry, JSON);
- `compiled`: the query's compiled plan alone (schema/compiled/), on the same context;
- `strawberry`: `schema.execute` alone (extensions, Strawberry's resolvers, graphql-core);
- `graphql_core`: graphql-core's `execute` alone, on the same schema, document and context;
- `sql`: the statement alone on a pooled connection.

The summary line gives each layer's µs per request and `ratio_if_only_graphql_core`, the
throughput ratio bench/api.py would show if everything around graphql-core's executor cost
nothing: the ceiling of that ratio on this stack.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import graphql

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH]
sys.path.insert(0, str(REPO))

from bench._api_plain import create_plain_app
from bench._api_seed import seed
from bench.api import DIGESTS_QUERY, JOB_QUERY
from db import jobs, pages
from db.engine import embedded_database_url
from schema import build_schema
from schema.compiled.plan import build_plan
from schema.compiled.run import run_plan
from schema.context import Context
from server.app import AppOptions, create_app
from server.auth import Role
from server.cli_serve import tune_gc_for_serving
from server.runtime import Runtime
from server.settings import Settings

Call = Callable[[int], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]


async def asgi_request(
    app: ASGIApp, method: str, path: str, body: bytes = b"", query: bytes = b""
) -> int:
    """One HTTP request through the app's ASGI interface; the response status."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    delivered = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if delivered:  # the app never reads past the body; a disconnect would end it early
            await asyncio.Event().wait()
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])

    await app(scope, receive, send)
    return status


async def per_request_us(call: Call, requests: int, repeats: int) -> float:
    """The best of `repeats` runs of `requests` calls, in µs per call (after a warm-up)."""
    for number in range(min(200, requests)):
        await call(number)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for number in range(requests):
            await call(number)
        best = min(best, (time.perf_counter() - started) / requests * 1e6)
    return best


async def measure(
    url: str, home: Path, job_ids: list[int], requests: int, repeats: int
) -> list[dict[str, Any]]:
    settings = Settings(database_url=url, digestd_home=home)
    app = create_app(settings, AppOptions(run_workers=0))
    plain = create_plain_app(url, settings.digestd_db_pool_size)
    schema = build_schema()
    config = Runtime(settings).api_config()
    rows: list[dict[str, Any]] = []
    async with app.router.lifespan_context(app), plain.router.lifespan_context(plain):
        tune_gc_for_serving()
        pool = app.state.pool

        def context() -> Context:
            return Context(pool=pool, role=Role.READER, config=config, request_id="bench")

        async def scenario_row(scenario: str, query: str) -> dict[str, Any]:
            document = graphql.parse(query)
            plan = build_plan(schema._schema, document, None)

            def variables(number: int) -> dict[str, Any]:
                return {"id": str(job_ids[number % 100])} if scenario == "job" else {}

            async def plain_call(number: int) -> None:
                if scenario == "job":
                    status = await asgi_request(plain, "GET", f"/plain/job/{job_ids[number % 100]}")
                else:
                    status = await asgi_request(plain, "GET", "/plain/digests", query=b"first=20")
                assert status == 200

            async def app_call(number: int) -> None:
                body = json.dumps({"query": query, "variables": variables(number)}).encode()
                assert await asgi_request(app, "POST", "/graphql", body) == 200

            async def strawberry_call(number: int) -> None:
                result = await schema.execute(
                    query, variable_values=variables(number), context_value=context()
                )
                assert not result.errors, result.errors

            async def compiled_call(number: int) -> None:
                data = await run_plan(plan, schema._schema, context(), variables(number))
                assert data is not None

            async def core_call(number: int) -> None:
                result = graphql.execute(
                    schema._schema,
                    document,
                    variable_values=variables(number),
                    context_value=context(),
                )
                if not isinstance(result, graphql.ExecutionResult):
                    result = await result
                assert not result.errors, result.errors

            async def sql_call(number: int) -> None:
                async with pool.acquire() as connection:
                    if scenario == "job":
                        await jobs.jobs_by_ids(connection, [job_ids[number % 100]])
                    else:
                        await pages.fetch_page(connection, pages.DIGESTS, {}, first=20, after=None)

            layers: dict[str, Call] = {
                "plain": plain_call,
                "graphql_app": app_call,
                "compiled": compiled_call,
                "strawberry": strawberry_call,
                "graphql_core": core_call,
                "sql": sql_call,
            }
            figures = {
                name: round(await per_request_us(call, requests, repeats))
                for name, call in layers.items()
            }
            return {
                "bench": "api_layers",
                "scenario": scenario,
                "requests": requests,
                "repeats": repeats,
                "us_per_request": figures,
                "ratio_in_process": round(figures["plain"] / figures["graphql_app"], 3),
                "ratio_if_only_graphql_core": round(figures["plain"] / figures["graphql_core"], 3),
                "ratio_if_only_compiled": round(figures["plain"] / figures["compiled"], 3),
            }

        for scenario, query in (("job", JOB_QUERY), ("digests", DIGESTS_QUERY)):
            rows.append(await scenario_row(scenario, query))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds: CI smoke test")
    parser.add_argument("--database-url", help="a disposable database (default: embedded, temp)")
    parser.add_argument("--requests", type=int, help="requests per run and layer (default 2000)")
    args = parser.parse_args()
    requests = args.requests or (100 if args.quick else 2000)
    repeats = 1 if args.quick else 3
    with tempfile.TemporaryDirectory(prefix="digestd-bench-layers-") as directory:
        home = Path(directory)
        url = args.database_url or embedded_database_url(home)
        job_ids = asyncio.run(seed(url, 200 if args.quick else 1000))
        for row in asyncio.run(measure(url, home, job_ids, requests, repeats)):
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
