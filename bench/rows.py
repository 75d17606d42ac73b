"""What typed rows cost: records of a 100-row `messages` keyset page turned into models, by the
ways SQLModel and pydantic offer, against the page's query itself.

    /tmp/venv/bin/python bench/rows.py [--quick] [--rows 100] [--samples 200] [--database-url URL]

Setup: one channel with `--rows` messages (chat-sized text, a timestamp, jsonb attachments).
The records are real asyncpg records of `db.pages.MESSAGES` (the SQL the API runs). Measured,
microseconds per page (median of `--samples` after a warm-up):
- `query`: `connection.fetch` of the page (the database round trip, no models);
- `model_construct`: `db.models.as_rows` (what db/ uses: no validation, the database already
  enforced the types);
- `model_validate`: `MessageFields.model_validate(dict(record))` for each record (full validation;
  the page carries no texts, which the API loads apart);
- `table_init`: `Message(**record)` (a table model's `__init__`: SQLAlchemy's instrumentation;
  it skips validation but sets up ORM state per row).
The choice (model_construct) should cost a small fraction of the query. `--quick` takes 20
samples (the CI smoke size).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _BENCH]
sys.path.insert(0, str(_BENCH.parent))

from bench._support import bench_database, emit, utc_now
from db import pages
from db.engine import connect
from db.migrate import migrate
from db.models import Message, MessageFields, as_rows

BENCH_NAME = "rows"

_SEED = """
WITH server AS (INSERT INTO servers (name) VALUES ('bench-rows') RETURNING id),
channel AS (INSERT INTO channels (server_id, name) SELECT id, 'rows' FROM server RETURNING id)
INSERT INTO messages (channel_id, external_id, author, ts, raw_text, normalized_text, attachments)
SELECT channel.id, 'm' || g, 'author' || (g % 7), now() - make_interval(secs => g),
       repeat('a chat line with some words ', 6), repeat('a chat line with some words ', 6),
       '[{"type": "image", "url": "https://example.invalid/x.png"}]'::jsonb
FROM channel, generate_series(1, $1) g
RETURNING channel_id
"""


def median_microseconds(call: Callable[[], Any], samples: int) -> float:
    for _ in range(10):
        call()
    timings = []
    for _ in range(samples):
        started = time.perf_counter()
        call()
        timings.append(time.perf_counter() - started)
    return round(statistics.median(timings) * 1e6, 1)


async def run(url: str, count: int, samples: int) -> None:
    connection = await connect(url)
    try:
        await migrate(connection)
        channel_id = await connection.fetchval(_SEED, count)
        sql, params = pages.build_page_query(
            pages.MESSAGES, {"channel_id": channel_id}, None, count
        )
        records = (await connection.fetch(sql, *params))[:count]
        timings = []
        for _ in range(samples):
            started = time.perf_counter()
            await connection.fetch(sql, *params)
            timings.append(time.perf_counter() - started)
        query = round(statistics.median(timings) * 1e6, 1)
    finally:
        await connection.close()
    figures = {
        "query": query,
        "model_construct": median_microseconds(lambda: as_rows(MessageFields, records), samples),
        "model_validate": median_microseconds(
            lambda: [MessageFields.model_validate(dict(record)) for record in records], samples
        ),
        "table_init": median_microseconds(
            lambda: [Message(**record) for record in records], samples
        ),
    }
    emit(
        BENCH_NAME,
        kind="result",
        rows=count,
        unit="microseconds per page",
        when=utc_now(),
        **figures,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 samples: CI smoke test")
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--samples", type=int, default=None, help="timed calls per way (200)")
    parser.add_argument("--database-url")
    args = parser.parse_args()
    samples = args.samples or (20 if args.quick else 200)
    with bench_database(args.database_url) as (url, _home):
        asyncio.run(run(url, args.rows, samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
