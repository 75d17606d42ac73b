"""The process's job events: ONE connection LISTENing on `digestd_job_events` (db/jobs.py), fanned
out to the jobProgress subscriptions watching each job id.

A connection per subscriber would cost the database a backend per open browser tab; one per
process costs one. The connection opens with the first watch and is reopened with capped,
jittered backoff whenever the database drops it (a restart, pg_terminate_backend, a dead socket
found by a periodic probe). While it is down no event can arrive, so every watch falls back to
re-reading its job each `fallback_seconds`; when it is lost and again when it is back, every
watch is woken to re-read at once, so a change made in between is never missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import asyncpg

from db.engine import connect
from db.jobs import JOB_EVENTS_CHANNEL
from db.migrate import database_version
from runner.supervision import Backoff, describe_error, wait_any
from schema.ids import canonical_id

logger = logging.getLogger(__name__)

# How often a watch re-reads its job while the hub cannot listen.
FALLBACK_SECONDS = 3.0
# How long the LISTEN connection may stay silent before it is probed: a socket that died without
# a word (a NAT or a firewall dropping it) ends no connection by itself.
PROBE_SECONDS = 30.0


class JobWatchHandle:
    """One subscriber's view of the events of one job: a flag the hub sets, which `changed`
    waits for and clears, so a burst of events between two reads costs one read."""

    def __init__(self, hub: JobEventHub) -> None:
        self._hub = hub
        self._signal = asyncio.Event()

    def signal(self) -> None:
        self._signal.set()

    async def changed(self) -> None:
        timeout = None if self._hub.listening else self._hub.fallback_seconds
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancellation that
        # arrives in the tick the signal is set, and the subscription, cancelled by its closed
        # socket, then waited for ever (and a server's shutdown with it).
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._signal.wait()
        self._signal.clear()


class JobEventHub:
    """Watches of job ids, fed by one LISTEN connection (started by the first watch)."""

    def __init__(
        self,
        database_url: str,
        *,
        fallback_seconds: float = FALLBACK_SECONDS,
        probe_seconds: float = PROBE_SECONDS,
        backoff: Backoff | None = None,
    ) -> None:
        self._url = database_url
        self.fallback_seconds = fallback_seconds
        self._probe_seconds = probe_seconds
        self._backoff = backoff or Backoff(0.5, 30.0)
        self._watches: dict[int, set[JobWatchHandle]] = {}
        self._connection: asyncpg.Connection | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = asyncio.Event()
        self.connections_opened = 0

    @property
    def listening(self) -> bool:
        return self._connection is not None and not self._connection.is_closed()

    @property
    def listener_pid(self) -> int | None:
        """The database backend of the LISTEN connection (pg_stat_activity.pid), if open."""
        if self._connection is None or self._connection.is_closed():
            return None
        pid: int = self._connection.get_server_pid()
        return pid

    @property
    def watched_jobs(self) -> int:
        return len(self._watches)

    @contextlib.asynccontextmanager
    async def watch(self, job_id: int) -> AsyncIterator[JobWatchHandle]:
        handle = JobWatchHandle(self)
        self._watches.setdefault(job_id, set()).add(handle)
        if self._task is None and not self._closed.is_set():
            self._task = asyncio.create_task(self._listen_forever(), name="job-events")
        try:
            yield handle
        finally:
            handles = self._watches.get(job_id, set())
            handles.discard(handle)
            if not handles:
                self._watches.pop(job_id, None)

    async def close(self) -> None:
        self._closed.set()
        self._wake_all()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._drop_connection()

    def _wake_all(self) -> None:
        for handles in self._watches.values():
            for handle in handles:
                handle.signal()

    def _on_event(self, connection: object, pid: int, channel: str, payload: str) -> None:
        job_id = canonical_id(payload)
        if job_id is None:
            return
        for handle in self._watches.get(job_id, ()):
            handle.signal()

    async def _listen_forever(self) -> None:
        while not self._closed.is_set():
            lost = asyncio.Event()
            connection: asyncpg.Connection | None = None
            try:
                connection = await connect(self._url, timeout=5.0)
                connection.add_termination_listener(lambda *_: lost.set())
                await connection.add_listener(JOB_EVENTS_CHANNEL, self._on_event)
            except Exception as error:  # noqa: BLE001 - the watches poll meanwhile
                if connection is not None:
                    connection.terminate()
                delay = self._backoff.next_delay()
                logger.warning(
                    "job events: LISTEN unavailable (%s); subscribers re-read every %ss, "
                    "retrying in %.1fs",
                    describe_error(error), self.fallback_seconds, delay,
                )  # fmt: skip
                await wait_any((self._closed,), delay)
                continue
            # Listening only now that LISTEN is in place: until then the watches keep polling.
            self._connection = connection
            self.connections_opened += 1
            self._backoff.reset()
            self._wake_all()  # whatever changed before LISTEN began is read now
            await self._until_lost(connection, lost)
            await self._drop_connection()
            if not self._closed.is_set():
                logger.warning("job events: LISTEN connection lost; reconnecting")
                self._wake_all()  # to their fallback reads until the connection is back

    async def _until_lost(self, connection: asyncpg.Connection, lost: asyncio.Event) -> None:
        while not self._closed.is_set() and not lost.is_set():
            await wait_any((lost, self._closed), self._probe_seconds)
            if lost.is_set() or self._closed.is_set():
                return
            try:
                async with asyncio.timeout(5.0):
                    await database_version(connection)
            except Exception as error:  # noqa: BLE001 - any failure means a new connection
                logger.warning("job events: LISTEN connection probe failed (%s)", describe_error(error))
                return

    async def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None and not connection.is_closed():
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2):
                    await connection.close()
            if not connection.is_closed():
                connection.terminate()

