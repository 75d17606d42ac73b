"""A GraphQL request sends a fixed number of SQL statements whatever its page size: the nested
fields of a page are batched by DataLoaders (no N+1), and releasing a pool connection sends
nothing (db/engine.py's pool reset). Counted on the real app's connections (bench/_api_statements.py)
against the test PostgreSQL."""

from __future__ import annotations

import asyncpg

from bench._api_seed import seed
from bench._api_statements import statement_counter
from db.engine import create_pool
from server.settings import Settings

ITEM_COUNTS = (
    "itemCounts { topics decisions actionItems openQuestions links artifacts knowledgeItems }"
)


def digests_page(first: int, counted: bool = False) -> str:
    total = "totalCount " if counted else ""
    return (
        f"{{ digests(first: {first}) {{ {total}edges {{ cursor node {{ id title excerpt "
        f"channel {{ name }} {ITEM_COUNTS} }} }} pageInfo {{ hasNextPage endCursor }} }} }}"
    )


JOB_QUERY = (
    "query Poll($id: ID!) { job(id: $id) { id status phase progress { chunksDone } digestId } }"
)


async def test_statements_per_request_do_not_grow_with_the_page(
    db: asyncpg.Pool, database_url: str, settings: Settings
) -> None:
    job_ids = await seed(database_url, 30)  # 30 digests over 20 channels
    async with statement_counter(
        settings.model_copy(update={"digestd_api_tokens": None})
    ) as counter:
        small = await counter.count(digests_page(5))
        large = await counter.count(digests_page(20))
        job = await counter.count(JOB_QUERY, {"id": str(job_ids[0])})
        small_counted = await counter.count(digests_page(5, counted=True))
        large_counted = await counter.count(digests_page(20, counted=True))
    # The page, then one batch each for the channels and the item counts; no resets.
    assert (small, large) == (3, 3)
    assert job == 1
    # totalCount is one COUNT of the whole list, whatever the page size.
    assert (small_counted, large_counted) == (4, 4)


def dashboard_page(first: int) -> str:
    """A dashboard's page of channels, each with its latest digest and its open counts."""
    return (
        f"{{ channels(first: {first}) {{ edges {{ node {{ name lastDigest {{ id overview }} "
        "openItemCounts { openQuestions openActionItems decisionsInForce open } } } } }"
    )


async def test_a_dashboard_page_of_channels_costs_the_same_for_2_as_for_10(
    db: asyncpg.Pool, database_url: str, settings: Settings
) -> None:
    """The latest digest and the open counts of every channel of the page come from one
    statement each (DISTINCT ON, GROUP BY over `channel_id = ANY`), not one per channel."""
    await seed(database_url, 30)  # 30 digests over 20 channels
    async with db.acquire() as connection:
        await connection.execute(
            "INSERT INTO channel_items (channel_id, kind, status, text, message_ids, said_at) "
            "SELECT c.id, k.kind, k.status, k.kind || ' of ' || c.name, ARRAY['m1'], now() "
            "FROM channels c CROSS JOIN (VALUES ('question', 'open'), ('action_item', 'open'), "
            "('decision', 'in_force'), ('question', 'answered')) AS k(kind, status)"
        )
    async with statement_counter(
        settings.model_copy(update={"digestd_api_tokens": None})
    ) as counter:
        two = await counter.count(dashboard_page(2))
        ten = await counter.count(dashboard_page(10))
        response = await counter.client.post("/graphql", json={"query": dashboard_page(10)})
    # The page, then one batch for the latest digests and one for the counts.
    assert (two, ten) == (3, 3)
    nodes = [edge["node"] for edge in response.json()["data"]["channels"]["edges"]]
    assert len(nodes) == 10 and all(node["lastDigest"]["overview"] for node in nodes)
    assert {tuple(node["openItemCounts"].values()) for node in nodes} == {(1, 1, 1, 2)}


async def test_a_released_connection_comes_back_without_the_transaction_left_open(
    db: asyncpg.Pool, database_url: str
) -> None:
    """The cheap reset still leaves nothing behind that a next borrower would inherit: asyncpg
    rolls back a transaction that was left open before calling the pool's reset."""
    pool = await create_pool(database_url, max_size=1)  # so the next borrower gets the same one
    try:
        async with pool.acquire() as connection:
            await connection.execute("BEGIN")
            await connection.execute("INSERT INTO servers (name) VALUES ('left-open')")
        async with pool.acquire() as connection:
            assert not connection.is_in_transaction()
            assert (
                await connection.fetchval("SELECT count(*) FROM servers WHERE name = 'left-open'")
                == 0
            )
    finally:
        await pool.close()
