"""Deleting a digest, or everything a channel holds, in one transaction each.

Both refuse while a job of the channel is running (`JobRunning`): its worker would write a
digest, coverage and channel items for rows that are gone. Queued jobs of a deleted channel go
with it. Locks are taken in the order a digest's store transaction takes them (the channel row,
then the jobs), so a deletion and a finishing digest never wait for each other in a cycle.
The SQL is in db/queries.sql.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from db.queries import QUERIES


class JobRunning(Exception):
    """A job of the channel is running; `job_id` names it."""

    def __init__(self, job_id: int) -> None:
        super().__init__(f"job {job_id} is running")
        self.job_id = job_id


@dataclass(frozen=True)
class DeletedChannel:
    id: int
    name: str
    messages: int
    digests: int
    schedules: int
    jobs: int


@dataclass(frozen=True)
class DeletedDigest:
    id: int
    channel_id: int
    uncovered_messages: int
    orphans_deleted: int


async def _refuse_if_running(connection: asyncpg.Connection, channel_id: int) -> None:
    for job in await connection.fetch(QUERIES["lock_channel_active_jobs"], channel_id):
        if job["status"] == "running":
            raise JobRunning(int(job["id"]))


async def delete_channel(connection: asyncpg.Connection, channel_id: int) -> DeletedChannel | None:
    """Delete the channel and everything that depends on it; None when there is no such
    channel. Raises JobRunning (and deletes nothing) while one of its jobs runs."""
    async with connection.transaction():
        channel = await connection.fetchrow(QUERIES["channel_row_for_delete"], channel_id)
        if channel is None:
            return None
        await _refuse_if_running(connection, channel_id)
        counts = await connection.fetchrow(QUERIES["channel_data_counts"], channel_id)
        await connection.execute(QUERIES["delete_channel"], channel_id)
        if channel["server_id"] is not None:
            await connection.execute(QUERIES["delete_server_if_empty"], channel["server_id"])
    return DeletedChannel(
        id=channel_id,
        name=str(channel["name"]),
        messages=int(counts["messages"]),
        digests=int(counts["digests"]),
        schedules=int(counts["schedules"]),
        jobs=int(counts["jobs"]),
    )


async def delete_digest(connection: asyncpg.Connection, digest_id: int) -> DeletedDigest | None:
    """Delete one digest; None when there is no such digest. The messages it covered become
    uncovered (the next digest reads them again), the mentions it added come off its entities'
    and topic profiles' counts, and the entities, topic profiles and channel items only it
    spoke of go with it. Raises JobRunning while a job of its channel runs."""
    async with connection.transaction():
        channel_id = await connection.fetchval(QUERIES["digest_channel"], digest_id)
        if channel_id is None:
            return None
        await connection.fetchval(QUERIES["channel_row_for_digest_delete"], channel_id)
        digest = await connection.fetchrow(QUERIES["digest_row_for_delete"], digest_id)
        if digest is None:  # deleted meanwhile
            return None
        await _refuse_if_running(connection, channel_id)
        uncovered = 0
        if not digest["catch_up"]:
            uncovered = await connection.fetchval(
                QUERIES["uncover_digest_messages"], digest_id, channel_id
            )
            await connection.fetchval(QUERIES["subtract_digest_entity_counts"], digest_id)
        dependents = await connection.fetchrow(QUERIES["digest_dependents"], digest_id)
        await connection.execute(QUERIES["delete_digest"], digest_id)
        orphans = await connection.fetchval(
            QUERIES["delete_orphans_of_digest"],
            dependents["entity_ids"],
            dependents["profile_ids"],
            dependents["item_ids"],
        )
    return DeletedDigest(
        id=digest_id,
        channel_id=int(channel_id),
        uncovered_messages=int(uncovered),
        orphans_deleted=int(orphans),
    )
