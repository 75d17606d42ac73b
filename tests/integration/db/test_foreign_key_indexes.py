"""Every foreign key has an index on its referencing columns. Without one, deleting a referenced
row scans the referencing table once per deleted row: deleting a channel of 200,000 messages
(whose `parent_id` points into `messages` itself) ran for minutes per thousand rows."""

from __future__ import annotations

import asyncpg

# A foreign key's columns, and whether some index of its table starts with exactly those columns
# (in any order within that prefix), so the referential action can find the rows by index.
_UNINDEXED_FOREIGN_KEYS = """
SELECT c.conrelid::regclass::text AS table_name, c.conname AS constraint_name
FROM pg_constraint c
JOIN pg_namespace n ON n.oid = c.connamespace
WHERE c.contype = 'f' AND n.nspname = 'public'
  AND NOT EXISTS (
    SELECT 1 FROM pg_index i
    WHERE i.indrelid = c.conrelid
      AND (i.indkey::int2[])[0:array_length(c.conkey, 1) - 1] @> c.conkey
      AND (i.indkey::int2[])[0:array_length(c.conkey, 1) - 1] <@ c.conkey
  )
ORDER BY 1, 2
"""


async def test_every_foreign_key_has_an_index(db: asyncpg.Pool) -> None:
    async with db.acquire() as connection:
        rows = await connection.fetch(_UNINDEXED_FOREIGN_KEYS)
    unindexed = [f"{row['table_name']}.{row['constraint_name']}" for row in rows]
    assert unindexed == [], "\n".join(unindexed)
