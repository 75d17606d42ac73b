"""Keyset vs OFFSET benchmark: latency of the first page and of a page 10,000 pages deep of
`knowledgeItems` (newest first), through GraphQL and in raw SQL.

    /tmp/venv/bin/python bench/keyset.py [--quick] [--items 1000000] [--page-size 20]
                                         [--deep-page 10000] [--samples 30] [--repeats 3]
                                         [--database-url URL]

Setup: one channel and one digest, then `--items` knowledge items bulk-loaded with COPY into the
real table (its generated tsvector column and all its indexes maintained); items come in groups
of 20 sharing a `created_at`, as a stored digest's items do, so the (created_at, id) tie-break
is exercised. ANALYZE, then a warm-up of every query.

Measured, each `--samples` times per repeat (after warm-up), median per repeat, best of repeats:
- `sql/keyset`: db.pages.fetch_page (the SQL the API runs), page 1 and page `--deep-page` via the
  cursor of the row that ends page `deep-1` (the cursor a client paging through would hold; the
  script checks the deep keyset page returns the same rows as OFFSET does);
- `sql/offset`: the same SELECT with `LIMIT n OFFSET (page-1)*n`, the naive peer;
- `graphql/keyset`: the Strawberry schema executed in-process with a real Context (pool,
  loaders), `knowledgeItems(first, after)` with edges, node fields and pageInfo. The API has no
  OFFSET form, so GraphQL is measured with keyset only; `graphql/keyset` vs `sql/keyset` shows
  what the GraphQL layer adds per page.
The ratio printed per method is deep/first (target for keyset <= 1.5, while OFFSET grows).
With --quick (20,000 items) the deep page is the last full one (page 999 at 20 a page).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

import asyncpg

from bench._support import (
    bench_database,
    emit,
    machine_details,
    postgres_version,
    utc_now,
)
from db import pages
from db.engine import connect, create_pool
from db.migrate import migrate
from db.pages import KeysetCursor
from schema import build_schema
from schema.context import ApiConfig, Context, Role
from schema.types.ids import decode_global_id

BENCH_NAME = "keyset"
TARGET_KEYSET_RATIO = 1.5
ITEMS_PER_DIGEST_TIME = 20  # items of one stored digest share its created_at
COPY_BATCH = 50_000
BASE_TIME = datetime(2024, 1, 1, tzinfo=UTC)
_KINDS = ("fact", "command", "howto", "config", "reference")  # kinds of runner.core.contract
_WORDS = (
    "deploy migration cache replica worker retry gateway dashboard release config index "
    "timeout lease queue schema cursor token budget chunk digest pointer channel"
).split()

QUERY = """
query Page($first: Int!, $after: String) {
  knowledgeItems(first: $first, after: $after) {
    edges { cursor node { id digestId channelId key kind title verbatim content createdAt } }
    pageInfo { hasNextPage endCursor }
  }
}
"""


def item_rows(count: int, digest_id: int, channel_id: int) -> Iterator[tuple[Any, ...]]:
    for n in range(count):
        words = " ".join(_WORDS[(n * k) % len(_WORDS)] for k in (1, 3, 7, 11))
        yield (
            digest_id,
            channel_id,
            n % 1000,
            f"K{n}",
            _KINDS[n % len(_KINDS)],
            f"Item {n}: {words}",
            f"Synthesized note {n} about {words}.",
            BASE_TIME + timedelta(minutes=n // ITEMS_PER_DIGEST_TIME),
        )


async def load(url: str, items: int) -> dict[str, Any]:
    """A fresh channel and digest holding `items` knowledge items, loaded with COPY."""
    connection = await connect(url)
    try:
        await migrate(connection)
        channel_id = await connection.fetchval(
            "INSERT INTO channels (name) VALUES ($1) RETURNING id", f"bench-keyset-{time.time_ns()}"
        )
        digest_id = await connection.fetchval(
            "INSERT INTO digests (channel_id, title, overview, signal_quality, message_count, "
            "extractor) VALUES ($1, 'bench', 'bench', 'medium', 0, 'bench') RETURNING id",
            channel_id,
        )
        started = time.perf_counter()
        rows = item_rows(items, digest_id, channel_id)
        columns = (
            "digest_id",
            "channel_id",
            "position",
            "item_key",
            "kind",
            "title",
            "content",
            "created_at",
        )
        while True:
            batch = [row for _, row in zip(range(COPY_BATCH), rows, strict=False)]
            if not batch:
                break
            await connection.copy_records_to_table(
                "knowledge_items", records=batch, columns=columns
            )
        loaded = time.perf_counter() - started
        await connection.execute("ANALYZE knowledge_items")
        total = await connection.fetchval("SELECT count(*) FROM knowledge_items")
        return {
            "load_seconds": round(loaded, 2),
            "rows_in_table": total,
            "channel_id": channel_id,
            "digest_id": digest_id,
        }
    finally:
        await connection.close()


def offset_sql(limit: int, offset: int) -> str:
    spec = pages.KNOWLEDGE_ITEMS
    return (
        f"{spec.select} ORDER BY {spec.sort_column} DESC, {spec.id_column} DESC "
        f"LIMIT {limit + 1} OFFSET {offset}"
    )


async def cursor_before(connection: asyncpg.Connection, page: int, size: int) -> str | None:
    """The `after` cursor of page `page`: the key of the last row of page `page - 1`."""
    if page <= 1:
        return None
    spec = pages.KNOWLEDGE_ITEMS
    row = await connection.fetchrow(
        f"SELECT k.created_at, k.id FROM knowledge_items k ORDER BY {spec.sort_column} DESC, "
        f"{spec.id_column} DESC OFFSET {(page - 1) * size - 1} LIMIT 1"
    )
    assert row is not None, f"page {page} does not exist"
    return KeysetCursor(spec.name, row["created_at"], row["id"]).encode()


async def time_it(call: Callable[[], Awaitable[Any]], samples: int) -> list[float]:
    timings = []
    for _ in range(samples):
        started = time.perf_counter()
        await call()
        timings.append(time.perf_counter() - started)
    return timings


async def measure(url: str, args: argparse.Namespace, deep: int) -> list[dict[str, Any]]:
    pool = await create_pool(url, max_size=2)
    schema = build_schema()
    size = args.page_size
    try:
        async with pool.acquire() as connection:
            after = {1: None, deep: await cursor_before(connection, deep, size)}

        async def sql_keyset(page: int) -> list[int]:
            async with pool.acquire() as connection:
                result = await pages.fetch_page(
                    connection, pages.KNOWLEDGE_ITEMS, {}, first=size, after=after[page]
                )
            return [row.id for row in result.rows]

        async def sql_offset(page: int) -> list[int]:
            async with pool.acquire() as connection:
                rows = await connection.fetch(offset_sql(size, (page - 1) * size))
            return [row["id"] for row in rows[:size]]

        async def graphql_keyset(page: int) -> list[int]:
            context = Context(pool=pool, role=Role.READER, config=ApiConfig())
            result = await schema.execute(
                QUERY, variable_values={"first": size, "after": after[page]}, context_value=context
            )
            assert result.errors is None, result.errors
            assert result.data is not None
            edges = result.data["knowledgeItems"]["edges"]
            return [decode_global_id(edge["node"]["id"])[1] for edge in edges]

        methods: dict[str, Callable[[int], Awaitable[list[int]]]] = {
            "sql/keyset": sql_keyset,
            "sql/offset": sql_offset,
            "graphql/keyset": graphql_keyset,
        }
        # The same rows whichever way a page is fetched, or the comparison means nothing.
        for page in (1, deep):
            answers = {name: await method(page) for name, method in methods.items()}
            first_answer = answers["sql/offset"]
            assert len(first_answer) == size, f"page {page} has {len(first_answer)} rows"
            assert all(ids == first_answer for ids in answers.values()), f"page {page} differs"
        emit(BENCH_NAME, kind="check", same_rows=True, pages=[1, deep])

        medians: dict[tuple[str, int], list[float]] = {}
        for repeat in range(args.repeats):
            for name, method in methods.items():
                for page in (1, deep):
                    await time_it(lambda m=method, p=page: m(p), 3)  # warm caches and plans
                    # OFFSET deep reads every skipped row: fewer samples keep the run short.
                    slow = (name, page) == ("sql/offset", deep)
                    count = max(5, args.samples // 3) if slow else args.samples
                    timings = await time_it(lambda m=method, p=page: m(p), count)
                    median = statistics.median(timings)
                    medians.setdefault((name, page), []).append(median)
                    emit(
                        BENCH_NAME,
                        kind="run",
                        repeat=repeat,
                        method=name,
                        page=page,
                        samples=count,
                        median_ms=round(1000 * median, 3),
                        min_ms=round(1000 * min(timings), 3),
                        p90_ms=round(1000 * sorted(timings)[int(0.9 * (count - 1))], 3),
                    )
        summaries = []
        for name in methods:
            first_ms = [1000 * m for m in medians[(name, 1)]]
            deep_ms = [1000 * m for m in medians[(name, deep)]]
            summaries.append(
                {
                    "method": name,
                    "first_page_ms": round(min(first_ms), 3),
                    "deep_page_ms": round(min(deep_ms), 3),
                    "first_page_ms_range": [round(min(first_ms), 3), round(max(first_ms), 3)],
                    "deep_page_ms_range": [round(min(deep_ms), 3), round(max(deep_ms), 3)],
                    # Best median against best median, from the same run.
                    "deep_over_first": round(min(deep_ms) / min(first_ms), 2),
                }
            )
        return summaries
    finally:
        await pool.close()


async def run(url: str, args: argparse.Namespace, items: int, deep: int) -> None:
    version = await postgres_version(url)
    emit(
        BENCH_NAME,
        kind="setup",
        items=items,
        page_size=args.page_size,
        deep_page=deep,
        deep_offset=(deep - 1) * args.page_size,
        samples=args.samples,
        repeats=args.repeats,
        quick=args.quick,
        started=utc_now(),
        postgres=version,
        database="url" if args.database_url else "embedded",
        **machine_details(),
    )
    loaded = await load(url, items)
    emit(BENCH_NAME, kind="load", items=items, **loaded)
    summaries = await measure(url, args, deep)
    for summary in summaries:
        emit(BENCH_NAME, kind="method", **summary)
    by_name = {s["method"]: s for s in summaries}
    keyset_ok = all(
        by_name[m]["deep_over_first"] <= TARGET_KEYSET_RATIO
        for m in ("sql/keyset", "graphql/keyset")
    )
    emit(
        BENCH_NAME,
        kind="summary",
        items=items,
        deep_page=deep,
        sql_keyset_deep_over_first=by_name["sql/keyset"]["deep_over_first"],
        graphql_keyset_deep_over_first=by_name["graphql/keyset"]["deep_over_first"],
        sql_offset_deep_over_first=by_name["sql/offset"]["deep_over_first"],
        offset_deep_over_keyset_deep=round(
            by_name["sql/offset"]["deep_page_ms"] / by_name["sql/keyset"]["deep_page_ms"], 1
        ),
        graphql_over_sql_keyset_first=round(
            by_name["graphql/keyset"]["first_page_ms"] / by_name["sql/keyset"]["first_page_ms"], 2
        ),
        target_met=keyset_ok and by_name["sql/offset"]["deep_over_first"] > TARGET_KEYSET_RATIO,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20,000 items, few samples")
    parser.add_argument("--items", type=int, default=None, help="knowledge items (1,000,000)")
    parser.add_argument("--page-size", type=int, default=20)
    parser.add_argument("--deep-page", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=None, help="timings per repeat (30)")
    parser.add_argument("--repeats", type=int, default=None, help="(3)")
    parser.add_argument("--database-url", default=None, help="default: embedded, temporary")
    args = parser.parse_args()
    items = args.items or (20_000 if args.quick else 1_000_000)
    args.samples = args.samples or (5 if args.quick else 30)
    args.repeats = args.repeats or (1 if args.quick else 3)
    deep = min(args.deep_page, items // args.page_size)
    with bench_database(args.database_url) as (url, _home):
        asyncio.run(run(url, args, items, deep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
