"""Disentanglement as a user gets it: each Ubuntu IRC log imported by the real importer
(`runner.importers.ingest.import_path`, as `digestd import` does) into its own channel, digested
by the real channel job (worker, offline extractor), and every message's parent read back
through the GraphQL API (`Message.parent`, by the reader `digestd eval` passes in), then mapped to the log's line numbers so the
evaluator scores it with the same metrics as the model run on the files.

The importer skips system lines (joins, quits, nick changes): they have no message, hence no
parent, and are scored as the annotation scores them, each its own conversation. Each message is
mapped to its line by the importer's own record location ("line N", counted from 1), and its
author is checked against the line's (the importer trims a nick's spaces): a mapping that drifts fails loudly instead of scoring
shifted parents.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import asyncpg

from db import jobs
from db.engine import connect, create_pool, embedded_database_url, stop_embedded_server
from db.ingest import ChannelKey, MessageIngestor
from db.migrate import migrate
from runner.conversations.disentangle import Message, link
from runner.conversations.disentangle.corpus import CORPUS_DIR, AnnotatedLog
from runner.extract.offline import OfflineExtractor
from runner.grounding.normalize import normalize_text
from runner.importers.detect import iter_records
from runner.importers.ingest import import_path
from runner.importers.records import ParsedMessage
from runner.worker import Worker, WorkerConfig

# A channel's messages, each as (external id, author, the external id of its parent or None),
# read as a client reads them: `digestd eval` passes the GraphQL API's `Message.parent`
# (server/cli_eval.py; the evaluator never imports the API layers itself).
ParentReader = Callable[[asyncpg.Pool, int], Awaitable[list[tuple[str, str, str | None]]]]


class ProductPathError(RuntimeError):
    """The product path did not give a parent for every message (a failed job, an API error,
    a message that maps to no line)."""


def spoken_parents(messages: Sequence[Message]) -> list[int | None]:
    """What the product should store, by line: the model on the messages the importer keeps
    (no system lines), its parents mapped back to the lines."""
    lines = [i for i, message in enumerate(messages) if not message.system and message.author]
    parents: list[int | None] = [None] * len(messages)
    for position, parent in enumerate(link([messages[i] for i in lines])):
        parents[lines[position]] = None if parent is None else lines[parent]
    return parents


def raw_path(data_dir: Path, split: str, name: str) -> Path:
    return data_dir / CORPUS_DIR / split / f"{name}.raw.txt"


def line_of_messages(path: Path) -> dict[str, int]:
    """External id → line index (from 0) of each message the importer reads from `path`."""
    lines: dict[str, int] = {}
    for record in iter_records(path):
        if isinstance(record, ParsedMessage):
            word, _, number = record.location.partition(" ")
            if word != "line" or not number.isdigit():
                raise ProductPathError(f"unexpected record location {record.location!r}")
            lines[record.external_id] = int(number) - 1
    return lines


async def import_digest_read(
    pool: asyncpg.Pool,
    url: str,
    log: AnnotatedLog,
    path: Path,
    channel: str,
    read_parents: ParentReader,
) -> list[int | None]:
    """`log`'s parents by line through the product: import `path` into `channel`, digest it
    with the offline extractor, read `Message.parent` through the API."""
    await import_path(pool, path, channel=channel)
    channel_row = await MessageIngestor(pool, normalize_text).channel_id(
        ChannelKey(server=None, channel=channel)
    )
    async with pool.acquire() as connection:
        job, _ = await jobs.enqueue_job(
            connection, jobs.JobKind.CHANNEL, channel_row, {}, max_attempts=1
        )
    worker = Worker(pool, url, WorkerConfig(), extractor_factory=OfflineExtractor)
    await worker.run_once()
    async with pool.acquire() as connection:
        done = await jobs.job_by_id(connection, job.id)
    if done is None or done.digest_id is None:
        raise ProductPathError(f"{log.name}: the digest job gave no digest ({done})")
    lines = line_of_messages(path)
    parents: list[int | None] = [None] * len(log.messages)
    for message_id, author, parent in await read_parents(pool, channel_row):
        line = lines.get(message_id)
        if line is None or log.messages[line].author.strip() != author:
            raise ProductPathError(f"{log.name}: message {message_id} maps to no line")
        if parent is not None:
            parents[line] = lines[parent]
    return parents


async def product_parents_at(
    url: str, logs: list[AnnotatedLog], data_dir: Path, split: str, read_parents: ParentReader
) -> dict[str, list[int | None]]:
    """Parents by line of every log through the product, in the database at `url` (each log
    its own channel, named after the log)."""
    connection = await connect(url)
    try:
        await migrate(connection)
    finally:
        await connection.close()
    pool = await create_pool(url, max_size=4)
    try:
        return {
            log.name: await import_digest_read(
                pool,
                url,
                log,
                raw_path(data_dir, split, log.name),
                f"eval-{split}-{log.name}",
                read_parents,
            )
            for log in logs
        }
    finally:
        await pool.close()


def product_parents(
    logs: list[AnnotatedLog], data_dir: Path, split: str, read_parents: ParentReader
) -> dict[str, list[int | None]]:
    """`product_parents_at` in an embedded PostgreSQL in a temporary directory, deleted after."""
    with tempfile.TemporaryDirectory(prefix="digestd-disentangle-") as home:
        Path(home).chmod(0o755)  # the embedded server runs as its own user
        try:
            url = embedded_database_url(Path(home))
            return asyncio.run(product_parents_at(url, logs, data_dir, split, read_parents))
        finally:
            stop_embedded_server(Path(home))
