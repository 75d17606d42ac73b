"""The subscription root: `jobProgress(id)`, a job's state as it changes, over WebSocket
(graphql-transport-ws, server/graphql_ws.py).

It yields the job as it is now, then the job again each time it changed (the server hears of a
change through the process's job events and re-reads the row once for every subscriber of that
job; changes arriving during a read count once), and completes after yielding a terminal state.
Polling `job(id)` answers the same.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import strawberry
from strawberry.types import Info

from db import jobs
from schema.context import Context
from schema.errors import NOT_FOUND, client_error
from schema.resolvers.job_watch import WatchClosed
from schema.types.ids import DIGEST_JOB, IdArgument, parse_id
from schema.types.job import DigestJob


@strawberry.type
class Subscription:
    @strawberry.subscription(
        description="A job's state now, then its new states until a terminal one (SUCCEEDED, "
        "PARTIAL, FAILED or CANCELLED), after which the subscription completes. States that "
        "follow each other within a fraction of a second (more with many subscribers) come as "
        "the newest one; the terminal state always comes. Served over "
        "WebSocket (graphql-transport-ws) at /graphql; an unknown id is an error with code "
        "NOT_FOUND."
    )
    async def job_progress(
        self, info: Info[Context, None], id: IdArgument
    ) -> AsyncGenerator[DigestJob, None]:
        job_id = parse_id(id, DIGEST_JOB)
        events = info.context.job_events
        if events is None:
            raise RuntimeError("jobProgress needs the server's job events (Context.job_events)")
        # The process's hub reads the job, once per change for all of its watches.
        try:
            async with events.watch(job_id) as watch:
                row = await watch.next_state()
                if row is None:
                    raise client_error(f"no job with id {id}", NOT_FOUND)
                while True:
                    job = DigestJob.from_row(row)
                    info.context.begin_event()
                    yield job
                    if job.status in jobs.TERMINAL:
                        return
                    row = await watch.next_state()
                    if row is None:  # deleted meanwhile (an operator's cleanup): nothing to follow
                        return
        except WatchClosed:  # the server is stopping
            return
