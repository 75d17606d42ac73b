"""Entities and topic profiles: the pure rules that find and canonicalize entities
(runner/entities/mentions.py) and group a digest's topics (runner/entities/digest.py), then, on the real
PostgreSQL, a channel digested in two windows: counts accumulate, a topic profile spans both
digests, and the API serves `entities`, `entity(id)` and `topics`."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from bench._api_statements import statement_counter
from db.migrate import available_migrations, migrate
from runner.core.contract import ActionItem, Decision, Digest, Topic
from runner.core.window import WindowMessage
from runner.entities.digest import analyze_digest, topic_key
from runner.entities.mentions import (
    EntityKind,
    canonical_key,
    message_mentions,
    person_key,
    split_version,
    window_entities,
)
from runner.grounding.normalize import normalize_text
from runner.importers.detect import iter_records
from runner.importers.ingest import import_path
from runner.importers.records import ParsedMessage
from schema.types.ids import CHANNEL, global_id
from server.settings import Settings
from tests.support.database import Msg, add_channel, migrate_before
from tests.support.digests import digest_once
from tests.support.entities import T0, WINDOW_ONE
from tests.support.paths import shared_data
from tests.support.schema import gql


def _window(rows: list[tuple[str, str]], start: datetime = T0) -> list[WindowMessage]:
    return [
        WindowMessage(f"m{i}", author, start + timedelta(minutes=i), text)
        for i, (author, text) in enumerate(rows)
    ]


def test_spellings_fold_to_one_key() -> None:
    assert canonical_key("Docker-Compose") == canonical_key("docker compose")
    assert canonical_key("docker_compose") == canonical_key("DOCKER-COMPOSE") == "dockercompose"
    assert canonical_key("Postgres") == canonical_key("PostgreSQL") == "postgresql"
    assert canonical_key("nodejs") == canonical_key("Node.js") == "node.js"
    assert canonical_key("(nginx),") == "nginx" and canonical_key("Ubuntu's") == "ubuntu"
    assert person_key("@ann#0420") == person_key("Ann") == "@ann"


def test_a_version_suffix_is_split_only_from_a_known_name() -> None:
    assert split_version("python3.8") == ("python", "3.8")
    assert split_version("Python3") == ("python", "3")
    assert split_version("ext4") == ("ext4", None)  # a name of its own
    assert split_version("mp3") == ("mp3", None)
    found = {m.key: m for m in message_mentions("I run python3.8 on Ubuntu 22.04 now", {})}
    assert found["python"].version == "3.8" and found["ubuntu"].version == "22.04"


def test_signals_code_links_handles_and_shapes() -> None:
    people = {"@bob": "bob"}
    text = (
        "bob: try `sudo apt-get install nginx` then see https://docs.github.com/x and ask "
        "@carol about NetworkManager"
    )
    mentions = {m.key: m for m in message_mentions(text, people)}
    assert mentions["@bob"].kind is EntityKind.PERSON  # addressing someone who wrote
    assert mentions["aptget"].kind is EntityKind.SOFTWARE  # the command of a code span
    assert mentions["github"].kind is EntityKind.SERVICE  # a link's registered domain
    assert mentions["@carol"].kind is EntityKind.PERSON
    assert mentions["networkmanager"].strong  # known software
    # "Note:" addresses nobody who wrote; placeholders and stopwords are no entities.
    plain = {m.key for m in message_mentions("Note: see [<-LINK->] and <-CODE-> for the fix", {})}
    assert plain == set()
    scoped = message_mentions("npm i @types/node, ask ann@example.com", {})
    assert {m.key for m in scoped} == {"npm"}  # no person from a package scope or an address


def test_weak_signals_need_two_messages_and_acronyms_two_authors() -> None:
    once = window_entities(_window([("ann", "we moved to the Orleans cluster yesterday")]))
    assert "orleans" not in once
    twice = window_entities(
        _window(
            [
                ("ann", "we moved to the Orleans cluster yesterday"),
                ("bob", "is the new Orleans silo up?"),
                ("ann", "WHY does it FAIL"),
                ("ann", "it FAIL again"),
            ]
        )
    )
    assert twice["orleans"].mention_count == 2 and twice["orleans"].kind is EntityKind.NAME
    assert "fail" not in twice  # one author shouting is no acronym entity
    # A sentence-initial capital is no name signal.
    starts = window_entities(_window([("ann", "Great. Thanks"), ("bob", "Great work")]))
    assert starts == {}


def test_mentions_count_each_message_once_with_first_and_last_seen() -> None:
    entities = window_entities(
        _window(
            [
                ("ann", "docker docker docker"),
                ("bob", "docker-compose up"),
                ("cid", "no Docker here?"),
            ]
        )
    )
    docker = entities["docker"]
    assert docker.mention_count == 2 and docker.message_ids == ["m0", "m2"]
    assert docker.first_seen == T0 and docker.last_seen == T0 + timedelta(minutes=2)
    assert set(docker.aliases) == {"docker", "Docker"}
    assert entities["dockercompose"].mention_count == 1


def _digest(topics: list[Topic], **items: object) -> Digest:
    return Digest.model_validate(
        {
            "title": "t",
            "overview": [],
            "signal_quality": {"level": "medium", "reason": "r"},
            "coverage": {"messages_total": 3, "messages_covered": 3},
            "topics": [t.model_dump() for t in topics],
            **items,
        }
    )


def test_items_name_entities_and_topics_group_by_key() -> None:
    messages = _window(
        [
            ("ann", "nginx returns 502 after the docker upgrade"),
            ("bob", "ann: restart nginx with the new docker network"),
            ("cid", "who owns the backups?"),
        ]
    )
    digest = _digest(
        [
            Topic(title="Nginx 502 errors", message_ids=["m0", "m1"]),
            Topic(title="nginx restarts", message_ids=["m1"]),
            Topic(title="Backups ownership", message_ids=["m2"]),
        ],
        decisions=[Decision(text="Restart NGINX after each Docker upgrade", message_ids=["m1"])],
        action_items=[ActionItem(text="check backups", owner="cid", message_ids=["m2"])],
    )
    analysis = analyze_digest(messages, digest)
    assert ("decision", 0) in analysis.item_refs["nginx"]
    assert ("decision", 0) in analysis.item_refs["docker"]
    assert analysis.item_refs["@cid"] == [("action_item", 0)]
    groups = {group.key: group for group in analysis.topics}
    assert set(groups) == {"e:nginx", "w:backup|ownership"}  # nginx: the most mentioned
    assert groups["e:nginx"].positions == [0, 1] and groups["e:nginx"].message_ids == ["m0", "m1"]
    assert groups["e:nginx"].items == [("decision", 0)]
    assert groups["w:backup|ownership"].items == [("action_item", 0)]
    assert topic_key("Docker networking", analysis.entities) == topic_key(
        "docker network issues", analysis.entities
    )


def test_work_is_linear_in_the_window() -> None:
    """10,000 messages take at most ~20x the CPU time of 1,000 (a quadratic rule would be
    ~100x). CPU time of this thread, not wall time: it does not grow while other processes hold
    the cores, so the two runs compare the work alone."""
    import time

    def run(n: int) -> float:
        rows = [
            (
                f"u{i % 50}",
                f"u{(i + 1) % 50}: try `pip install foo{i % 7}` on Ubuntu 22.04, "
                f"see https://example.com/{i} and the Orleans silo",
            )
            for i in range(n)
        ]
        window = _window(rows)
        started = time.thread_time()
        window_entities(window)
        return time.thread_time() - started

    small = min(run(1000) for _ in range(3))
    large = min(run(10_000) for _ in range(2))
    assert large < small * 20 + 0.05


WINDOW_TWO = [
    ("cid", "nginx 502 again since the Postgres 16 upgrade"),
    ("ann", "cid: the upstream points at the old docker network"),
    ("cid", "ann: how do I point nginx at the new network?"),
    ("ann", "cid: edit the upstream block of the config and reload"),
]

ENTITIES = """
query($filter: EntityFilter, $first: Int, $after: String) {
  entities(filter: $filter, first: $first, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes { id key name kind mentionCount aliases versions firstSeen lastSeen }
  }
}"""
ENTITY = """
query($id: ID!) {
  entity(id: $id) {
    key mentionCount
    items { kind position text digest { id } }
    digests { digestId messageIds }
    trend { week mentions }
  }
}"""
TOPICS = """
query($filter: TopicProfileFilter) {
  topics(filter: $filter) {
    nodes { id key title mentionCount
            digests { digestId messageIds }
            conversations { id }
            items { kind text }
            trend { week mentions } }
  }
}"""


async def test_a_channel_digested_twice_accumulates_entities_and_topic_profiles(
    db: asyncpg.Pool, database_url: str
) -> None:
    first_rows = [
        Msg(f"a{i}", a, T0 + timedelta(minutes=i), t) for i, (a, t) in enumerate(WINDOW_ONE)
    ]
    channel = await add_channel(db, "ops-entities", first_rows)
    first = await digest_once(db, database_url, channel)
    assert first.status == "succeeded"
    later = T0 + timedelta(days=7)  # the next ISO week
    second_rows = [
        Msg(f"b{i}", a, later + timedelta(minutes=i), t) for i, (a, t) in enumerate(WINDOW_TWO)
    ]
    await add_channel(db, "ops-entities", second_rows)
    second = await digest_once(db, database_url, channel)
    assert second.status == "succeeded" and second.digest_id != first.digest_id

    channel_id = global_id(CHANNEL, channel)
    page = (await gql(db, ENTITIES, filter={"channelId": channel_id}, first=100))["entities"]
    by_key = {node["key"]: node for node in page["nodes"]}
    nginx = by_key["nginx"]
    assert nginx["mentionCount"] == 5 and nginx["kind"] == "SOFTWARE"
    assert by_key["docker"]["mentionCount"] == 3
    assert by_key["postgresql"]["versions"] == ["16"] and by_key["postgresql"]["name"] == "Postgres"
    assert by_key["@ann"]["kind"] == "PERSON"
    counts = [node["mentionCount"] for node in page["nodes"]]
    assert counts == sorted(counts, reverse=True) and page["nodes"][0]["key"] == "nginx"
    assert nginx["firstSeen"].startswith("2024-04-29") and nginx["lastSeen"].startswith(
        "2024-05-06"
    )

    # Keyset pages: one by one, the same order, nothing twice.
    seen: list[str] = []
    after = None
    while True:
        step = await gql(db, ENTITIES, filter={"channelId": channel_id}, first=2, after=after)
        seen += [node["key"] for node in step["entities"]["nodes"]]
        if not step["entities"]["pageInfo"]["hasNextPage"]:
            break
        after = step["entities"]["pageInfo"]["endCursor"]
    assert seen == [node["key"] for node in page["nodes"]]

    found = await gql(db, ENTITIES, filter={"channelId": channel_id, "query": "Postgres"})
    assert [node["key"] for node in found["entities"]["nodes"]] == ["postgresql"]

    detail = (await gql(db, ENTITY, id=nginx["id"]))["entity"]
    assert len(detail["digests"]) == 2
    assert sorted(len(d["messageIds"]) for d in detail["digests"]) == [2, 3]
    assert detail["items"] and {item["kind"] for item in detail["items"]} >= {"TOPIC"}
    assert {d["messageIds"][0] for d in detail["digests"]} == {"a0", "b0"}
    assert all(item["text"] and "nginx" in item["text"].casefold() for item in detail["items"])
    assert [point["week"] for point in detail["trend"]] == ["2024-W18", "2024-W19"]
    # Each week's mentions are the messages of that week's digest (window one, then two).
    per_digest = {d["messageIds"][0][0]: len(d["messageIds"]) for d in detail["digests"]}
    assert [point["mentions"] for point in detail["trend"]] == [per_digest["a"], per_digest["b"]]
    assert sum(point["mentions"] for point in detail["trend"]) == nginx["mentionCount"]

    topics = (await gql(db, TOPICS, filter={"channelId": channel_id}))["topics"]["nodes"]
    spanning = [t for t in topics if len(t["digests"]) == 2]
    assert spanning, [t["key"] for t in topics]
    profile = spanning[0]
    assert "nginx" in profile["key"]
    assert [point["week"] for point in profile["trend"]] == ["2024-W18", "2024-W19"]
    assert sum(point["mentions"] for point in profile["trend"]) == profile["mentionCount"]
    assert profile["conversations"]


async def test_a_bad_entity_id_and_a_long_query_are_client_errors(db: asyncpg.Pool) -> None:
    from schema import build_schema
    from schema.context import ApiConfig, Context, Role

    context = Context(pool=db, role=Role.READER, config=ApiConfig())
    schema = build_schema()
    result = await schema.execute(
        ENTITY, variable_values={"id": global_id(CHANNEL, 1)}, context_value=context
    )
    assert result.errors and result.errors[0].extensions
    assert result.errors[0].extensions["code"] == "BAD_ID"
    result = await schema.execute(
        ENTITIES, variable_values={"filter": {"query": "x" * 500}}, context_value=context
    )
    assert result.errors and "too long" in result.errors[0].message


def _real_window(relative: str) -> list[WindowMessage]:
    path: Path = shared_data(relative)
    return [
        WindowMessage(r.external_id, r.author, r.ts, normalize_text(r.text))
        for r in iter_records(path)
        if isinstance(r, ParsedMessage)
    ]


def test_real_channels_top_entities() -> None:
    """The top non-person entities of real channels are mostly real things (the precision
    read by a person is in docs/architecture.md; this keeps the obvious ones on top)."""
    docker = window_entities(_real_window("chat/gitter/manual_docker.txt"))
    top = [
        e.key
        for e in sorted(docker.values(), key=lambda e: -e.mention_count)
        if e.kind is not EntityKind.PERSON
    ][:10]
    assert top[0] == "docker" and {"nginx", "dockercompose"} <= set(top)
    assert not {"link", "code", "issue"} & set(docker)  # dataset placeholders
    irc = window_entities(_real_window("chat/ubuntu_irc/2010-08-17_18.raw.txt"))
    assert max(irc.values(), key=lambda e: e.mention_count).key == "ubuntu"
    assert "10.04" in irc["ubuntu"].versions


@pytest.fixture(autouse=True)
def _skip_real_data_when_absent(request: pytest.FixtureRequest) -> None:
    if request.node.name == "test_real_channels_top_entities":
        shared_data("chat/gitter/manual_docker.txt")  # skips with the reason when absent


async def test_a_catch_up_digest_stores_its_mentions_but_counts_nothing_again(
    db: asyncpg.Pool, database_url: str
) -> None:
    rows = [Msg(f"a{i}", a, T0 + timedelta(minutes=i), t) for i, (a, t) in enumerate(WINDOW_ONE)]
    channel = await add_channel(db, "ops-catch-up", rows)
    await digest_once(db, database_url, channel)
    window = {"since": T0.isoformat(), "until": (T0 + timedelta(hours=1)).isoformat()}
    catch_up = await digest_once(db, database_url, channel, window, chunk_tokens=150)
    assert catch_up.status == "succeeded" and catch_up.digest_id is not None
    page = await gql(
        db, ENTITIES, filter={"channelId": global_id(CHANNEL, channel), "query": "nginx"}
    )
    nginx = page["entities"]["nodes"][0]
    assert nginx["key"] == "nginx" and nginx["mentionCount"] == 3  # not 6
    detail = (await gql(db, ENTITY, id=nginx["id"]))["entity"]
    assert len(detail["digests"]) == 2  # both digests record where it appears


async def test_migration_0010_folds_legacy_entity_rows_into_keys(
    old_database: tuple[str, asyncpg.Connection],
) -> None:
    """Rows the old store wrote by exact name ("Docker", "docker") become one entity."""
    _, connection = old_database
    await migrate_before(connection, 10)
    channel = await connection.fetchval("INSERT INTO channels (name) VALUES ('ops') RETURNING id")
    await connection.executemany(
        "INSERT INTO entities (channel_id, name, mention_count) VALUES ($1, $2, $3)",
        [(channel, "Docker", 2), (channel, "docker", 3), (channel, "nginx", 1)],
    )
    assert await migrate(connection) == [m.name for m in available_migrations() if m.version >= 10]
    rows = await connection.fetch(
        "SELECT key, name, mention_count, aliases, kind FROM entities ORDER BY key"
    )
    assert [(r["key"], r["mention_count"], r["kind"]) for r in rows] == [
        ("docker", 5, "name"),
        ("nginx", 1, "name"),
    ]
    assert sorted(rows[0]["aliases"]) == ["Docker", "docker"]


async def test_a_real_channel_digested_lists_its_entities(
    db: asyncpg.Pool, database_url: str
) -> None:
    path = shared_data("chat/gitter/manual_docker.txt")
    report = await import_path(db, path, channel="docker-real")
    channel = next(iter(report.channels.values()))
    done = await digest_once(db, database_url, channel, chunk_tokens=1500)
    assert done.status in {"succeeded", "partial"}
    page = await gql(db, ENTITIES, filter={"channelId": global_id(CHANNEL, channel)}, first=10)
    nodes = page["entities"]["nodes"]
    assert nodes[0]["key"] == "docker" and nodes[0]["mentionCount"] > 100
    assert "1.13" in nodes[0]["versions"]
    topics = await gql(db, TOPICS, filter={"channelId": global_id(CHANNEL, channel)})
    profiles = topics["topics"]["nodes"]
    assert profiles and all(p["digests"] and p["trend"] for p in profiles)


def _entity_page(first: int) -> str:
    return (
        f"{{ entities(first: {first}) {{ nodes {{ id name items {{ kind text digest {{ id }} }} "
        f"digests {{ digestId messageIds }} }} }} topics(first: {first}) {{ nodes {{ title "
        f"digests {{ digestId }} conversations {{ id }} items {{ text }} trend {{ week }} }} }} }}"
    )


async def test_a_page_of_entities_and_topics_costs_the_same_statements_whatever_its_size(
    db: asyncpg.Pool, database_url: str, settings: Settings
) -> None:
    rows = [Msg(f"a{i}", a, T0 + timedelta(minutes=i), t) for i, (a, t) in enumerate(WINDOW_ONE)]
    channel = await add_channel(db, "ops-statements", rows)
    await digest_once(db, database_url, channel)
    later = [
        Msg(f"b{i}", a, T0 + timedelta(days=7, minutes=i), t) for i, (a, t) in enumerate(WINDOW_TWO)
    ]
    await add_channel(db, "ops-statements", later)
    await digest_once(db, database_url, channel)
    unguarded = settings.model_copy(update={"digestd_api_tokens": None})
    async with statement_counter(unguarded) as counter:
        small = await counter.count(_entity_page(1))
        large = await counter.count(_entity_page(20))
    assert small == large, (small, large)
    # The two pages, then one batch per nested field (10 on this data, whatever the page size).
    assert large <= 12
