"""CPU-bound extraction runs off the event loop (runner/core/offload.py): the offline digest of a
big real window leaves the loop answering (its thread never works long between two ticks of a
ticker), and the result is identical to running every step on the loop."""

from __future__ import annotations

import asyncio
import gc
import re
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from runner.core import offload
from runner.core.window import Window
from runner.digests.pipeline import PipelineResult
from tests.support.offline import DATA, parse_irc, run_offline, window_of

_IRC_LINE = re.compile(r"^\[(\d\d):(\d\d)\] <([^>]+)> (.*)$")


def big_irc_window() -> Window:
    """Every Ubuntu IRC log of the disentanglement set, one after the other (about 10,000
    real messages), as one window."""
    folder = DATA / "chat" / "ubuntu_irc_disentanglement" / "dev"
    files = sorted(folder.glob("*.raw.txt")) if folder.exists() else []
    if not files:
        pytest.skip(f"real data not available: {folder}")
    rows: list[tuple[str, datetime, str]] = []
    ts = datetime(2010, 1, 1, tzinfo=UTC)
    for path in files:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            match = _IRC_LINE.match(line)
            if match:
                ts += timedelta(seconds=7)
                rows.append((match[3], ts, match[4]))
    return window_of("ubuntu", rows)


@pytest.fixture
async def in_process_pool() -> AsyncIterator[None]:
    offload.configure(2)
    yield
    offload.set_inline(False)
    offload.shutdown()


def comparable(result: PipelineResult) -> object:
    return (
        result.digest.model_dump(mode="json"),
        [r.as_json() for r in result.map_rejections],
        [r.as_json() for r in result.validation.rejections],
        result.validation.output_flags,
        result.chunk_count,
        result.failed_chunks,
    )


async def test_offloaded_digest_is_identical_to_the_in_loop_one(in_process_pool: None) -> None:
    path = DATA / "chat" / "ubuntu_irc" / "2010-08-17_18.raw.txt"
    if not path.exists():
        pytest.skip(f"real data not available: {path}")
    big = big_irc_window()
    for window in (parse_irc(path), Window(channel_name="ubuntu", messages=big.messages[:3000])):
        offload.set_inline(True)
        in_loop = await run_offline(window)
        offload.set_inline(False)
        offloaded = await run_offline(window)
        assert comparable(offloaded) == comparable(in_loop)
        assert in_loop.chunk_count > 1 and not in_loop.failed_chunks


async def test_the_event_loop_keeps_answering_during_a_big_offline_digest(
    in_process_pool: None,
) -> None:
    window = big_irc_window()
    assert len(window.messages) > 5000
    await run_offline(Window(channel_name="warm", messages=window.messages[:50]))  # pool started
    # What blocks the loop is work on its thread: between two ticks, the CPU time of this thread
    # (time.thread_time) is how long the loop was kept from answering by work of its own. Unlike
    # the wall time between ticks, it does not grow while other processes hold the cores.
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.thread_time()
        while not done.is_set():
            await asyncio.sleep(0.01)
            now = time.thread_time()
            gaps.append(now - last)
            last = now

    # What is measured is the digest's own work on the loop, not a full garbage collection of
    # everything a long test session has built before this test (one took 2 s in a whole run):
    # those objects are moved out of the collector's reach for the measurement.
    gc.collect()
    gc.freeze()
    ticking = asyncio.create_task(ticker())
    started = time.perf_counter()
    result = await run_offline(window)
    elapsed = time.perf_counter() - started
    done.set()
    await ticking
    gc.unfreeze()
    assert result.chunk_count > 10
    # Before: the loop was blocked for whole chunks, the reduce and validation (seconds of CPU
    # at a time on this window). Now the loop's thread works a few milliseconds between ticks.
    assert max(gaps) < 0.25, (
        f"loop thread busy for {max(gaps):.2f} s of CPU between two ticks "
        f"(digest took {elapsed:.1f} s)"
    )
