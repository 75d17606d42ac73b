"""Pipeline benchmark: digest one generated channel with the LLM extractor, (a) against an
in-process instant fake model (runner/llm/fake.py through httpx's ASGI transport) and (b) against a fake OpenAI-compatible
server in its own process that answers after 200 ms per chunk summary, at concurrency 8.

    /tmp/venv/bin/python bench/pipeline.py [--quick] [--messages 100000] [--delay 0.2]
                                           [--concurrency 8] [--repeats 3]

It runs `runner.digests.pipeline.run_pipeline` on plain data (a Window, no database: the pipeline core
takes plain data by design, and the worker adds only a few queries per job around it), with the
production client (`build_client`) and the chunk size the worker would use
(min(DIGESTD_CHUNK_TOKENS default, the extractor's `max_chunk_tokens()`)), and as many consecutive
chunks per map request as it would send (DIGESTD_CHUNKS_PER_REQUEST's default, `--chunks-per-request
1` for one a request). The fake model is
the scripted one of tests/support/llm.py: a grounded summary per chunk, a faithful merge
per reduce, with usage reported like a provider (prompt tokens counted with tiktoken; the
static prefix reported as cached after its first use).

Figures per run: wall time, LLM calls (map and reduce), the job's own stats (runner.worker
`job_stats`: prompt tokens per content token, target <= 1.15), and for (b):
- `model_busy_seconds`: the union of the intervals during which the server held at least one
  request (arrival to answer ready), i.e. time in which the runner was waiting on the model;
- `overhead_share` = (wall - model_busy) / wall: the share of wall time in which no request
  was with the model, so the runner alone was on the critical path (target <= 5%);
- `ideal_seconds`: a zero-cost runner with the same calls: ceil(calls/concurrency) x delay per
  dependent stage (map, then each reduce level), a map request's delay being the server's delay per
  chunk summary x the chunks a request carries (the server answers a packed request that much later); `slack_share` = 1 - ideal / wall, stricter:
  it also charges HTTP, the server's own parsing and any slot left idle.
For (a) the fake's own time is measured and subtracted: `runner_seconds` is the pipeline's own
CPU time for the whole digest (chunking, prompts, client, validation, reduce).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

import httpx

from bench._pipeline_fake_llm import ScriptedModel
from bench._support import (
    REPO,
    emit,
    generated_window,
    machine_details,
    spread,
    top_functions,
    utc_now,
)
from runner.core.chunks import chunk_messages
from runner.core.window import Window
from runner.digests.pipeline import run_pipeline
from runner.digests.stats import job_stats
from runner.extract.llm import LLMExtractor
from runner.llm.breaker import CircuitBreaker
from runner.llm.client import build_client
from runner.llm.config import LLMConfig
from runner.llm.fake import FakeLLM
from server.settings import Settings

BENCH_NAME = "pipeline"
TARGET_PROMPT_PER_CONTENT = 1.15
TARGET_OVERHEAD_SHARE = 0.05
_CLOCKS = ("started", "finished")
_MAP_TOOLS = (
    "emit_chunk_summary",
    "emit_chunk_summaries",
)  # one chunk, several chunks  # perf_counter readings: meaningless outside this process


def default_chunk_tokens() -> int:
    return int(Settings.model_fields["digestd_chunk_tokens"].default)


def default_chunks_per_request() -> int:
    return int(Settings.model_fields["digestd_chunks_per_request"].default)


class TimedTransport(httpx.AsyncBaseTransport):
    """The fake endpoint in-process, timing itself so its cost can be taken out."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.seconds = 0.0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        started = time.perf_counter()
        response = await self.inner.handle_async_request(request)
        self.seconds += time.perf_counter() - started
        return response


def instant_transport() -> TimedTransport:
    return TimedTransport(FakeLLM(ScriptedModel().respond).transport())


def union_seconds(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Total length of the union of `intervals`, clipped to [lo, hi]."""
    total, end = 0.0, lo
    for start, stop in sorted(intervals):
        start, stop = max(start, end), min(stop, hi)
        if stop > start:
            total += stop - start
            end = stop
    return total


def idle_spans(intervals: list[tuple[float, float, str]], lo: float, hi: float) -> dict[str, float]:
    """Where the time with no request at the model went, seconds: before the first request
    arrived (`before_map`: cutting, the first prompts), in gaps while the map ran
    (`during_map`), from the last map answer to the first reduce request (`map_to_reduce`:
    the last chunks' validation, the reduce's planning), in gaps between reduce calls
    (`during_reduce`) and after the last answer (`after_reduce`: the digest's validation)."""
    spans = dict.fromkeys(
        ("before_map", "during_map", "map_to_reduce", "during_reduce", "after_reduce"), 0.0
    )
    maps = [(a, b) for a, b, tool in intervals if tool in _MAP_TOOLS]
    reduces = [(a, b) for a, b, tool in intervals if tool not in _MAP_TOOLS]
    map_end = max((b for _, b in maps), default=lo)
    covered = lo
    for start, stop, _tool in sorted(intervals):
        if start > covered:
            gap_end = min(start, hi)
            if covered == lo:
                spans["before_map"] += gap_end - covered
            elif covered < map_end:
                spans["during_map"] += gap_end - covered
            elif reduces and start <= min(a for a, _ in reduces):
                spans["map_to_reduce"] += gap_end - covered
            else:
                spans["during_reduce"] += gap_end - covered
        covered = max(covered, stop)
    spans["after_reduce"] = max(0.0, hi - covered)
    return {name: round(seconds, 3) for name, seconds in spans.items()}


def stages(intervals: list[tuple[float, float, str]]) -> list[int]:
    """Calls per dependent stage: all map calls, then each reduce level (reduce calls that
    overlap in time belong to one level; a level starts after the previous one ended)."""
    maps = sum(1 for _, _, tool in intervals if tool in _MAP_TOOLS)
    levels: list[int] = []
    level_end = -math.inf
    for start, stop, _tool in sorted(i for i in intervals if i[2] not in _MAP_TOOLS):
        if start >= level_end:
            levels.append(0)
        levels[-1] += 1
        level_end = max(level_end, stop) if levels[-1] > 1 else stop
    return [maps, *levels]


def make_extractor(config: LLMConfig, http_client: httpx.AsyncClient | None) -> LLMExtractor:
    return LLMExtractor(
        config,
        client=build_client(config, http_client=http_client),
        breaker=CircuitBreaker("bench"),
    )


async def digest(
    window: Window, extractor: LLMExtractor, concurrency: int, chunk_tokens: int
) -> dict[str, Any]:
    # As the worker does: the configured size, capped by what a map request can carry.
    chunk_tokens = min(chunk_tokens, extractor.max_chunk_tokens())
    cpu_started = time.process_time()  # every thread of this process: the runner's CPU
    started = time.perf_counter()
    result = await run_pipeline(
        window, extractor, chunk_tokens=chunk_tokens, concurrency=concurrency
    )
    finished = time.perf_counter()
    cpu_seconds = time.process_time() - cpu_started
    stats = job_stats(result, extractor, len(window.messages))
    usage = extractor.usage
    content = stats["content_tokens"]
    return {
        "started": started,
        "finished": finished,
        "wall_seconds": finished - started,
        "cpu_seconds": round(cpu_seconds, 3),
        "load_average": [round(load, 2) for load in os.getloadavg()],
        "chunk_tokens": chunk_tokens,
        "chunks_per_request": extractor.chunks_per_request(),
        "chunks": stats["chunks"],
        "chunks_failed": stats["chunks_failed"],
        "llm_calls": stats["llm_calls"],
        "prompt_tokens": stats["prompt_tokens"],
        "cached_tokens": stats["cached_tokens"],
        "content_tokens": content,
        "prompt_per_content": stats["prompt_to_content_ratio"],
        "uncached_prompt_per_content": round(
            (usage.prompt_tokens - usage.cached_tokens) / content, 3
        ),
        "items_rejected": stats["items_rejected"],
        "warnings": sorted({w.code for w in extractor.warnings}),
        "digest_knowledge_items": len(result.digest.knowledge_items),
    }


async def run_instant(
    window: Window, concurrency: int, chunk_tokens: int, per_request: int
) -> dict[str, Any]:
    model = instant_transport()
    config = LLMConfig(
        base_url="http://llm.bench/v1",
        api_key="bench",
        concurrency=concurrency,
        chunks_per_request=per_request,
    )
    client = httpx.AsyncClient(transport=model)
    extractor = make_extractor(config, client)
    try:
        figures = await digest(window, extractor, concurrency, chunk_tokens)
    finally:
        await client.aclose()
    runner = figures["wall_seconds"] - model.seconds
    figures.update(
        fake_model_seconds=round(model.seconds, 3),
        runner_seconds=round(runner, 3),
        runner_ms_per_call=round(1000 * runner / max(1, figures["llm_calls"]), 2),
        runner_us_per_message=round(1e6 * runner / len(window.messages), 1),
    )
    return figures


async def run_server(
    window: Window,
    base_url: str,
    concurrency: int,
    delay: float,
    chunk_tokens: int,
    per_request: int,
) -> dict[str, Any]:
    config = LLMConfig(
        base_url=base_url,
        api_key="bench",
        concurrency=concurrency,
        chunks_per_request=per_request,
    )
    async with httpx.AsyncClient() as control:
        await control.post(base_url.replace("/v1", "/fake/reset"))
        extractor = make_extractor(config, None)  # the production HTTP client
        try:
            figures = await digest(window, extractor, concurrency, chunk_tokens)
        finally:
            await extractor.client.close()
        raw = (await control.get(base_url.replace("/v1", "/fake/exchanges"))).json()
    intervals = [(float(e["received"]), float(e["answered"]), str(e["tool"])) for e in raw]
    lo, hi = figures["started"], figures["finished"]
    busy = union_seconds([(a, b) for a, b, _ in intervals], lo, hi)
    wall = figures["wall_seconds"]
    per_stage = stages(intervals)
    # The server takes `delay` per chunk summary: a map request carries up to `per_request`.
    map_delay = delay * figures["chunks_per_request"]
    ideal = sum(
        math.ceil(calls / concurrency) * (map_delay if stage == 0 else delay)
        for stage, calls in enumerate(per_stage)
        if calls
    )
    latencies = sorted(b - a for a, b, _ in intervals)
    figures.update(
        map_calls=per_stage[0],
        reduce_calls_per_level=per_stage[1:],
        model_busy_seconds=round(busy, 3),
        overhead_seconds=round(wall - busy, 3),
        overhead_share=round((wall - busy) / wall, 4),
        overhead_spans=idle_spans(intervals, lo, hi),
        ideal_seconds=round(ideal, 3),
        slack_share=round(1 - ideal / wall, 4),
        server_latency_p50_ms=round(1000 * latencies[len(latencies) // 2], 1),
        server_latency_max_ms=round(1000 * latencies[-1], 1),
        mean_in_flight=round(sum(b - a for a, b, _ in intervals) / wall, 2),
    )
    return figures


def start_fake_server(delay: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, str(_BENCH / "_pipeline_fake_llm.py"), "--delay", str(delay)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="~2,000 messages, one run")
    parser.add_argument("--messages", type=int, default=None, help="channel size (100,000)")
    parser.add_argument("--delay", type=float, default=0.2, help="fake server's answer delay")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=None, help="runs of each mode (3)")
    parser.add_argument(
        "--chunk-tokens",
        type=int,
        default=default_chunk_tokens(),
        help="chunk budget (default: DIGESTD_CHUNK_TOKENS' default)",
    )
    parser.add_argument(
        "--chunks-per-request",
        type=int,
        default=default_chunks_per_request(),
        help="chunks one map request carries (default: DIGESTD_CHUNKS_PER_REQUEST's default)",
    )
    parser.add_argument(
        "--mode",
        choices=("both", "instant", "server"),
        default="both",
        help="which runs to make (both: (a) and (b), alternating)",
    )
    parser.add_argument("--profile", action="store_true", help="cProfile one extra instant run")
    args = parser.parse_args()
    count = args.messages or (2_000 if args.quick else 100_000)
    repeats = args.repeats or (1 if args.quick else 3)

    window = generated_window(count)
    started = time.perf_counter()
    chunks = chunk_messages(list(window.messages), args.chunk_tokens)
    chunking = time.perf_counter() - started
    emit(
        BENCH_NAME,
        kind="setup",
        messages=count,
        repeats=repeats,
        quick=args.quick,
        concurrency=args.concurrency,
        delay_seconds=args.delay,
        started=utc_now(),
        chunk_tokens=args.chunk_tokens,
        chunks_per_request=args.chunks_per_request,
        database="none (run_pipeline on plain data)",
        chunks=len(chunks),
        chunking_seconds=round(chunking, 3),
        **machine_details(),
    )

    process, base_url = start_fake_server(args.delay)
    results: dict[str, list[dict[str, Any]]] = {"instant": [], "server": []}
    try:
        for run in range(repeats):
            if args.mode != "server":
                instant = asyncio.run(
                    run_instant(
                        window, args.concurrency, args.chunk_tokens, args.chunks_per_request
                    )
                )
                results["instant"].append(instant)
                emit(
                    BENCH_NAME,
                    kind="run",
                    mode="instant",
                    run=run,
                    **{k: v for k, v in instant.items() if k not in _CLOCKS},
                )
            if args.mode == "instant":
                continue
            served = asyncio.run(
                run_server(
                    window,
                    base_url,
                    args.concurrency,
                    args.delay,
                    args.chunk_tokens,
                    args.chunks_per_request,
                )
            )
            results["server"].append(served)
            emit(
                BENCH_NAME,
                kind="run",
                mode="server",
                run=run,
                **{k: v for k, v in served.items() if k not in _CLOCKS},
            )
    finally:
        process.terminate()
        process.wait(timeout=10)

    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        profiled = asyncio.run(
            run_instant(window, args.concurrency, args.chunk_tokens, args.chunks_per_request)
        )
        profiler.disable()
        emit(
            BENCH_NAME,
            kind="profile",
            mode="instant",
            wall_seconds=round(profiled["wall_seconds"], 3),
            note="cProfile slows Python code ~1.5-2x; read the shares, not the seconds",
            top_by_own_time=top_functions(profiler, limit=25),
        )

    instant_runs, server_runs = results["instant"], results["server"]
    summary: dict[str, Any] = {"messages": count}
    if instant_runs:
        summary.update(
            llm_calls=instant_runs[0]["llm_calls"],
            chunks=instant_runs[0]["chunks"],
            instant_wall_seconds=spread([r["wall_seconds"] for r in instant_runs]),
            instant_runner_seconds=spread([r["runner_seconds"] for r in instant_runs]),
        )
    if server_runs:
        best_served = min(server_runs, key=lambda r: r["wall_seconds"])
        ratio = server_runs[0]["prompt_per_content"]
        summary.update(
            llm_calls=server_runs[0]["llm_calls"],
            chunks=server_runs[0]["chunks"],
            server_wall_seconds=spread([r["wall_seconds"] for r in server_runs]),
            server_cpu_seconds=spread([r["cpu_seconds"] for r in server_runs]),
            server_ideal_seconds=best_served["ideal_seconds"],
            # Same run, same calls: how much of the 200 ms-server wall time the runner adds.
            wall_ratio_server_vs_ideal=round(
                best_served["wall_seconds"] / best_served["ideal_seconds"], 3
            ),
            overhead_share=spread([r["overhead_share"] for r in server_runs]),
            slack_share=spread([r["slack_share"] for r in server_runs]),
            prompt_per_content=ratio,
            uncached_prompt_per_content=server_runs[0]["uncached_prompt_per_content"],
            target_prompt_per_content_met=ratio is not None and ratio <= TARGET_PROMPT_PER_CONTENT,
            target_overhead_met=min(r["overhead_share"] for r in server_runs)
            <= TARGET_OVERHEAD_SHARE,
        )
    emit(BENCH_NAME, kind="summary", **summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
