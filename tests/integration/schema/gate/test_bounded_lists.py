"""Lists that grow with the data take a `first` with a hard maximum, say how many they left out,
and are costed by that bound: an appearance of an entity listed all of its messages' ids (16,964
of them in one digest), a digest every left-out range (1,000), each costed as 10 rows."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import asyncpg
import pytest

from schema import build_schema
from schema.context import ApiConfig, Context, Role
from schema.gate.request_gate import GateLimits, GraphQLRequest, Refused, admit
from schema.types.ids import CHANNEL, global_id
from tests.support.database import Msg, add_channel, row_id
from tests.support.digests import digest_once
from tests.support.entities import T0, WINDOW_ONE
from tests.support.paths import REPO_ROOT

FILLER = 1_200
RANGES = 1_050


async def _run(
    pool: asyncpg.Pool, query: str, **variables: Any
) -> tuple[dict[str, Any] | None, list[str]]:
    result = await build_schema().execute(
        query,
        variable_values=variables,
        context_value=Context(pool=pool, role=Role.READER, config=ApiConfig()),
    )
    codes = [
        str((error.extensions or {}).get("code") or error.message) for error in result.errors or []
    ]
    return result.data, codes


async def _crowded_channel(db: asyncpg.Pool, database_url: str) -> int:
    """A digested channel whose entities and topics appear with FILLER + a few messages in one
    digest, and whose digest left out RANGES ranges."""
    rows = [Msg(f"a{i}", a, T0 + timedelta(minutes=i), t) for i, (a, t) in enumerate(WINDOW_ONE)]
    channel = await add_channel(db, "crowded", rows)
    assert (await digest_once(db, database_url, channel)).status == "succeeded"
    filler = [
        Msg(f"f{i}", "zed", T0 + timedelta(days=1, seconds=i), f"filler {i}") for i in range(FILLER)
    ]
    await add_channel(db, "crowded", filler)
    ranges = [
        {
            "first_message_id": f"f{i}",
            "last_message_id": f"f{i}",
            "first_at": T0.isoformat(),
            "last_at": T0.isoformat(),
            "message_count": 1,
            "reason": "window_cap",
        }
        for i in range(RANGES)
    ]
    async with db.acquire() as connection:
        every = "(SELECT array_agg(id) FROM messages WHERE channel_id = $1)"
        await connection.execute(f"UPDATE entity_mentions SET message_ids = {every}", channel)
        await connection.execute(f"UPDATE topic_profile_digests SET message_ids = {every}", channel)
        await connection.execute("UPDATE digests SET left_out = $1::jsonb", ranges)
    return channel


async def test_capped_lists_say_how_much_they_left(db: asyncpg.Pool, database_url: str) -> None:
    channel = global_id(CHANNEL, await _crowded_channel(db, database_url))
    total = len(WINDOW_ONE) + FILLER
    query = """query($c: ID!) {
      entities(filter: {channelId: $c}, first: 1) { nodes {
        itemCount digestCount items { kind }
        digests { digestId messageCount messageIds few: messageIds(first: 3) all: messageIds(first: 1000) } } }
      topics(filter: {channelId: $c}, first: 1) { nodes {
        digestCount conversationCount itemCount conversations(first: 1) { id }
        digests(first: 1) { messageCount messageIds(first: 1000) } } } }"""
    data, codes = await _run(db, query, c=channel)
    assert codes == [] and data is not None
    entity = data["entities"]["nodes"][0]
    appearance = entity["digests"][0]
    assert entity["digestCount"] == len(entity["digests"]) == 1
    assert entity["itemCount"] >= len(entity["items"])
    assert appearance["messageCount"] == total
    assert len(appearance["messageIds"]) == 20 and len(appearance["few"]) == 3
    assert len(appearance["all"]) == 1000 and appearance["all"][:3] == appearance["few"]
    topic = data["topics"]["nodes"][0]
    assert (
        topic["digests"][0]["messageCount"] == total
        and len(topic["digests"][0]["messageIds"]) == 1000
    )
    assert topic["conversationCount"] >= len(topic["conversations"])
    coverage_query = """query($d: ID!) { digest(id: $d) { messageCoverage {
      leftOutRangeCount leftOut { firstMessageId } most: leftOut(first: 1000) { firstMessageId } } } }"""
    digest, codes = await _run(db, coverage_query, d=appearance_digest(data))
    assert codes == [] and digest is not None
    coverage = digest["digest"]["messageCoverage"]
    assert coverage["leftOutRangeCount"] == RANGES
    assert len(coverage["leftOut"]) == 100 and len(coverage["most"]) == 1000


def appearance_digest(data: dict[str, Any]) -> str:
    return str(data["entities"]["nodes"][0]["digests"][0]["digestId"])


@pytest.mark.parametrize(
    "field",
    [
        "entities(filter: {channelId: $c}) { nodes { digests { messageIds(first: 1001) } } }",
        "entities(filter: {channelId: $c}) { nodes { items(first: 201) { kind } } }",
        "topics(filter: {channelId: $c}) { nodes { conversations(first: 0) { id } } }",
        "digests(filter: {channelId: $c}, first: 1) { nodes { id } }",
    ],
)
async def test_over_the_maximum_is_a_page_size_error(
    db: asyncpg.Pool, database_url: str, field: str
) -> None:
    channel = global_id(CHANNEL, await _crowded_channel(db, database_url))
    if field.startswith("digests"):  # left-out ranges: read from the digest itself
        data, _ = await _run(db, f"query($c: ID!) {{ {field} }}", c=channel)
        assert data is not None
        digest = data["digests"]["nodes"][0]["id"]
        query = "query($d: ID!) { digest(id: $d) { messageCoverage { leftOut(first: 1001) { reason } } } }"
        _, codes = await _run(db, query, d=digest)
    else:
        _, codes = await _run(db, f"query($c: ID!) {{ {field} }}", c=channel)
    assert codes and set(codes) == {"PAGE_SIZE"}, codes


def _cost_refusal(query: str, role: Role = Role.READER) -> int | None:
    try:
        admit(
            build_schema()._schema, GraphQLRequest(query, {}, None, len(query)), role, GateLimits()
        )
    except Refused as refused:
        assert (refused.error.extensions or {})["code"] == "TOO_COMPLEX"
        return int((refused.error.extensions or {})["cost"])
    return None


def test_bounded_lists_are_costed_by_their_bound() -> None:
    """A page of entities asking for every digest with every message id was costed as 10 x 10
    rows; now as what it can return."""
    cost = _cost_refusal(
        '{ entities(filter: {channelId: "Q2hhbm5lbDox"}, first: 100) { nodes { '
        "digests(first: 100) { messageIds(first: 1000) } } } }"
    )
    assert cost is not None and cost > 10_000_000
    # The nine aliases of pages of message texts: over the limit by the texts' real size.
    nine = (
        "{ "
        + " ".join(
            f'a{i}: messages(filter: {{channelId: "Q2hhbm5lbDox"}}, first: 100) {{ nodes {{ text normalizedText }} }}'
            for i in range(9)
        )
        + " }"
    )
    assert (_cost_refusal(nine) or 0) > 20_000
    # What dashboards ask stays within it.
    assert (
        _cost_refusal(
            '{ messages(filter: {channelId: "Q2hhbm5lbDox"}, first: 50) { nodes { id author text } } }'
        )
        is None
    )
    assert (
        _cost_refusal(
            '{ entities(filter: {channelId: "Q2hhbm5lbDox"}, first: 20) { nodes { items { kind text } '
            "digests { digestId messageIds } } } }"
        )
        is None
    )


async def test_an_item_mentioned_by_many_digests_lists_the_latest(
    db: asyncpg.Pool, database_url: str
) -> None:
    """Every digest mentioning a tracked item (one a minute under a schedule) was listed."""
    channel = global_id(CHANNEL, await _crowded_channel(db, database_url))
    async with db.acquire() as connection:
        digest = await connection.fetchval("SELECT id FROM digests LIMIT 1")
        item = await connection.fetchval(
            "INSERT INTO channel_items (channel_id, kind, status, text, message_ids, said_at) "
            "VALUES ($1, 'question', 'open', 'why 502?', ARRAY['a0'], now()) RETURNING id",
            row_id(channel),
        )
        await connection.execute(
            "INSERT INTO channel_item_mentions (item_id, digest_id, row_id, position) "
            "SELECT $1, $2, 0, 1000 + n FROM generate_series(1, 150) AS n",
            item,
            digest,
        )
        total = await connection.fetchval(
            "SELECT count(*) FROM channel_item_mentions WHERE item_id = $1", item
        )
    query = """query($c: ID!) { trackedItems(filter: {channelId: $c}, first: 100) { nodes { id
      mentionCount mentions { position } all: mentions(last: 100) { position } } } }"""
    data, codes = await _run(db, query, c=channel)
    assert codes == [] and data is not None
    node = next(n for n in data["trackedItems"]["nodes"] if n["mentionCount"] == total)
    assert [m["position"] for m in node["mentions"]] == list(range(1141, 1151))
    assert len(node["all"]) == 100 and node["all"][-1]["position"] == 1150
    _, codes = await _run(
        db,
        "query($c: ID!) { trackedItems(filter: {channelId: $c}) { nodes { mentions(last: 101) { position } } } }",
        c=channel,
    )
    assert set(codes) == {"PAGE_SIZE"}


CONSOLE = REPO_ROOT / "server" / "static" / "console"


def _console_queries() -> dict[str, str]:
    """The console's GraphQL texts, with their `${NAME}` constants filled in."""
    constants: dict[str, str] = {}
    for path in sorted(CONSOLE.rglob("*.js")):
        text = path.read_text("utf-8")
        for match in re.finditer(r'(?:export )?const (\w+) = (`[^`]*`|"[^"]*")', text):
            constants[match.group(1)] = match.group(2)[1:-1]
        for match in re.finditer(r"const (\w+) = \{([^}]*)\};", text):
            for key, value in re.findall(r"(\w+): (\d+)", match.group(2)):
                constants[f"{match.group(1)}.{key}"] = value

    def filled(text: str) -> str:
        for _ in range(5):
            text = re.sub(r"\$\{([\w.]+)\}", lambda m: constants.get(m.group(1), m.group(0)), text)
        return text.strip()

    return {
        name: filled(text)
        for name, text in constants.items()
        if re.match(r"(query|mutation)\b", filled(text)) and "${" not in filled(text)
    }


def test_the_console_queries_stay_within_the_cost_limit() -> None:
    """The texts weigh what they can hold, and the console's pages still pass."""
    queries = _console_queries()
    assert {"DIGEST", "MESSAGES", "STATE", "REPORT"} <= set(queries)
    for name, query in queries.items():
        assert _cost_refusal(query, Role.WRITER) is None, name
