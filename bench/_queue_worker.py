"""One worker process of bench/job_queue.py: the real `runner.worker.Worker` loop, as
`digestd worker` runs it, plus a record of every job it claimed and finished.

    python -m bench._queue_worker --database-url URL --home DIR --mode notify|polling \
        --poll-seconds 5 --record OUT.json

Prints `ready` once the loop runs (and, in notify mode, its LISTEN connection is up); on SIGTERM
it stops and writes {"worker_id", "claimed": [job ids], "finished": [job ids]} to OUT.json, so
the benchmark can count claims per job independently of the `attempts` column.

`--mode polling` runs `PollingOnlyWorker`, whose listener opens no LISTEN connection: that is
the worker's own degraded path when LISTEN is unavailable (it then polls every poll_seconds),
so no option had to be added to runner/worker.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from pathlib import Path

from db.models import DigestJob
from runner.jobs.base import JobContext
from runner.jobs.outcomes import Finished, Outcome
from runner.supervision import JobListener
from runner.worker import Worker
from server.runtime import Runtime, extractor_factory
from server.settings import Settings


class _NotingListener(JobListener):
    """The worker's LISTEN connection, noting when its first (re)connect attempt is done."""

    def __init__(
        self, url: str, wake: asyncio.Event, poll: float, listening: asyncio.Event
    ) -> None:
        super().__init__(url, wake, poll)
        self.listening = listening

    async def ensure(self) -> None:
        await super().ensure()
        self.listening.set()


class _NoListener(_NotingListener):
    async def ensure(self) -> None:
        self.listening.set()

    def wait_limit(self, poll_seconds: float) -> float:
        return poll_seconds  # never reconnecting: sleep the whole poll interval


class RecordingWorker(Worker):
    """The unchanged worker, noting which jobs it claimed and finished."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.claimed: list[int] = []
        self.finished: list[int] = []
        self.listening = asyncio.Event()

    def _listener(self) -> JobListener:
        return _NotingListener(
            self._database_url, self._wake, self._config.poll_seconds, self.listening
        )

    async def _process(self, job: DigestJob, stop: asyncio.Event | None = None) -> None:
        # Called once per successful claim (run_once), before any work.
        self.claimed.append(job.id)
        await super()._process(job, stop)

    async def _record(self, job: DigestJob, outcome: Outcome, context: JobContext) -> None:
        # How a trivial job ("no new messages") ends; a second one for a job would be a
        # duplicate finish.
        if isinstance(outcome, Finished):
            self.finished.append(job.id)
        await super()._record(job, outcome, context)


class PollingOnlyWorker(RecordingWorker):
    """A worker without LISTEN: woken only by its poll timer."""

    def _listener(self) -> JobListener:
        return _NoListener(
            self._database_url, self._wake, self._config.poll_seconds, self.listening
        )


async def serve(args: argparse.Namespace) -> None:
    settings = Settings(
        database_url=args.database_url,
        digestd_home=Path(args.home),
        digest_extractor="offline",
        digestd_poll_seconds=args.poll_seconds,
        digestd_db_pool_size=4,
    )
    runtime = Runtime(settings)
    # The benchmark migrated the database already; four processes migrating at once would race.
    await runtime.open(apply_migrations=False)
    assert runtime.database_url is not None
    worker_class: type[RecordingWorker] = {
        "notify": RecordingWorker,
        "polling": PollingOnlyWorker,
    }[args.mode]
    worker = worker_class(
        runtime.pool, runtime.database_url, runtime.worker_config(), extractor_factory(settings)
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    task = asyncio.create_task(worker.run(stop))
    await worker.listening.wait()
    print("ready", flush=True)
    await task
    await runtime.close()
    Path(args.record).write_text(
        json.dumps(
            {"worker_id": worker.worker_id, "claimed": worker.claimed, "finished": worker.finished}
        ),
        encoding="utf-8",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="one recording worker of bench/job_queue.py")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--home", required=True)
    parser.add_argument("--mode", choices=("notify", "polling"), required=True)
    parser.add_argument("--poll-seconds", type=float, required=True)
    parser.add_argument("--record", required=True)
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
