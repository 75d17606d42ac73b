"""Split a channel backlog larger than the window cap into coverage slices that several workers
digest at once.

A coverage digest (no since/until) whose channel has more than `max_window_messages` uncovered
messages does not read the first cap of them and leave the rest waiting: it cuts them, in
(ts, id) order, into contiguous slices of at most the cap, queues one channel job per slice
(`options.slice`: the batch, i.e. this job's id, the slice's index and count, and its first and
last message) and ends SUCCEEDED with the slice jobs' ids in its stats, all in one transaction.
Any worker claims any slice; a slice job reads and covers only the uncovered messages within its
bounds, so no message is covered twice and every message uncovered at the split is in exactly
one slice. A slice that fails is retried on its own (its attempts, its backoff); the others
commit their coverage whatever it does, and what a failed slice leaves uncovered is read by the
next coverage digest. Cancelling the job that split the backlog cancels its slices still queued
or running (db/queries.sql's cancel_job).

While slices of a channel are active, a coverage digest is not queued (triggering returns the
job that split the backlog: db/queries.sql's insert_channel_job) and one already queued ends at
once without reading anything: the backlog is the slices'. Messages that arrive meanwhile wait
for the next coverage digest.

Threading: a slice threads its own messages. The messages before it that no digest threaded yet
belong to the slice before, which may be running at the same time and will thread them itself,
so a slice reads as context only messages already in a conversation (`threaded_context_only`):
a reply across a slice boundary whose earlier slice has not stored yet starts a conversation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import asyncpg

from db import channels as channel_queries
from db import jobs as job_queries
from db.jobs import JobKind, JobStatus
from db.models import DigestJob, SliceBound
from runner.conversations.store import ThreadingInput
from runner.core.job_options import ChannelDigestOptions, CoverageSlice
from runner.core.window import StoredWindow
from runner.jobs.base import finish
from runner.jobs.outcomes import Finished


def plan_slices(bounds: Sequence[SliceBound], size: int, batch: int) -> list[CoverageSlice]:
    """The slices of `size` messages that `bounds` (the messages opening or closing a slice, in
    position order: db.channels.uncovered_slice_bounds) describe."""
    slices: list[CoverageSlice] = []
    if not bounds:
        return slices
    total = bounds[0].total
    count = -(-total // size)
    first: SliceBound | None = None
    for bound in bounds:
        if bound.n % size == 0:
            first = bound
        if bound.n % size == size - 1 or bound.n == total - 1:
            assert first is not None  # positions are ascending and each slice opens first
            slices.append(
                CoverageSlice(
                    batch=batch,
                    index=len(slices) + 1,
                    count=count,
                    first_at=first.ts,
                    first_id=first.id,
                    last_at=bound.ts,
                    last_id=bound.id,
                    messages=bound.n - first.n + 1,
                )
            )
    return slices


async def split_backlog(
    connection: asyncpg.Connection,
    job: DigestJob,
    worker_id: str,
    options: ChannelDigestOptions,
    max_window_messages: int,
    stats: dict[str, Any],
) -> Finished | None:
    """For a coverage job (not a slice, not a catch-up): end it when the channel's active
    slices hold its backlog, or split a backlog over `max_window_messages` into slice jobs and
    end it; None when the job should digest its window itself. The end is committed here (with
    the slices), so a returned Finished is already recorded. Raises LostLease (and queues
    nothing) when another worker holds the job now."""
    assert job.channel_id is not None
    channel_id = job.channel_id
    async with connection.transaction():
        # The channel's row lock orders the split after a slice's (or digest's) store that is
        # committing coverage, so the count and the bounds see the coverage it wrote.
        await channel_queries.lock_channel(connection, channel_id)
        batch = await job_queries.active_slice_batch(connection, channel_id)
        if batch is not None:
            end = Finished(
                JobStatus.SUCCEEDED,
                message=f"the backlog is being digested by the slices of job {batch}",
            )
            stats["slice_batch"] = batch
            await finish(connection, job.id, worker_id, end, stats)
            return end
        uncovered = await channel_queries.count_uncovered(
            connection, channel_id, max_window_messages + 1
        )
        if uncovered <= max_window_messages:
            return None
        bounds = await channel_queries.uncovered_slice_bounds(
            connection, channel_id, max_window_messages
        )
        slices = plan_slices(bounds, max_window_messages, job.id)
        ids: list[int] = []
        for piece in slices:
            sliced = ChannelDigestOptions(chunk_tokens=options.chunk_tokens, slice=piece)
            queued, _ = await job_queries.enqueue_job(
                connection,
                JobKind.CHANNEL,
                channel_id,
                sliced.stored(),
                max_attempts=job.max_attempts,
            )
            ids.append(queued.id)
        total = bounds[0].total if bounds else 0
        stats.update(messages=total, slices=ids)
        end = Finished(
            JobStatus.SUCCEEDED,
            message=(
                f"{total} uncovered messages split into {len(ids)} slices of at most "
                f"{max_window_messages}: jobs {', '.join(map(str, ids))}"
            ),
        )
        await finish(connection, job.id, worker_id, end, stats)
        return end


def threaded_context_only(thread_input: ThreadingInput, window: StoredWindow) -> ThreadingInput:
    """A slice's threading input without the context messages no digest threaded yet: those are
    the previous slice's to thread, and two slices must not both write their conversations."""
    own = window.internal_ids
    return replace(
        thread_input,
        messages=[
            message
            for message in thread_input.messages
            if message.message_id in own or message.conversation_id is not None
        ],
    )
