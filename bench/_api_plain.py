"""The baseline of bench/api.py: a plain Starlette + asyncpg JSON API serving exactly the data
the GraphQL queries of the benchmark select, from the same database, with the same SQL.

    python -m bench._api_plain --port 8001 --database-url postgresql://...

It is served the way `digestd serve` serves the real app (`uvicorn.run(app, host, port,
log_level="warning")`, one process, the same pool size and JSON codecs), so the only difference
the benchmark sees is the GraphQL layer: parsing, validation, execution, DataLoaders.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import asyncpg
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from db import channels as channel_queries
from db import digests as digest_queries
from db import jobs as job_queries
from db import pages
from db.engine import create_pool
from db.models import Digest, DigestJob

ITEM_COUNT_FIELDS = {
    "topics": "topics",
    "decisions": "decisions",
    "actionItems": "action_items",
    "openQuestions": "open_questions",
    "links": "links",
    "artifacts": "artifacts",
    "knowledgeItems": "knowledge_items",
}


def _iso(value: datetime | None) -> str | None:
    # Strawberry serializes DateTime with isoformat(); the same here so payloads compare equal.
    return value.isoformat() if value is not None else None


def _id(type_name: str, value: int | None) -> str | None:
    """A Relay global id, base64("Type:pk"), as schema/types/ids.py writes it (the same rule, not its
    code: the baseline must not import the GraphQL layer it is compared with)."""
    if value is None:
        return None
    return base64.b64encode(f"{type_name}:{value}".encode()).decode("ascii")


def job_json(row: DigestJob) -> dict[str, Any]:
    """The fields of bench/api.py's JOB_QUERY, shaped as GraphQL returns them."""
    stats = row.stats or {}
    return {
        "id": _id("DigestJob", row.id),
        "status": row.status.upper(),
        "phase": row.phase.upper() if row.phase else None,
        "progress": {"chunksDone": row.chunks_done, "chunksTotal": row.chunks_total},
        "attempts": row.attempts,
        "error": row.error,
        "resultMessage": row.result_message,
        "digestId": _id("Digest", row.digest_id),
        "stats": {
            "messages": stats.get("messages"),
            "chunks": stats.get("chunks"),
            "llmCalls": stats.get("llm_calls"),
            "durationSeconds": stats.get("duration_seconds"),
        },
        "updatedAt": _iso(row.updated_at),
    }


def excerpt(overview: str) -> str:
    # The same rule as schema.types.digest.DigestSummary (copied: the baseline must not import
    # the GraphQL layer it is compared with).
    return overview if len(overview) <= 280 else overview[:279].rsplit(" ", 1)[0] + "…"


def digest_summary_json(row: Digest) -> dict[str, Any]:
    """The scalar fields of DIGESTS_QUERY's node."""
    return {
        "id": _id("Digest", row.id),
        "channelId": _id("Channel", row.channel_id),
        "title": row.title,
        "excerpt": excerpt(row.overview),
        "signalQuality": {"level": row.signal_quality.upper(), "reason": row.signal_reason},
        "messageCount": row.message_count,
        "windowStart": _iso(row.window_start),
        "windowEnd": _iso(row.window_end),
        "createdAt": _iso(row.created_at),
    }


async def digests_page(connection: asyncpg.Connection, first: int, nested: bool) -> dict[str, Any]:
    """The page of DIGESTS_QUERY (or DIGESTS_NESTED_QUERY when `nested`): the same keyset SQL
    from db/pages.py, and for `nested` the same two batch reads the DataLoaders send (the same
    typed rows too)."""
    page = await pages.fetch_page(connection, pages.DIGESTS, {}, first=first, after=None)
    nodes = [digest_summary_json(row) for row in page.rows]
    if nested:
        digest_ids = [row.id for row in page.rows]
        channel_ids = sorted({row.channel_id for row in page.rows})
        channels = {
            row.id: row for row in await channel_queries.channels_by_ids(connection, channel_ids)
        }
        counts = {
            row.digest_id: row
            for row in await digest_queries.digest_item_counts(connection, digest_ids)
        }
        for node, row in zip(nodes, page.rows, strict=True):
            channel = channels.get(row.channel_id)
            node["channel"] = {"name": channel.name} if channel else None
            count_row = counts.get(row.id)
            node["itemCounts"] = {
                key: int(getattr(count_row, column)) if count_row else 0
                for key, column in ITEM_COUNT_FIELDS.items()
            }
    edges = [
        {"cursor": page.cursor_of(row), "node": node}
        for row, node in zip(page.rows, nodes, strict=True)
    ]
    return {
        "edges": edges,
        "pageInfo": {
            "hasNextPage": page.has_next_page,
            "endCursor": edges[-1]["cursor"] if edges else None,
        },
    }


def create_plain_app(database_url: str, pool_size: int) -> Starlette:
    """GET /plain/job/{id}, GET /plain/digests?first=20[&nested=1], GET /healthz."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.pool = await create_pool(database_url, max_size=pool_size)
        try:
            yield
        finally:
            await app.state.pool.close()

    async def job(request: Request) -> Response:
        job_id = int(request.path_params["job_id"])
        async with request.app.state.pool.acquire() as connection:
            rows = await job_queries.jobs_by_ids(connection, [job_id])
        return JSONResponse({"job": job_json(rows[0]) if rows else None})

    async def digests(request: Request) -> Response:
        first = int(request.query_params.get("first", "20"))
        nested = request.query_params.get("nested") == "1"
        async with request.app.state.pool.acquire() as connection:
            page = await digests_page(connection, first, nested)
        return JSONResponse({"digests": page})

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[
            Route("/plain/job/{job_id:int}", job),
            Route("/plain/digests", digests),
            Route("/healthz", healthz),
        ],
        lifespan=lifespan,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="plain Starlette+asyncpg baseline server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--pool-size", type=int, default=10, help="as DIGESTD_DB_POOL_SIZE")
    args = parser.parse_args()
    app = create_plain_app(args.database_url, args.pool_size)
    # Exactly how server/cli.py cmd_serve runs the real app.
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
