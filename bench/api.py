"""API benchmark: `job(id)` polling and `digests(first: 20)` through the real GraphQL app vs a
plain Starlette+asyncpg JSON endpoint serving the same data from the same database.

    /tmp/venv/bin/python bench/api.py [--quick] [--database-url URL] [--connections 16]
                                      [--duration 5] [--repeats 3]
                                      [--py-spy PATH [--profile-dir DIR]]

Both servers run as their own uvicorn process the way `digestd serve` runs (the GraphQL one *is*
`digestd serve --no-runner`); the load generator (bench/_api_load.py) is a third process on
loopback. Scenarios:

- `job`: `job(id)` polling, cycling over 100 job ids (a DataLoader lookup, one query);
- `digests`: `digests(first: 20)` with the light summary fields (one keyset query);
- `digests_nested`: the same page plus `channel { name }` and `itemCounts`, what a dashboard
  list shows (the DataLoaders add two batched queries; the plain endpoint sends the same two).

Before any load the script checks that both servers return equal data. Prints one JSON line per
measured run, then one summary line per scenario with medians, spread (min..max over repeats),
and graphql/plain throughput ratio (target ≥ 0.5), then the two headline ratios (`job`,
`digests`) on one line, and last the conditional polling figure (not part of the ratios): `job(id)`
polled by GET answered in full vs answered 304 to an If-None-Match of its ETag
(server/etag.py). Before the load, the SQL statements one request of each scenario sends
are counted on the real app's connections (bench/_api_statements.py), and printed. With `--py-spy PATH` (py-spy is not a
dependency; install it anywhere), one extra GraphQL run per scenario is profiled and the hottest
frames and a per-phase breakdown are printed (`--profile-dir` keeps the raw stacks).

The database is an embedded PostgreSQL in a temporary directory unless `--database-url` names a
disposable one (the script adds a server, channels, jobs and digests to it).

Every load run also reports the server process's CPU µs per request (user + system from /proc,
warm-up included) and the load average, since requests per second on a shared machine move with
its neighbours. With `--callgrind N [--scenario NAME ...]` there are no load runs: both servers
run under valgrind's callgrind and the instructions each runs per request are counted over N
requests (bench/_api_instructions.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
# Run as a script, bench/ is first on sys.path; import the helpers as `bench._api_*` from the
# repository root instead.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH]
sys.path.insert(0, str(REPO))

from bench._api_instructions import callgrind_prefix, instructions_per_request
from bench._api_profile import profile_summary
from bench._api_seed import seed
from bench._api_statements import statement_counter
from db.engine import embedded_database_url
from server.settings import Settings

TARGET_RATIO = 0.5

JOB_QUERY = (
    "query Poll($id: ID!) { job(id: $id) { id status phase progress { chunksDone chunksTotal } "
    "attempts error resultMessage digestId stats { messages chunks llmCalls durationSeconds } "
    "updatedAt } }"
)
_DIGEST_FIELDS = (
    "id channelId title excerpt signalQuality { level reason } messageCount windowStart "
    "windowEnd createdAt"
)
_ITEM_COUNTS = (
    "itemCounts { topics decisions actionItems openQuestions links artifacts knowledgeItems }"
)
DIGESTS_QUERY = (
    f"{{ digests(first: 20) {{ edges {{ cursor node {{ {_DIGEST_FIELDS} }} }} "
    "pageInfo { hasNextPage endCursor } } }"
)
DIGESTS_NESTED_QUERY = (
    f"{{ digests(first: 20) {{ edges {{ cursor node {{ {_DIGEST_FIELDS} channel {{ name }} "
    f"{_ITEM_COUNTS} }} }} pageInfo {{ hasNextPage endCursor }} }} }}"
)
SCENARIOS = ("job", "digests", "digests_nested")


@dataclass(frozen=True)
class Options:
    quick: bool
    connections: int
    duration: float
    warmup: float
    repeats: int
    digests: int
    py_spy: str | None
    profile_dir: Path | None = None
    # Requests counted per scenario and server under callgrind (0: no count, load runs instead).
    callgrind: int = 0
    scenarios: tuple[str, ...] = SCENARIOS

    @property
    def servers(self) -> tuple[str, ...]:
        return ("graphql", "plain")


# --- servers -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(port: int, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server on port {port} exited with {process.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"server on port {port} did not become healthy")


@contextmanager
def servers(
    url: str, home: Path, names: tuple[str, ...], prefix: list[str] | None = None
) -> Iterator[dict[str, tuple[int, int]]]:
    """The servers named, as {name: (port, pid)}: "graphql" is `digestd serve --no-runner`,
    "plain" the baseline; `prefix` (with `{name}` in it replaced) runs them under a tool."""
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DIGESTD_HOME": str(home),
        "DIGEST_EXTRACTOR": "offline",
    }
    env.pop("DIGESTD_API_TOKENS", None)
    pool_size = env.get("DIGESTD_DB_POOL_SIZE", "10")
    started: dict[str, tuple[int, subprocess.Popen[bytes]]] = {}
    try:
        for name in names:
            port = free_port()
            command = {
                "graphql": [sys.executable, "-m", "server.cli", "serve", "--no-runner"],
                "plain": [
                    sys.executable,
                    "-m",
                    "bench._api_plain",
                    "--database-url",
                    url,
                    "--pool-size",
                    pool_size,
                ],
            }[name]
            # Their logs (the app's access log) go to a file: the same work, a readable output.
            log = (home / f"{name}.log").open("ab")
            tool = [part.replace("{name}", name) for part in prefix or []]
            started[name] = (
                port,
                subprocess.Popen(
                    [*tool, *command, "--port", str(port)],
                    cwd=REPO,
                    env=env,
                    stdout=log,
                    stderr=log,
                ),
            )
            log.close()
        for port, process in started.values():
            wait_healthy(port, process, timeout=600 if prefix else 60)
        yield {name: (port, process.pid) for name, (port, process) in started.items()}
    finally:
        for _, process in started.values():
            process.terminate()
        for _, process in started.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


# --- requests ------------------------------------------------------------------------------


def graphql_request(port: int, query: str, variables: dict[str, Any]) -> str:
    body = json.dumps({"query": query, "variables": variables})
    return (
        f"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body.encode())}\r\n\r\n{body}"
    )


def graphql_get(port: int, query: str, variables: dict[str, Any], etag: str | None) -> str:
    params = urllib.parse.urlencode({"query": query, "variables": json.dumps(variables)})
    condition = f"If-None-Match: {etag}\r\n" if etag else ""
    return f"GET /graphql?{params} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{condition}\r\n"


def polling_requests(port: int, job_ids: list[int], conditional: bool) -> list[str]:
    """GETs of the `job` scenario's 100 ids, with the ETag of each answer when `conditional`
    (nothing changes during the run, so every conditional answer is a 304)."""
    step = max(1, len(job_ids) // 100)
    requests: list[str] = []
    with httpx.Client(timeout=10) as client:
        for job_id in job_ids[::step][:100]:
            variables = {"id": str(job_id)}
            etag = None
            if conditional:
                params = {"query": JOB_QUERY, "variables": json.dumps(variables)}
                answer = client.get(f"http://127.0.0.1:{port}/graphql", params=params)
                etag = answer.headers["etag"]
            requests.append(graphql_get(port, JOB_QUERY, variables, etag))
    return requests


def plain_request(port: int, path: str) -> str:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"


def scenario_requests(scenario: str, server: str, port: int, job_ids: list[int]) -> list[str]:
    """The requests one load run cycles through: 100 job ids for polling, one page otherwise."""
    if scenario == "job":
        step = max(1, len(job_ids) // 100)
        picked = job_ids[::step][:100]
        if server != "plain":
            return [graphql_request(port, JOB_QUERY, {"id": str(i)}) for i in picked]
        return [plain_request(port, f"/plain/job/{i}") for i in picked]
    nested = scenario == "digests_nested"
    if server != "plain":
        return [graphql_request(port, DIGESTS_NESTED_QUERY if nested else DIGESTS_QUERY, {})]
    return [plain_request(port, f"/plain/digests?first=20{'&nested=1' if nested else ''}")]


def check_same_data(ports: dict[str, tuple[int, int]], job_id: int) -> dict[str, bool]:
    """Every server must answer with equal data, or the comparison would be meaningless."""
    plain_url = f"http://127.0.0.1:{ports['plain'][0]}/plain"
    graphql_urls = [
        f"http://127.0.0.1:{port}/graphql" for name, (port, _) in ports.items() if name != "plain"
    ]
    results: dict[str, bool] = {}
    pairs = {
        "job": ((JOB_QUERY, {"id": str(job_id)}), f"/job/{job_id}"),
        "digests": ((DIGESTS_QUERY, {}), "/digests?first=20"),
        "digests_nested": ((DIGESTS_NESTED_QUERY, {}), "/digests?first=20&nested=1"),
    }
    with httpx.Client(timeout=10) as client:
        for name, ((query, variables), path) in pairs.items():
            plain = client.get(plain_url + path).json()
            results[name] = True
            for graphql_url in graphql_urls:
                body = {"query": query, "variables": variables}
                graphql = client.post(graphql_url, json=body).json()
                if "errors" in graphql:
                    raise RuntimeError(f"{name}: GraphQL errors {graphql['errors']}")
                results[name] &= graphql["data"] == plain
    return results


# --- load runs -----------------------------------------------------------------------------


def cpu_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU time of process `pid` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def run_load(
    requests: list[str],
    port: int,
    options: Options,
    check_errors: bool,
    expect_status: int = 200,
    pid: int | None = None,
) -> dict[str, Any]:
    """One load run; with the server's `pid`, also the server's CPU µs per request answered
    (a figure that moves less with the machine's load than requests per second do)."""
    cpu_before = cpu_seconds(pid) if pid is not None else (0.0, 0.0)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(
            {
                "host": "127.0.0.1",
                "port": port,
                "requests": requests,
                "connections": options.connections,
                "warmup": options.warmup,
                "duration": options.duration,
                "check_graphql_errors": check_errors,
                "expect_status": expect_status,
            },
            handle,
        )
    try:
        completed = subprocess.run(
            [sys.executable, str(BENCH / "_api_load.py"), handle.name],
            capture_output=True,
            text=True,
            check=True,
            timeout=options.warmup + options.duration + 60,
        )
    finally:
        os.unlink(handle.name)
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    if pid is not None and result["answered"]:
        user, system = (
            (after - before) / result["answered"] * 1e6
            for after, before in zip(cpu_seconds(pid), cpu_before, strict=True)
        )
        result["server_cpu_us_per_request"] = round(user + system, 1)
        result["server_system_us_per_request"] = round(system, 1)
    return result


def emit(row: dict[str, Any]) -> None:
    print(json.dumps(row), flush=True)


def summarize(
    scenario: str, runs: dict[str, list[dict[str, Any]]], options: Options
) -> dict[str, Any]:
    def median(server: str, key: str) -> float:
        # A run that answered nothing has no CPU figure: NaN rather than a missing key.
        return round(statistics.median(run.get(key, math.nan) for run in runs[server]), 2)

    def spread(server: str) -> list[float]:
        values = [run["requests_per_s"] for run in runs[server]]
        return [min(values), max(values)]

    loads = [run["load_average"] for server_runs in runs.values() for run in server_runs]
    ratio = median("graphql", "requests_per_s") / median("plain", "requests_per_s")
    cpu_ratio = median("plain", "server_cpu_us_per_request") / median(
        "graphql", "server_cpu_us_per_request"
    )
    return {
        "bench": "api",
        "summary": True,
        "scenario": scenario,
        "connections": options.connections,
        "duration_s": options.duration,
        "repeats": options.repeats,
        "graphql_rps": median("graphql", "requests_per_s"),
        "graphql_rps_spread": spread("graphql"),
        "graphql_p50_ms": median("graphql", "p50_ms"),
        "graphql_p99_ms": median("graphql", "p99_ms"),
        "plain_rps": median("plain", "requests_per_s"),
        "plain_rps_spread": spread("plain"),
        "plain_p50_ms": median("plain", "p50_ms"),
        "plain_p99_ms": median("plain", "p99_ms"),
        "ratio": round(ratio, 3),
        "graphql_cpu_us_per_request": median("graphql", "server_cpu_us_per_request"),
        "plain_cpu_us_per_request": median("plain", "server_cpu_us_per_request"),
        "cpu_ratio": round(cpu_ratio, 3),
        "target_ratio": TARGET_RATIO,
        "target_met": ratio >= TARGET_RATIO,
        "load_average": [min(loads), max(loads)],
        "errors": sum(run["errors"] for server_runs in runs.values() for run in server_runs),
    }


def conditional_polling(port: int, job_ids: list[int], options: Options) -> dict[str, Any]:
    """`job(id)` polled by GET, answered in full vs 304 Not Modified (If-None-Match: the ETag of
    the previous answer), runs alternating: a separate figure, not part of the ratios."""
    full = polling_requests(port, job_ids, conditional=False)
    conditional = polling_requests(port, job_ids, conditional=True)
    runs: dict[str, list[dict[str, Any]]] = {"full": [], "not_modified": []}
    for repeat in range(options.repeats):
        order = ("full", "not_modified") if repeat % 2 == 0 else ("not_modified", "full")
        for kind in order:
            requests, status = (full, 200) if kind == "full" else (conditional, 304)
            result = run_load(requests, port, options, check_errors=True, expect_status=status)
            runs[kind].append(result)
            emit({"bench": "api", "conditional": kind, "repeat": repeat + 1, **result})

    def median(kind: str, key: str) -> float:
        return round(statistics.median(run[key] for run in runs[kind]), 2)

    return {
        "bench": "api",
        "conditional_summary": "job",
        "full_get_rps": median("full", "requests_per_s"),
        "not_modified_rps": median("not_modified", "requests_per_s"),
        "full_get_p50_ms": median("full", "p50_ms"),
        "not_modified_p50_ms": median("not_modified", "p50_ms"),
        "speedup": round(
            median("not_modified", "requests_per_s") / median("full", "requests_per_s"), 3
        ),
        "errors": sum(run["errors"] for kind_runs in runs.values() for run in kind_runs),
    }


def profile_graphql(
    server: str, scenario: str, requests: list[str], port: int, pid: int, options: Options
) -> dict[str, Any]:
    """One more load run of a GraphQL server with py-spy sampling its process."""
    assert options.py_spy is not None
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "profile.txt"
        recorder = subprocess.Popen(
            [
                options.py_spy,
                "record",
                "--pid",
                str(pid),
                "--format",
                "raw",
                "--output",
                str(out),
                "--duration",
                str(int(options.warmup + options.duration)),
                "--rate",
                "250",
                "--nonblocking",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(0.5)  # let py-spy attach before the load starts
        load = run_load(requests, port, options, check_errors=True)
        _, error = recorder.communicate(timeout=120)
        if not out.exists():
            return {
                "bench": "api",
                "profile": scenario,
                "server": server,
                "error": error.decode()[-500:],
            }
        raw = out.read_text(encoding="utf-8")
        if options.profile_dir is not None:
            options.profile_dir.mkdir(parents=True, exist_ok=True)
            (options.profile_dir / f"{server}-{scenario}.txt").write_text(raw, encoding="utf-8")
        summary = profile_summary(raw)
    return {
        "bench": "api",
        "profile": scenario,
        "server": server,
        "rps_while_profiled": load["requests_per_s"],
        **summary,
    }


async def count_statements(url: str, home: Path, job_id: int) -> dict[str, int]:
    """SQL statements per request of each scenario (and of the nested page at 5 rows, to show
    the count does not grow with the page), on the real app's connections."""
    settings = Settings(
        database_url=url, digestd_home=home, digest_extractor="offline", digestd_api_tokens=None
    )
    async with statement_counter(settings) as counter:
        return {
            "job": await counter.count(JOB_QUERY, {"id": str(job_id)}),
            "digests": await counter.count(DIGESTS_QUERY),
            "digests_nested": await counter.count(DIGESTS_NESTED_QUERY),
            "digests_nested_first_5": await counter.count(
                DIGESTS_NESTED_QUERY.replace("first: 20", "first: 5")
            ),
        }


def count_instructions(
    url: str, home: Path, job_ids: list[int], options: Options
) -> dict[str, dict[str, float]]:
    """Instructions per request of each scenario on each server, under callgrind."""
    out = home / "callgrind-{name}.out"
    counts: dict[str, dict[str, float]] = {}
    with servers(url, home, options.servers, prefix=callgrind_prefix(out)) as ports:
        same = check_same_data(ports, job_ids[len(job_ids) // 2])
        if not all(same.values()):
            raise RuntimeError(f"the servers answer different data: {same}")
        for scenario in options.scenarios:
            counts[scenario] = {}
            for server in options.servers:
                port, pid = ports[server]
                requests = scenario_requests(scenario, server, port, job_ids)
                counts[scenario][server] = instructions_per_request(
                    port,
                    pid,
                    requests,
                    options.callgrind,
                    warmup=200,
                    out_file=home / f"callgrind-{server}.out",
                    name=scenario,
                )
            counts[scenario]["ratio"] = counts[scenario]["plain"] / counts[scenario]["graphql"]
            emit(
                {
                    "bench": "api",
                    "instructions_per_request": scenario,
                    "requests": options.callgrind,
                    **{k: round(v, 3) for k, v in counts[scenario].items()},
                }
            )
    return counts


def run(options: Options, database_url: str | None) -> int:
    with tempfile.TemporaryDirectory(prefix="digestd-bench-api-") as directory:
        home = Path(directory)
        url = database_url or embedded_database_url(home)
        digests = options.digests
        started = time.perf_counter()
        job_ids = asyncio.run(seed(url, digests))
        emit(
            {
                "bench": "api",
                "seeded_digests": digests,
                "seeded_jobs": len(job_ids),
                "seed_seconds": round(time.perf_counter() - started, 2),
            }
        )
        statements = asyncio.run(count_statements(url, home, job_ids[0]))
        emit({"bench": "api", "statements_per_request": statements})
        if options.callgrind:
            count_instructions(url, home, job_ids, options)
            return 0
        with servers(url, home, options.servers) as ports:
            same = check_same_data(ports, job_ids[len(job_ids) // 2])
            emit({"bench": "api", "check": "same_data", **same})
            if not all(same.values()):
                return 1
            runs: dict[str, dict[str, list[dict[str, Any]]]] = {
                s: {name: [] for name in options.servers} for s in SCENARIOS
            }
            for repeat in range(options.repeats):
                for scenario in SCENARIOS:
                    # Alternate which server goes first, so a noisy neighbour spreads evenly.
                    order = options.servers if repeat % 2 == 0 else options.servers[::-1]
                    for server in order:
                        port = ports[server][0]
                        requests = scenario_requests(scenario, server, port, job_ids)
                        result = run_load(
                            requests,
                            port,
                            options,
                            check_errors=server != "plain",
                            pid=ports[server][1],
                        )
                        result["load_average"] = round(os.getloadavg()[0], 2)
                        runs[scenario][server].append(result)
                        emit(
                            {
                                "bench": "api",
                                "scenario": scenario,
                                "server": server,
                                "repeat": repeat + 1,
                                "connections": options.connections,
                                **result,
                            }
                        )
            summaries = {
                scenario: summarize(scenario, runs[scenario], options) for scenario in SCENARIOS
            }
            for summary in summaries.values():
                emit(summary)
            # The two headline ratios (target >= 0.5 each), medians over the repeats.
            emit(
                {
                    "bench": "api",
                    "ratios": {s: summaries[s]["ratio"] for s in ("job", "digests")},
                    "target_ratio": TARGET_RATIO,
                }
            )
            emit(conditional_polling(ports["graphql"][0], job_ids, options))
            if options.py_spy:
                for server in (name for name in options.servers if name != "plain"):
                    port, pid = ports[server]
                    for scenario in SCENARIOS:
                        requests = scenario_requests(scenario, server, port, job_ids)
                        emit(profile_graphql(server, scenario, requests, port, pid, options))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds: CI smoke test")
    parser.add_argument("--database-url", help="a disposable database (default: embedded, temp)")
    parser.add_argument(
        "--connections", type=int, default=16, help="concurrent keep-alive connections"
    )
    parser.add_argument("--duration", type=float, help="measured seconds per run (default 5)")
    parser.add_argument("--repeats", type=int, help="runs per scenario and server (default 3)")
    parser.add_argument("--digests", type=int, help="digests (and jobs) seeded (default 1000)")
    parser.add_argument("--py-spy", help="path of py-spy: profile the GraphQL server afterwards")
    parser.add_argument("--profile-dir", help="keep py-spy's raw profiles (collapsed stacks) here")
    parser.add_argument(
        "--callgrind",
        type=int,
        default=0,
        metavar="N",
        help="instead of load runs: instructions per request over N requests (valgrind)",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        choices=SCENARIOS,
        help="with --callgrind: count this scenario only (repeatable; default all)",
    )
    args = parser.parse_args()
    options = Options(
        quick=args.quick,
        connections=args.connections,
        duration=args.duration or (1.0 if args.quick else 5.0),
        warmup=0.3 if args.quick else 1.0,
        repeats=args.repeats or (1 if args.quick else 3),
        digests=args.digests or (200 if args.quick else 1000),
        py_spy=args.py_spy,
        profile_dir=Path(args.profile_dir) if args.profile_dir else None,
        callgrind=args.callgrind,
        scenarios=tuple(args.scenario or SCENARIOS),
    )
    return run(options, args.database_url)


if __name__ == "__main__":
    sys.exit(main())
