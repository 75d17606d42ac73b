"""The process's job events: ONE connection LISTENing on `digestd_job_events` (db/jobs.py), and
one read of a job per change, handed to every jobProgress subscription watching it.

A connection per subscriber would cost the database a backend per open browser tab; one per
process costs one. Likewise a read per watch would cost a thousand reads per event for a thousand
watches of one job; the hub keeps one feed per watched job, which re-reads the row when an event
for it arrives and gives the same snapshot to all its watches, so reads grow with events, not
with watches. A burst of events between two reads counts once, and reads of a job are spaced
(MIN_SPACING_SECONDS, more when many watch), so the states handed out stay bounded whatever the
rate of events and the number of watches.

The connection opens with the first watch and is reopened with capped, jittered backoff whenever
the database drops it (a restart, pg_terminate_backend, a dead socket found by a periodic probe);
the backoff starts over only once a connection has stayed up for a while, so a database that
drops each new connection at once is retried ever more slowly, never in a loop. While it is down
no event can arrive, so each feed re-reads its job every `fallback_seconds`; when it is lost and
again when it is back, every feed re-reads at once, so a change made in between is never missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import asyncpg

from db import jobs
from db.engine import connect
from db.jobs import JOB_EVENTS_CHANNEL
from db.migrate import database_version
from db.models import DigestJob
from runner.supervision import Backoff, describe_error, wait_any
from schema.resolvers.job_watch import WatchClosed
from schema.types.ids import canonical_id

logger = logging.getLogger(__name__)

# How often a feed re-reads its job while the hub cannot listen.
FALLBACK_SECONDS = 3.0
# How long the LISTEN connection may stay silent before it is probed: a socket that died without
# a word (a NAT or a firewall dropping it) ends no connection by itself.
PROBE_SECONDS = 30.0
# How long a probe may take before the connection counts as dead.
PROBE_TIMEOUT_SECONDS = 5.0
# How long a connection must stay up before a loss of it starts the backoff over.
HEALTHY_SECONDS = 10.0
# Each state handed out costs every watch of the job a GraphQL execution and a message, in the
# process's loop (the in-process workers' too). So a job's states are at least MIN_SPACING_SECONDS
# apart (a burst of events between two reads counts once), and wider apart when many watch: about
# DELIVERIES_PER_SECOND states a second in all, however many watches (a job's final state too
# comes at most one spacing late).
MIN_SPACING_SECONDS = 0.25
DELIVERIES_PER_SECOND = 200.0

JobOutcome = asyncio.Future[DigestJob | None]


class JobWatchHandle:
    """One subscriber's view of its job's feed: which snapshot it saw last, and a flag the feed
    sets when there is a newer one."""

    def __init__(self, feed: JobFeed) -> None:
        self._feed = feed
        self._seen = 0
        self._fresh = asyncio.Event()

    def notify(self) -> None:
        self._fresh.set()

    def skip_current(self) -> None:
        """Wait for the next snapshot, not the current one (a failed read a new watch must not
        inherit)."""
        self._seen = self._feed.version

    async def next_state(self) -> DigestJob | None:
        while self._feed.version == self._seen:
            # Event.wait, not wait_for: on Python 3.11 wait_for swallows a cancellation that
            # arrives in the tick the flag is set, and the subscription, cancelled by its closed
            # socket, then waited for ever (and a server's shutdown with it).
            await self._fresh.wait()
            self._fresh.clear()
        self._seen = self._feed.version
        # A done future: its result, or the read's error raised afresh for each watch.
        return await self._feed.outcome


class JobFeed:
    """The one reader of one watched job: the latest snapshot (numbered by `version`), the
    watches it goes to, and whether a re-read is due."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.watches: set[JobWatchHandle] = set()
        self.version = 0
        self.outcome: JobOutcome = asyncio.get_running_loop().create_future()
        self.failed = False
        self.due = asyncio.Event()
        self.due.set()  # the first read, at once
        self.task: asyncio.Task[None] | None = None

    def publish(self, outcome: JobOutcome, *, failed: bool = False) -> None:
        self.version += 1
        self.outcome = outcome
        self.failed = failed
        for handle in self.watches:
            handle.notify()

    def changed_by(self, row: DigestJob | None) -> bool:
        if self.version == 0 or self.failed:
            return True
        return bool(self.outcome.result() != row)


class JobEventHub:
    """Feeds of watched job ids, woken by one LISTEN connection (started by the first watch)."""

    def __init__(
        self,
        database_url: str,
        pool: asyncpg.Pool,
        *,
        fallback_seconds: float = FALLBACK_SECONDS,
        probe_seconds: float = PROBE_SECONDS,
        probe_timeout_seconds: float = PROBE_TIMEOUT_SECONDS,
        healthy_seconds: float = HEALTHY_SECONDS,
        min_spacing_seconds: float = MIN_SPACING_SECONDS,
        deliveries_per_second: float = DELIVERIES_PER_SECOND,
        backoff: Backoff | None = None,
    ) -> None:
        self._url = database_url
        self._pool = pool
        self.fallback_seconds = fallback_seconds
        self._probe_seconds = probe_seconds
        self._probe_timeout_seconds = probe_timeout_seconds
        self._healthy_seconds = healthy_seconds
        self._min_spacing_seconds = min_spacing_seconds
        self._deliveries_per_second = deliveries_per_second
        self._watch_count = 0
        self._backoff = backoff or Backoff(0.5, 30.0)
        self._feeds: dict[int, JobFeed] = {}
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
        return len(self._feeds)

    @property
    def watches(self) -> int:
        return self._watch_count

    @property
    def spacing_seconds(self) -> float:
        """The least time between two reads (and states) of one job, now."""
        return max(self._min_spacing_seconds, self._watch_count / self._deliveries_per_second)

    @contextlib.asynccontextmanager
    async def watch(self, job_id: int) -> AsyncIterator[JobWatchHandle]:
        if self._closed.is_set():
            raise WatchClosed()
        feed = self._feeds.get(job_id)
        if feed is None:
            feed = self._feeds[job_id] = JobFeed(job_id)
            feed.task = asyncio.create_task(self._follow(feed), name=f"job-events:{job_id}")
        handle = JobWatchHandle(feed)
        if feed.failed:  # the last read failed: this watch starts from the next one, due now
            handle.skip_current()
            feed.due.set()
        feed.watches.add(handle)
        self._watch_count += 1
        if self._task is None:
            self._task = asyncio.create_task(self._listen_forever(), name="job-events")
        try:
            yield handle
        finally:
            feed.watches.discard(handle)
            self._watch_count -= 1
            if not feed.watches and self._feeds.get(job_id) is feed:
                del self._feeds[job_id]
                if feed.task is not None:
                    feed.task.cancel()

    async def close(self) -> None:
        self._closed.set()
        tasks = [feed.task for feed in self._feeds.values() if feed.task is not None]
        if self._task is not None:
            tasks.append(self._task)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for feed in self._feeds.values():  # whoever still watches is told it ends
            closed: JobOutcome = asyncio.get_running_loop().create_future()
            closed.set_exception(WatchClosed())
            closed.exception()  # retrieved here; each watch re-raises it
            feed.publish(closed, failed=True)
        await self._drop_connection()

    async def _follow(self, feed: JobFeed) -> None:
        """Re-read the feed's job whenever a read is due, and publish what changed."""
        while True:
            await self._until_due(feed)
            feed.due.clear()  # an event from now on asks for another read after this one
            outcome: JobOutcome = asyncio.get_running_loop().create_future()
            try:
                async with self._pool.acquire() as connection:
                    row = await jobs.job_by_id(connection, feed.job_id)
            except Exception as error:  # noqa: BLE001 - each watch raises it, as its own read would
                logger.warning(
                    "job events: reading job %s failed (%s)", feed.job_id, describe_error(error)
                )
                outcome.set_exception(error)
                outcome.exception()  # retrieved here; each watch re-raises it
                feed.publish(outcome, failed=True)
                continue
            if feed.changed_by(row):
                outcome.set_result(row)
                feed.publish(outcome)
                # Events meanwhile make one read after the spacing.
                await wait_any((self._closed,), self.spacing_seconds)

    async def _until_due(self, feed: JobFeed) -> None:
        timeout = None if self.listening else self.fallback_seconds
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await feed.due.wait()

    def _wake_all(self) -> None:
        for feed in self._feeds.values():
            feed.due.set()

    def _on_event(self, connection: object, pid: int, channel: str, payload: str) -> None:
        job_id = canonical_id(payload)
        feed = self._feeds.get(job_id) if job_id is not None else None
        if feed is not None:
            feed.due.set()

    async def _listen_forever(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._closed.is_set():
            try:
                connection, lost = await self._open_listening()
            except Exception as error:  # noqa: BLE001 - the feeds poll meanwhile
                delay = self._backoff.next_delay()
                logger.warning(
                    "job events: LISTEN unavailable (%s); subscribers re-read every %ss, "
                    "retrying in %.1fs",
                    describe_error(error),
                    self.fallback_seconds,
                    delay,
                )
                await wait_any((self._closed,), delay)
                continue
            # Listening only now that LISTEN is in place: until then the feeds keep polling.
            self._connection = connection
            self.connections_opened += 1
            opened_at = loop.time()
            self._wake_all()  # whatever changed before LISTEN began is read now
            await self._until_lost(connection, lost)
            await self._drop_connection()
            if self._closed.is_set():
                return
            # A connection lost soon after it opened (a database that drops every new one)
            # counts as one more failure, so the retries slow down instead of looping.
            if loop.time() - opened_at >= self._healthy_seconds:
                self._backoff.reset()
            delay = self._backoff.next_delay()
            logger.warning("job events: LISTEN connection lost; reconnecting in %.1fs", delay)
            self._wake_all()  # to their fallback reads until the connection is back
            await wait_any((self._closed,), delay)

    async def _open_listening(self) -> tuple[asyncpg.Connection, asyncio.Event]:
        """A new connection LISTENing for job events, and the event its termination sets."""
        # A fresh event per connection, bound here: asyncpg calls a termination listener on a
        # later tick, so one bound to a variable the loop reassigns would mark the NEXT
        # connection lost when a dropped one's late call arrives (and that one's the next...).
        lost = asyncio.Event()

        def mark_lost(_: object) -> None:
            lost.set()

        connection = await connect(self._url, timeout=5.0)
        try:
            connection.add_termination_listener(mark_lost)
            await connection.add_listener(JOB_EVENTS_CHANNEL, self._on_event)
        except BaseException:
            connection.terminate()
            raise
        return connection, lost

    async def _until_lost(self, connection: asyncpg.Connection, lost: asyncio.Event) -> None:
        while not self._closed.is_set() and not lost.is_set():
            await wait_any((lost, self._closed), self._probe_seconds)
            if lost.is_set() or self._closed.is_set():
                return
            try:
                async with asyncio.timeout(self._probe_timeout_seconds):
                    await database_version(connection)
            except Exception as error:  # noqa: BLE001 - any failure means a new connection
                logger.warning(
                    "job events: LISTEN connection probe failed (%s)", describe_error(error)
                )
                return

    async def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None and not connection.is_closed():
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2):
                    await connection.close()
            if not connection.is_closed():
                connection.terminate()
