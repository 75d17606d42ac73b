"""Scale benchmark: the offline digest of generated 10,000- and 100,000-message channels, to
show whether the per-message cost stays flat (linear) as the window grows.

    /tmp/venv/bin/python bench/scale.py [--quick] [--sizes 10000,100000] [--repeats 1]
                                        [--baseline PATH] [--profile] [--stages]
    /tmp/venv/bin/python bench/scale.py --end-to-end [--quick] [--sizes 10000,100000,1000000]
                                        [--workers 2] [--cap N] [--database-url URL]

`--end-to-end` (bench/_end_to_end.py) measures the whole path instead: a generated channel
written as JSONL, `digestd import`, then `digestd worker` processes until the channel's backlog
is covered (cut into coverage slices over the window cap); import, digest and total seconds,
msgs/s, each worker's and its CPU pool's peak RSS, exactly-once coverage, and whether the total
is under 10 minutes and the worker under 600 MB. The rest of this text is the default mode.

Each size runs in its own child process (so each has its own peak memory) with
`runner.digests.pipeline.run_pipeline` and the `OfflineExtractor` exactly as the worker's channel job
calls them (`runner/digests/job.py`: the default DIGESTD_CHUNK_TOKENS, the map concurrency of
server/runtime.py's worker_config, the CPU pool of runner/core/offload.py at its default size), on
plain data: the window the worker would load from the database is built in memory from
bench/_support.py's deterministic generator, and neither the window load nor the store is
timed (bench/coverage.py measures those). The clock covers threading (the disentanglement
model, `runner.conversations.threads.thread_window`, where the code has it), chunking, map, reduce and
validation; `threading_seconds` is the threading part.

`--stages` adds, per code root, one more child at the largest size run inline (no CPU pool:
`runner.core.offload.set_inline`, so every step runs in this process, one after the other) that
reports the CPU seconds (`time.process_time`) of each step: threading (the link model and the
rest: titles, ordering), chunking, the map (the extractor's rules), the validation of each
chunk's result, the reduce and the final validation; `other` is what is left (the pipeline's
own bookkeeping). It names where a message's CPU goes, which the pooled run's cProfile cannot
see (the map runs in other processes). With `--profile`, that child is also profiled.

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
from collections.abc import Callable, Iterator
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


class _StageClock:
    """CPU seconds per pipeline step, by wrapping the step functions where the pipeline and the
    offline extractor look them up. Meaningful inline only: pooled steps run elsewhere."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def _add(self, name: str, started: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + time.process_time() - started

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                self._add(name, started)

        return timed

    def wrap_iterator(
        self, name: str, function: Callable[..., Iterator[Any]]
    ) -> Callable[..., Iterator[Any]]:
        def timed(*args: Any, **kwargs: Any) -> Iterator[Any]:
            iterator = function(*args, **kwargs)
            while True:
                started = time.process_time()
                try:
                    item = next(iterator)
                except StopIteration:
                    self._add(name, started)
                    return
                self._add(name, started)
                yield item

        return timed

    def instrument(self) -> None:
        """Time chunking, the map, each validation and the reduce where `run_pipeline` and the
        offline extractor call them (module globals, looked up at call time)."""
        from runner.digests import pipeline
        from runner.extract import offline

        pipeline.iter_chunks = self.wrap_iterator("chunking", pipeline.iter_chunks)  # type: ignore[assignment]
        validate = pipeline.validate_output

        def validate_output(*args: Any, **kwargs: Any) -> Any:
            name = "validate_digest" if "channel_name" in kwargs else "validate_chunks"
            return self.wrap(name, validate)(*args, **kwargs)

        pipeline.validate_output = validate_output  # type: ignore[assignment]
        offline.summarize_chunk = self.wrap("map", offline.summarize_chunk)  # type: ignore[assignment]
        offline.build_digest = self.wrap("reduce", offline.build_digest)  # type: ignore[assignment]


def child(count: int, code_root: Path, profile: bool, stages: bool = False) -> dict[str, Any]:
    """One digest of a `count`-message channel with the code under `code_root`; `stages`: inline,
    with the CPU seconds of each step (see the module docstring)."""
    sys.path.insert(0, str(_BENCH.parent))
    from bench._support import generated_window, top_functions  # this checkout's, always

    sys.path.insert(0, str(code_root))  # runner, server: the code under test
    from runner.core import offload
    from runner.digests.pipeline import run_pipeline
    from runner.extract import offline
    from server.settings import Settings

    chunk_tokens = int(Settings.model_fields["digestd_chunk_tokens"].default)
    window = generated_window(count)
    clock = _StageClock()
    if stages:
        offload.set_inline(True)
        clock.instrument()
    profiler = cProfile.Profile() if profile else None
    cpu_before = _cpu_seconds()  # the pool starts with the run: only this process so far
    started = time.perf_counter()
    if profiler:
        profiler.enable()
    # As server/runtime.py's worker_config: the offline map runs one chunk per pool process
    # (code before that change mapped one chunk at a time).
    concurrency = getattr(offline, "offline_map_concurrency", lambda: 1)()
    # The channel job threads the window first (runner/conversations/store.py) and digests it
    # conversation by conversation; code from before conversations has no threading step.
    threading_started = time.perf_counter()
    threading_cpu_started = time.process_time()
    try:
        from runner.conversations.disentangle import link_records
        from runner.conversations.threads import thread_window
    except ImportError:
        thread_window = None
    if thread_window is not None:
        window = thread_window(window, clock.wrap("threading_link", link_records))
    threading_seconds = time.perf_counter() - threading_started
    threading_cpu = time.process_time() - threading_cpu_started
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
        "inline": stages,
        "chunk_tokens": chunk_tokens,
        "chunks": result.chunk_count,
        "map_concurrency": concurrency,
        "failed_chunks": len(result.failed_chunks),
        "seconds": round(seconds, 3),
        "threading_seconds": round(threading_seconds, 3),
        "msgs_per_s": round(count / seconds, 1),
        "us_per_message": round(1e6 * seconds / count, 1),
        "cpu_seconds": round(cpu, 3),
        "cpu_us_per_message": round(1e6 * cpu / count, 1),
        "peak_rss_mb": _peak_rss_mb(),
        "pool_peak_rss_mb": pool_peak,
        "pool_processes": 0 if stages else offload.pool_size(),
        "digest_sha256": hashlib.sha256(digest.encode("utf-8")).hexdigest()[:16],
        "knowledge_items": len(result.digest.knowledge_items),
        "topics": len(result.digest.topics),
    }
    if stages:
        steps = dict(clock.seconds)
        link_cpu = steps.pop("threading_link", 0.0)
        steps = {"threading_link": link_cpu, "threading_other": threading_cpu - link_cpu, **steps}
        steps["other"] = cpu - sum(steps.values())
        figures["stage_cpu_seconds"] = {name: round(value, 3) for name, value in steps.items()}
    if profiler:
        figures["top_by_own_time"] = top_functions(profiler, limit=30 if stages else 20)
    return figures


def run_child(count: int, code_root: Path, profile: bool, stages: bool = False) -> dict[str, Any]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        str(count),
        "--code-root",
        str(code_root),
    ] + (["--profile"] if profile else [])
    command += ["--stages"] if stages else []
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
    parser.add_argument(
        "--stages",
        action="store_true",
        help="CPU seconds per step at the largest size (inline run)",
    )
    parser.add_argument(
        "--end-to-end",
        action="store_true",
        help="import a JSONL channel and digest it with `digestd worker` processes "
        "(sizes 10000,100000,1000000; --quick: 2000 with a cap of 500)",
    )
    parser.add_argument("--workers", type=int, default=2, help="--end-to-end: worker processes")
    parser.add_argument(
        "--cap", type=int, help="--end-to-end: DIGESTD_MAX_WINDOW_MESSAGES (default: the setting's)"
    )
    parser.add_argument(
        "--database-url",
        help="--end-to-end: a server to create (and drop) each size's database on "
        "(default: an embedded one)",
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--code-root", type=Path, default=_BENCH.parent, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        figures = child(args.child, args.code_root.resolve(), args.profile, args.stages)
        print(json.dumps(figures), flush=True)
        return 0

    sys.path.insert(0, str(_BENCH.parent))
    from bench._support import emit, machine_details, spread, utc_now

    if args.end_to_end:
        from bench import _end_to_end

        default = "2000" if args.quick else "10000,100000,1000000"
        cap = args.cap if args.cap is not None else (500 if args.quick else None)
        return _end_to_end.main(
            sorted(int(size) for size in (args.sizes or default).split(",")),
            args.workers,
            cap,
            args.database_url,
            args.quick,
        )

    default = "1000,5000" if args.quick else "10000,100000"
    sizes = sorted(int(size) for size in (args.sizes or default).split(","))
    roots = [("current", _BENCH.parent)]
    if args.baseline:
        roots.append(("baseline", args.baseline.resolve()))
    emit(
        BENCH_NAME,
        kind="setup",
        sizes=sizes,
        repeats=args.repeats,
        quick=args.quick,
        roots={label: str(root) for label, root in roots},
        started=utc_now(),
        database="none (run_pipeline on plain data, as the worker calls it)",
        **machine_details(),
    )
    for label, root in roots:
        per_size: dict[int, list[dict[str, Any]]] = {}
        for size in sizes:
            for run in range(args.repeats):
                figures = run_child(size, root, profile=False)
                per_size.setdefault(size, []).append(figures)
                emit(BENCH_NAME, kind="run", code=label, run=run, **figures)
        if args.stages:
            inline = run_child(sizes[-1], root, profile=args.profile, stages=True)
            emit(
                BENCH_NAME,
                kind="stages",
                code=label,
                messages=sizes[-1],
                seconds=inline["seconds"],
                cpu_seconds=inline["cpu_seconds"],
                stage_cpu_seconds=inline["stage_cpu_seconds"],
                digest_sha256=inline["digest_sha256"],
                **({"top_by_own_time": inline["top_by_own_time"]} if args.profile else {}),
            )
        elif args.profile:
            profiled = run_child(sizes[-1], root, profile=True)
            emit(
                BENCH_NAME,
                kind="profile",
                code=label,
                messages=sizes[-1],
                note="cProfile slows Python code ~1.5-2x; read the shares, not the seconds",
                seconds=profiled["seconds"],
                top_by_own_time=profiled["top_by_own_time"],
            )
        small, large = per_size[sizes[0]], per_size[sizes[-1]]
        best_small = min(r["us_per_message"] for r in small)
        best_large = min(r["us_per_message"] for r in large)
        large_rate = max(r["msgs_per_s"] for r in large)
        emit(
            BENCH_NAME,
            kind="summary",
            code=label,
            msgs_per_s={
                size: spread([r["msgs_per_s"] for r in runs], higher_is_better=True)
                for size, runs in per_size.items()
            },
            us_per_message={
                size: min(r["us_per_message"] for r in runs) for size, runs in per_size.items()
            },
            peak_rss_mb={
                size: max(r["peak_rss_mb"] for r in runs) for size, runs in per_size.items()
            },
            pool_peak_rss_mb={
                size: max(r["pool_peak_rss_mb"] for r in runs) for size, runs in per_size.items()
            },
            cpu_us_per_message={
                size: min(r["cpu_us_per_message"] for r in runs) for size, runs in per_size.items()
            },
            per_message_ratio=round(best_large / best_small, 3),
            cpu_per_message_ratio=round(
                min(r["cpu_us_per_message"] for r in large)
                / min(r["cpu_us_per_message"] for r in small),
                3,
            ),
            deterministic=all(
                len({r["digest_sha256"] for r in runs}) == 1 for runs in per_size.values()
            ),
            target_linear_met=best_large / best_small <= TARGET_PER_MESSAGE_RATIO,
            target_rate_met=large_rate >= TARGET_MSGS_PER_S,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
