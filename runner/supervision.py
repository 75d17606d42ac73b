"""What keeps worker loops alive: capped jittered backoff, a LISTEN connection that reconnects,
and a supervisor that restarts a loop that died.

A database that restarts (a backend killed: the postmaster restarts every process and refuses
connections for a moment with `CannotConnectNowError`), a dropped socket or any other error must
cost a worker a retry, never its life. Log lines name the error class only: asyncpg messages can
quote row values, and message content never reaches the logs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import asyncpg

from db.engine import connect
from db.jobs import JOBS_CHANNEL

logger = logging.getLogger(__name__)


def describe_error(error: BaseException) -> str:
    """The error's class (and SQLSTATE when it has one), never its message."""
    sqlstate = getattr(error, "sqlstate", None)
    return f"{type(error).__name__}" + (f" [{sqlstate}]" if sqlstate else "")


class Backoff:
    """Capped exponential delays with full jitter, so restarted workers do not reconnect in step."""

    def __init__(self, base_seconds: float, max_seconds: float) -> None:
        self._base = base_seconds
        self._max = max_seconds
        self._failures = 0

    def next_delay(self) -> float:
        ceiling = min(self._max, self._base * (2**self._failures))
        self._failures = min(self._failures + 1, 32)
        return random.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        self._failures = 0


async def wait_any(
    events: Iterable[asyncio.Event],
    timeout: float | None,
    *,
    task: asyncio.Future[Any] | None = None,
) -> None:
    """Wait until one of `events` is set, `task` is done, or `timeout` passes (`task` is never
    cancelled here)."""
    waiters = [asyncio.ensure_future(event.wait()) for event in events]
    pending: set[asyncio.Future[Any]] = set(waiters)
    if task is not None:
        pending.add(task)
    try:
        if pending:
            await asyncio.wait(pending, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        elif timeout is not None:
            await asyncio.sleep(timeout)
    finally:
        for waiter in waiters:
            waiter.cancel()


class JobListener:
    """LISTEN `channel` (digestd_jobs for the job loop, digestd_deliveries for the delivery loop)
    on a dedicated connection that is re-opened when it is lost; a notification sets `wake`.
    While it is down the loop polls, so a lost notification only costs latency."""

    def __init__(
        self,
        database_url: str,
        wake: asyncio.Event,
        poll_seconds: float,
        channel: str = JOBS_CHANNEL,
    ) -> None:
        self._url = database_url
        self._wake = wake
        self._channel = channel
        self._poll_seconds = poll_seconds
        self._connection: asyncpg.Connection | None = None
        self._retry_at = 0.0
        self._backoff = Backoff(1.0, 60.0)

    async def ensure(self) -> None:
        """(Re)connect if the connection is missing or closed and a retry is due."""
        if self._connection is not None:
            if not self._connection.is_closed():
                return
            logger.warning("LISTEN connection lost; reconnecting (polling meanwhile)")
            self._connection = None
        loop = asyncio.get_running_loop()
        if loop.time() < self._retry_at:
            return
        connection: asyncpg.Connection | None = None
        try:
            connection = await connect(self._url, timeout=5.0)
            await connection.add_listener(self._channel, lambda *_: self._wake.set())
            # Losing the connection wakes the worker, which reconnects at once instead of
            # after a whole poll interval.
            connection.add_termination_listener(lambda *_: self._wake.set())
        except Exception as error:  # noqa: BLE001 - polling covers for it
            delay = self._backoff.next_delay()
            self._retry_at = loop.time() + delay
            logger.warning(
                "LISTEN unavailable (%s); polling every %ss, retrying in %.1fs",
                describe_error(error),
                self._poll_seconds,
                delay,
            )
            if connection is not None:
                connection.terminate()
            return
        self._backoff.reset()
        self._connection = connection

    def wait_limit(self, poll_seconds: float) -> float:
        """How long the worker may sleep: the poll interval, or less when a reconnect is due."""
        if self._connection is not None and not self._connection.is_closed():
            return poll_seconds
        due = self._retry_at - asyncio.get_running_loop().time()
        return max(0.0, min(poll_seconds, due))

    async def close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2):
                    await self._connection.close()
            self._connection = None


class WorkerLoop(Protocol):
    async def run(self, stop: asyncio.Event) -> None: ...


class RunnerSupervisor:
    """Runs `count` worker loops as tasks, plus one of each loop in `also` (the schedule tick),
    restarts any that ends or dies before `stop()`, and says whether all of them are running
    (for `/readyz`)."""

    def __init__(
        self,
        new_worker: Callable[[], WorkerLoop],
        count: int,
        *,
        also: Sequence[Callable[[], WorkerLoop]] = (),
        restart_base_seconds: float = 1.0,
        restart_max_seconds: float = 30.0,
    ) -> None:
        self._factories = [new_worker] * count + list(also)
        self._restart = (restart_base_seconds, restart_max_seconds)
        self._stop = asyncio.Event()
        self._alive = [False] * len(self._factories)
        self._tasks: list[asyncio.Task[None]] = []
        self.restarts = 0

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._supervise(i)) for i in range(len(self._factories))]

    @property
    def running(self) -> bool:
        """True when every loop is running (trivially so with none configured)."""
        return all(self._alive)

    async def _supervise(self, index: int) -> None:
        backoff = Backoff(*self._restart)
        while not self._stop.is_set():
            try:
                worker = self._factories[index]()
                self._alive[index] = True
                await worker.run(self._stop)
            except Exception as error:
                logger.error("runner loop %s died (%s); restarting", index, describe_error(error))
                logger.debug("runner loop %s died", index, exc_info=True)
            finally:
                self._alive[index] = False
            if self._stop.is_set():
                return
            self.restarts += 1
            await wait_any((self._stop,), backoff.next_delay())

    async def stop(self, timeout: float) -> None:
        """Ask every loop to stop (running jobs checkpoint and are released), wait up to
        `timeout`, then cancel what is left."""
        self._stop.set()
        if not self._tasks:
            return
        _, pending = await asyncio.wait(self._tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
