"""CPU-bound work off the event loop, so heartbeats, the API and cancellation keep answering.

Two lanes:
- `run_cpu`: the heavy, pure steps of the offline extractor (map a chunk, reduce a window) in a
  process pool, which also lets chunks use the machine's other cores. The pool is created once
  per process on first use (`spawn`: children start clean, holding no socket or lock of the
  parent) and sized by DIGESTD_EXTRACT_PROCESSES (unset = min(2, CPUs); 0 = one thread instead).
- `run_light`: shorter steps (validation, cutting the next chunk, finding personal data in a
  model request) in a thread: their inputs are big to send to a process, and a thread already
  hands the loop the GIL every few milliseconds.

The functions are pure and their inputs are plain data, so the results are identical wherever
they run. `set_inline(True)` runs both lanes on the loop, as before, for benchmarks and
comparisons only.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

Result = TypeVar("Result")

_lock = threading.Lock()
_processes: int | None = None  # None: min(2, CPUs)
_inline = False
_executor: Executor | None = None


def default_processes() -> int:
    return min(2, os.cpu_count() or 1)


def configure(processes: int | None = None) -> None:
    """Set the pool size (None: the default). An existing pool of another size is shut down;
    the next call starts the new one."""
    global _processes
    with _lock:
        changed = processes != _processes
        _processes = processes
    if changed:
        shutdown()


def set_inline(inline: bool) -> None:
    """Run both lanes on the event loop, as before this module existed: for benchmarks and
    equality checks only (it blocks the loop)."""
    global _inline
    _inline = inline


def pool_size() -> int:
    """Processes of the pool (0: a thread)."""
    return default_processes() if _processes is None else _processes


def _get_executor() -> Executor:
    global _executor
    with _lock:
        if _executor is None:
            size = pool_size()
            if size == 0:
                _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="digestd-cpu")
            else:
                _executor = ProcessPoolExecutor(
                    max_workers=size, mp_context=multiprocessing.get_context("spawn")
                )
            logger.info("CPU pool: %s", f"{size} processes" if size else "one thread")
        return _executor


async def run_cpu(function: Callable[..., Result], *args: Any) -> Result:
    """`function(*args)` in the CPU pool. A pool broken by a dead child is replaced and the
    call tried once more. Cancelling the await abandons the result; the call itself runs on."""
    if _inline:
        return function(*args)
    loop = asyncio.get_running_loop()
    call = functools.partial(function, *args)
    try:
        return await loop.run_in_executor(_get_executor(), call)
    except BrokenProcessPool:
        logger.warning("CPU pool broken (a child died); starting a new one")
        shutdown()
        return await loop.run_in_executor(_get_executor(), call)


async def run_light(function: Callable[..., Result], *args: Any, **kwargs: Any) -> Result:
    """`function(*args, **kwargs)` in a thread (inline when configured so)."""
    if _inline:
        return function(*args, **kwargs)
    return await asyncio.to_thread(function, *args, **kwargs)


def shutdown() -> None:
    """Stop the pool now: queued calls are cancelled and child processes terminated (a reduce
    of a big window could otherwise hold the process's exit for minutes)."""
    global _executor
    with _lock:
        executor, _executor = _executor, None
    if executor is None:
        return
    children = list(getattr(executor, "_processes", {}).values())  # no public API in 3.11
    executor.shutdown(wait=False, cancel_futures=True)
    for child in children:
        if child.is_alive():
            child.terminate()
