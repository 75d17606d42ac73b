"""Deleting from the API: `deleteDigest` and `deleteChannelData` (admin tokens only).

Both refuse, with an `InvalidInputError` whose reason is `job_running`, while a job of the
channel runs: the caller cancels it (`cancelJob`) and deletes once it has ended. The work and
its SQL are db/deletions.py's.
"""

from __future__ import annotations

import logging
from typing import Annotated

import asyncpg
import strawberry
from strawberry.types import Info

from db import deletions
from schema.context import Context
from schema.gate.permissions import IsAdmin
from schema.types.ids import CHANNEL, DIGEST, DIGEST_JOB, IdArgument, global_id
from schema.types.shared import InvalidInputError, NotFoundError, parse_id_or_error

logger = logging.getLogger(__name__)


@strawberry.type(description="What deleteDigest removed.")
class DeletedDigest:
    deleted_id: strawberry.ID
    channel_id: strawberry.ID
    uncovered_messages: int = strawberry.field(
        description="Messages it covered, uncovered again: the channel's next digest reads them."
    )


@strawberry.type(description="What deleteChannelData removed: the channel and all it held.")
class DeletedChannel:
    deleted_id: strawberry.ID
    name: str
    messages: int
    digests: int
    schedules: int
    jobs: int


DeleteDigestResult = Annotated[
    DeletedDigest | NotFoundError | InvalidInputError, strawberry.union("DeleteDigestResult")
]
DeleteChannelDataResult = Annotated[
    DeletedChannel | NotFoundError | InvalidInputError, strawberry.union("DeleteChannelDataResult")
]


def _job_running(running: deletions.JobRunning) -> InvalidInputError:
    job = global_id(DIGEST_JOB, running.job_id)
    return InvalidInputError(
        message=f"job {job} of this channel is running: cancel it (cancelJob) and delete once "
        "it has ended",
        reason="job_running",
    )


@strawberry.type
class DeletionMutations:
    @strawberry.mutation(
        permission_classes=[IsAdmin],
        description="Delete a digest with its items (admins only). The messages it covered "
        "become undigested again; the entities, topic profiles and channel items only it spoke "
        "of go with it. Refused (reason job_running) while a job of its channel runs.",
    )
    async def delete_digest(self, info: Info[Context, None], id: IdArgument) -> DeleteDigestResult:
        digest_id = parse_id_or_error(id, DIGEST)
        if isinstance(digest_id, InvalidInputError):
            return digest_id
        try:
            async with info.context.pool.acquire() as connection:
                deleted = await deletions.delete_digest(connection, digest_id)
        except deletions.JobRunning as running:
            return _job_running(running)
        if deleted is None:
            return NotFoundError(message=f"no digest with id {id}")
        logger.info("digest.deleted id=%s uncovered=%d", digest_id, deleted.uncovered_messages)
        return DeletedDigest(
            deleted_id=global_id(DIGEST, deleted.id),
            channel_id=global_id(CHANNEL, deleted.channel_id),
            uncovered_messages=deleted.uncovered_messages,
        )

    @strawberry.mutation(
        permission_classes=[IsAdmin],
        description="Delete a channel and everything it holds: messages, digests, "
        "conversations, channel items, entities, schedules, queued jobs (admins only). Refused "
        "(reason job_running) while one of its jobs runs; reports already written stay.",
    )
    async def delete_channel_data(
        self, info: Info[Context, None], id: IdArgument
    ) -> DeleteChannelDataResult:
        channel_id = parse_id_or_error(id, CHANNEL)
        if isinstance(channel_id, InvalidInputError):
            return channel_id
        try:
            async with info.context.pool.acquire() as connection:
                deleted = await deletions.delete_channel(connection, channel_id)
        except deletions.JobRunning as running:
            return _job_running(running)
        except asyncpg.DeadlockDetectedError:
            # An import into the channel was writing: it went on, this deletion did not.
            return InvalidInputError(
                message="an import into this channel was running: delete again once it ends",
                reason="import_running",
            )
        if deleted is None:
            return NotFoundError(message=f"no channel with id {id}")
        logger.info("channel.deleted id=%s messages=%d", channel_id, deleted.messages)
        return DeletedChannel(
            deleted_id=global_id(CHANNEL, deleted.id),
            name=deleted.name,
            messages=deleted.messages,
            digests=deleted.digests,
            schedules=deleted.schedules,
            jobs=deleted.jobs,
        )
