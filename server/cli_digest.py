"""`digestd digest CHANNEL [--wait]` and `digestd demo`: queue a channel digest and, with --wait,
run it here while showing its progress (server/cli_progress.py), then print it as Markdown."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from datetime import datetime
from importlib import resources
from typing import Any

from db import digests as digest_queries
from db import jobs as job_queries
from db.jobs import JobStatus
from db.models import DigestJob
from runner.exports.markdown import render_digest
from runner.triggers import TriggerRefused, trigger_channel_digest
from schema.types.ids import CHANNEL, global_id
from server.cli_import import import_and_report
from server.cli_json import emit, job_json, refuse
from server.cli_progress import JobProgress
from server.cli_runtime import (
    catch_up_window,
    channel_named,
    find_channel,
    watches_stopping,
    with_runtime,
)
from server.cli_text import say, warn
from server.runtime import Runtime
from server.settings import Settings

DEMO_CHANNEL = "team-platform"
# A worker's `run_once`: claim and process one job (False when there was none).
RunOnce = Callable[[asyncio.Event | None], Coroutine[Any, Any, bool]]
# How often `--wait` reads the job's row while the job runs.
POLL_SECONDS = 0.5


async def _digest(
    runtime: Runtime,
    channel_id: int,
    *,
    wait: bool,
    run_worker: bool,
    since: datetime | None = None,
    until: datetime | None = None,
    as_json: bool = False,
) -> int:
    try:
        async with runtime.pool.acquire() as connection:
            job, created = await trigger_channel_digest(
                connection,
                channel_id,
                since=since,
                until=until,
                max_attempts=runtime.settings.digestd_max_attempts,
            )
    except TriggerRefused as refused:
        return refuse("digestd digest", str(refused.message), as_json)
    state = JobStatus.QUEUED if created else "already " + job.status
    print(f"job {job.id} {state}", file=sys.stderr)
    if not wait:
        if as_json:
            emit({"created": created, "job": job_json(job)})
        return 0
    worker = runtime.new_worker() if run_worker else None
    progress = JobProgress()
    try:
        run_once = worker.run_once if worker is not None else None
        finished = await _run_showing_progress(runtime, job, run_once, progress)
    finally:
        progress.close()
    if finished is None:
        print(f"job {job.id} left to other workers", file=sys.stderr)
        if as_json:
            emit({"created": created, "job": job_json(job)})
        return 0
    job = finished
    if as_json:
        emit({"created": created, "job": job_json(job)})
        return 1 if job.status in (JobStatus.FAILED, JobStatus.CANCELLED) else 0
    return await _print_outcome(runtime, job)


async def _run_showing_progress(
    runtime: Runtime, job: DigestJob, run_once: RunOnce | None, progress: JobProgress
) -> DigestJob | None:
    """Run the job here (`run_once`: a worker of this runtime) or wait for other workers to,
    reading its row every POLL_SECONDS meanwhile, so progress shows while the job runs, not once
    it has ended. The finished job, or None when the process is asked to stop (the running job
    is then checkpointed and released by the worker, which this waits for)."""
    running: asyncio.Task[bool] | None = None
    try:
        while not runtime.stopping.is_set():
            async with runtime.pool.acquire() as connection:
                current = await job_queries.job_by_id(connection, job.id)
            assert current is not None
            progress.update(current)
            if current.status in job_queries.TERMINAL:
                return current
            if running is not None and running.done():
                running.result()  # a worker that failed outside a job fails the command
                running = None
            if run_once is not None and running is None:
                # Claims the next queued job: ours, or one queued before it (then ours next).
                running = asyncio.create_task(run_once(runtime.stopping))
            if running is None:
                await asyncio.sleep(POLL_SECONDS)
            else:
                await asyncio.wait([running], timeout=POLL_SECONDS)
                if running.done() and not running.exception() and not running.result():
                    # Nothing to claim (ours runs elsewhere, or waits for its retry time): wait
                    # before asking again instead of polling in a tight loop.
                    await asyncio.sleep(POLL_SECONDS)
        return None
    finally:
        if running is not None:
            await running


async def _print_outcome(runtime: Runtime, job: DigestJob) -> int:
    stats = job.stats or {}
    if job.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        print(f"job {job.id} {job.status}: {job.error or job.result_message or ''}")
        return 1
    if job.digest_id is None:
        print(f"job {job.id} {job.status}: {job.result_message or 'no digest'}")
        async with runtime.pool.acquire() as connection:
            assert job.channel_id is not None  # `_digest` queues channel jobs only
            latest = await digest_queries.latest_digest_of_channel(connection, job.channel_id)
            if latest is not None:
                print(f"the channel's latest digest ({latest.id}):\n")
                say(await render_digest(connection, latest.id))
        return 0
    async with runtime.pool.acquire() as connection:
        say(await render_digest(connection, job.digest_id))
    print(
        f"\njob {job.id} {job.status}: {stats.get('messages')} messages, "
        f"{stats.get('chunks')} chunks ({stats.get('chunks_from_cache')} cached), "
        f"{stats.get('llm_calls')} LLM calls, {stats.get('items_rejected')} items rejected, "
        f"{stats.get('duration_seconds')}s"
    )
    for flag in job.warnings or []:
        warn(f"warning {flag.get('code', '')}: {flag.get('message', '')}")
    return 0


def cmd_digest(args: argparse.Namespace, settings: Settings) -> int:
    @watches_stopping
    async def body(runtime: Runtime) -> int:
        try:
            channel_id = await channel_named(runtime, args.channel, args.server)
        except ValueError as error:
            return refuse("digestd digest", str(error), args.json)
        return await _digest(
            runtime,
            channel_id,
            wait=args.wait,
            run_worker=not args.no_worker,
            since=since,
            until=until,
            as_json=args.json,
        )

    try:
        since, until = catch_up_window(args.since, args.until)
    except ValueError as error:
        return refuse("digestd digest", str(error), args.json)

    return asyncio.run(with_runtime(settings, body))


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    sample = resources.files("runner").joinpath("samples/sample_channel.jsonl")

    async def body(runtime: Runtime) -> int:
        with resources.as_file(sample) as path:
            await import_and_report(runtime, path, None, "digestd-demo")
        channel_id = await find_channel(runtime, DEMO_CHANNEL, "digestd-demo")
        assert channel_id is not None
        code = await _digest(runtime, channel_id, wait=True, run_worker=True)
        print(
            "\nNext: run `digestd serve` and open http://127.0.0.1:8000/ (the web console) or "
            "http://127.0.0.1:8000/graphql to explore it, e.g. "
            f'{{ digests(filter: {{channelId: "{global_id(CHANNEL, channel_id)}"}}) '
            "{ nodes { id title excerpt } } }"
        )
        return code

    return asyncio.run(with_runtime(settings, body))
