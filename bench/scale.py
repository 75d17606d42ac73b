"""Scale benchmark: the offline digest of generated 10,000- and 100,000-message channels, to
show whether the per-message cost stays flat (linear) as the window grows.

    /tmp/venv/bin/python bench/scale.py [--quick] [--sizes 10000,100000] [--repeats 1]
                                        [--baseline PATH] [--profile]

Each size runs in its own child process (so each has its own peak memory) with
`runner.pipeline.run_pipeline` and the `OfflineExtractor` exactly as the worker's channel job
calls them (`runner/jobs/channel.py`: the default DIGESTD_CHUNK_TOKENS, the map concurrency of
server/runtime.py's worker_config, the CPU pool of runner/offload.py at its default size), on
plain data: the window the worker would load from the database is built in memory from
bench/_support.py's deterministic generator, and neither the window load nor the store is
timed (bench/coverage.py measures those). The clock covers chunking, map, reduce and validation.

`--baseline PATH` runs the same children against another checkout (e.g. a `git worktree` of
main at /tmp/digestd-main) in the same run: its `runner` package is imported instead of this
one's, so old and new code are timed on the same machine minutes apart.

Figures per child: `seconds`, `msgs_per_s`, `us_per_message`, `cpu_seconds` (this process and
the pool, the figure a busy shared machine disturbs least), `peak_rss_mb` (the child's own
ru_maxrss: the worker process) and `pool_peak_rss_mb` (the largest CPU-pool process's VmHWM,
read before the pool is shut down), and `digest_sha256` (the stored digest's JSON: equal across
repeats means deterministic). The summary per code root: `per_message_ratio` = µs/message at the
largest size over the smallest (target <= 1.3: linear) and `target_rate_met` (>= 3,000 msg/s
at the largest size).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import hashlib
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]

BENCH_NAME = "scale"
TARGET_PER_MESSAGE_RATIO = 1.3
TARGET_MSGS_PER_S = 3_000


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # Linux: KiB


def _cpu_seconds() -> float:
    """CPU time of this process and its live children (the pool) so far: on a shared machine
    wall time also counts the neighbours' work, CPU time does not."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    total = usage.ru_utime + usage.ru_stime
    ticks = os.sysconf("SC_CLK_TCK")
    for process in multiprocessing.active_children():
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def _pool_peak_rss_mb() -> float:
    """The largest peak resident set (VmHWM) of this process's live children: the CPU pool."""
    peaks = [0.0]
    for process in multiprocessing.active_children():
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks.append(int(line.split()[1]) / 1024)
    return round(max(peaks), 1)


def child(count: int, code_root: Path, profile: bool) -> dict[str, Any]:
    """One digest of a `count`-message channel with the code under `code_root`."""
    sys.path.insert(0, str(_BENCH.parent))
    from bench._support import generated_window, top_functions  # this checkout's, always

    sys.path.insert(0, str(code_root))  # runner, server: the code under test
    from runner import offload
    from runner.extractors import offline
    from runner.pipeline import run_pipeline
    from server.settings import Settings

    chunk_tokens = int(Settings.model_fields["digestd_chunk_tokens"].default)
    window = generated_window(count)
    profiler = cProfile.Profile() if profile else None
    cpu_before = _cpu_seconds()  # the pool starts with the run: only this process so far
    started = time.perf_counter()
    if profiler:
        profiler.enable()
    # As server/runtime.py's worker_config: the offline map runs one chunk per pool process
    # (code before that change mapped one chunk at a time).
    concurrency = getattr(offline, "offline_map_concurrency", lambda: 1)()
    result = asyncio.run(
        run_pipeline(
            window, offline.OfflineExtractor(), chunk_tokens=chunk_tokens, concurrency=concurrency
        )
    )
    if profiler:
        profiler.disable()
    seconds = time.perf_counter() - started
    cpu = _cpu_seconds() - cpu_before
    pool_peak = _pool_peak_rss_mb()
    offload.shutdown()
    digest = result.digest.model_dump_json()
    figures: dict[str, Any] = {
        "messages": count,
        "code_root": str(code_root),
        "chunk_tokens": chunk_tokens,
        "chunks": result.chunk_count,
        "map_concurrency": concurrency,
        "failed_chunks": len(result.failed_chunks),
        "seconds": round(seconds, 3),
        "msgs_per_s": round(count / seconds, 1),
        "us_per_message": round(1e6 * seconds / count, 1),
        "cpu_seconds": round(cpu, 3),
        "cpu_us_per_message": round(1e6 * cpu / count, 1),
        "peak_rss_mb": _peak_rss_mb(),
        "pool_peak_rss_mb": pool_peak,
        "pool_processes": offload.pool_size(),
        "digest_sha256": hashlib.sha256(digest.encode("utf-8")).hexdigest()[:16],
        "knowledge_items": len(result.digest.knowledge_items),
        "topics": len(result.digest.topics),
    }
    if profiler:
        figures["top_by_own_time"] = top_functions(profiler, limit=20)
    return figures


def run_child(count: int, code_root: Path, profile: bool) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(count),
               "--code-root", str(code_root)] + (["--profile"] if profile else [])  # fmt: skip
    completed = subprocess.run(command, cwd=code_root, capture_output=True, text=True)
    if completed.returncode != 0:
        raise SystemExit(f"child {count} @ {code_root} failed:\n{completed.stderr[-3000:]}")
    return dict(json.loads(completed.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 and 5,000 messages")
    parser.add_argument("--sizes", help="comma-separated channel sizes (10000,100000)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each size")
    parser.add_argument("--baseline", type=Path, help="another checkout to time in the same run")
    parser.add_argument("--profile", action="store_true", help="cProfile the largest size")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--code-root", type=Path, default=_BENCH.parent, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.code_root.resolve(), args.profile)), flush=True)
        return 0

    sys.path.insert(0, str(_BENCH.parent))
    from bench._support import emit, machine_details, spread, utc_now

    default = "1000,5000" if args.quick else "10000,100000"
    sizes = sorted(int(size) for size in (args.sizes or default).split(","))
    roots = [("current", _BENCH.parent)]
    if args.baseline:
        roots.append(("baseline", args.baseline.resolve()))
    emit(BENCH_NAME, kind="setup", sizes=sizes, repeats=args.repeats, quick=args.quick,
         roots={label: str(root) for label, root in roots}, started=utc_now(),
         database="none (run_pipeline on plain data, as the worker calls it)",
         **machine_details())  # fmt: skip
    for label, root in roots:
        per_size: dict[int, list[dict[str, Any]]] = {}
        for size in sizes:
            for run in range(args.repeats):
                figures = run_child(size, root, profile=False)
                per_size.setdefault(size, []).append(figures)
                emit(BENCH_NAME, kind="run", code=label, run=run, **figures)
        if args.profile:
            profiled = run_child(sizes[-1], root, profile=True)
            emit(BENCH_NAME, kind="profile", code=label, messages=sizes[-1],
                 note="cProfile slows Python code ~1.5-2x; read the shares, not the seconds",
                 seconds=profiled["seconds"],
                 top_by_own_time=profiled["top_by_own_time"])  # fmt: skip
        small, large = per_size[sizes[0]], per_size[sizes[-1]]
        best_small = min(r["us_per_message"] for r in small)
        best_large = min(r["us_per_message"] for r in large)
        large_rate = max(r["msgs_per_s"] for r in large)
        emit(
            BENCH_NAME,
            kind="summary",
            code=label,
            msgs_per_s={size: spread([r["msgs_per_s"] for r in runs], higher_is_better=True)
                        for size, runs in per_size.items()},  # fmt: skip
            us_per_message={size: min(r["us_per_message"] for r in runs)
                            for size, runs in per_size.items()},  # fmt: skip
            peak_rss_mb={size: max(r["peak_rss_mb"] for r in runs)
                         for size, runs in per_size.items()},  # fmt: skip
            pool_peak_rss_mb={size: max(r["pool_peak_rss_mb"] for r in runs)
                              for size, runs in per_size.items()},  # fmt: skip
            cpu_us_per_message={size: min(r["cpu_us_per_message"] for r in runs)
                                for size, runs in per_size.items()},  # fmt: skip
            per_message_ratio=round(best_large / best_small, 3),
            cpu_per_message_ratio=round(
                min(r["cpu_us_per_message"] for r in large)
                / min(r["cpu_us_per_message"] for r in small), 3
            ),
            deterministic=all(len({r["digest_sha256"] for r in runs}) == 1
                              for runs in per_size.values()),  # fmt: skip
            target_linear_met=best_large / best_small <= TARGET_PER_MESSAGE_RATIO,
            target_rate_met=large_rate >= TARGET_MSGS_PER_S,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
