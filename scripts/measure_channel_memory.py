"""Measure channel memory on a real multi-day channel: import a chat log one day (or one
`--window-hours` slice) at a time, digest each with the offline extractor, and print per window the
items created, the items linked to an earlier one and the state changes; then up to `--sample` links
and state changes with their evidence, for a person to judge.

    .venv/bin/python scripts/measure_channel_memory.py                 # Gitter docker log
    .venv/bin/python scripts/measure_channel_memory.py --log chat/gitter/manual_Gitter.txt
    .venv/bin/python scripts/measure_channel_memory.py --window-hours 1 \\
        --log chat/ubuntu_irc_disentanglement/train/2007-02-06.train-c.raw.txt \\
        --log chat/ubuntu_irc_disentanglement/train/2007-02-07.train-c.raw.txt
    .venv/bin/python scripts/measure_channel_memory.py --database-url postgresql://...
    .venv/bin/python scripts/measure_channel_memory.py --labels docs/channel-memory/state-changes.json

With `--labels`, no channel is digested: each labelled example (a message and the item it may
change) is put through the memory rules (`runner.memory.plan.plan_items`) as a tracked item and
a one-message window of its conversation, and the script prints precision, recall and the share
of examples read right, separately for each split the file names (the tuning channels and the
held-out ones), per family of change; `--show-wrong` lists the examples read wrong.

Logs are read from ../shared/data (relative to the repository root); a log of several files
(`--log` repeated) is one channel. Without `--database-url` an embedded PostgreSQL in a
temporary directory is used and deleted afterwards. Chat text is printed (cut to
`--quote-chars`): run it on data you may read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from db import jobs
from db.engine import (
    connect,
    create_pool,
    embedded_database_url,
    stop_embedded_server,
)
from db.ingest import ChannelKey, MessageIngestor
from db.migrate import migrate
from runner.extract.offline import OfflineExtractor
from runner.grounding.normalize import normalize_text
from runner.importers.detect import iter_records
from runner.importers.irc import file_date
from runner.importers.records import ParsedMessage
from runner.memory.items import ItemKind, TrackedItem
from runner.memory.plan import plan_items
from runner.memory.window import MemoryMessage
from runner.worker import Worker, WorkerConfig
from schema import build_schema
from schema.context import ApiConfig, Context, Role
from schema.types.ids import CHANNEL, DIGEST, global_id

DATA = REPO.parent / "shared" / "data"
DEFAULT_LOG = "chat/gitter/manual_docker.txt"

# What is read back goes through the API, as a client would read it.
ITEMS = """
query ($channel: ID!, $after: String) {
  trackedItems(filter: {channelId: $channel}, first: 50, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes {
      id kind status text owner messageIds firstSaidAt
      history { fromStatus toStatus at reason evidenceMessageIds relatedItemId
                pointer { resolvedText } digest { id } }
      mentions { position digest { id } }
    }
  }
}
"""
MESSAGES = """
query ($channel: ID!, $after: String) {
  messages(filter: {channelId: $channel}, first: 100, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes { messageId author text }
  }
}
"""
DIGEST_ITEMS = """
query ($id: ID!) {
  digest(id: $id) {
    openQuestions { text messageIds } actionItems { text messageIds }
    decisions { text messageIds } knowledgeItems { title messageIds }
  }
}
"""
SECTION = {
    "QUESTION": "openQuestions",
    "ACTION_ITEM": "actionItems",
    "DECISION": "decisions",
    "KNOWLEDGE": "knowledgeItems",
}


def _windows(paths: list[Path], hours: int) -> dict[datetime, list[ParsedMessage]]:
    """The messages by window: calendar days (UTC) for 24 hours, else `hours`-long slices."""
    by_window: dict[datetime, list[ParsedMessage]] = defaultdict(list)
    for path in paths:
        for record in iter_records(path, base_date=file_date(path)):
            if isinstance(record, ParsedMessage):
                start = record.ts.replace(minute=0, second=0, microsecond=0)
                start = (
                    start.replace(hour=start.hour - start.hour % hours)
                    if hours < 24
                    else (start.replace(hour=0))
                )
                by_window[start].append(record)
    return dict(sorted(by_window.items()))


def _cut(text: str | None, limit: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


async def _api(pool: Any, query: str, **variables: Any) -> dict[str, Any]:
    result = await build_schema().execute(
        query,
        variable_values=variables,
        context_value=Context(pool=pool, role=Role.READER, config=ApiConfig()),
    )
    if result.errors or result.data is None:
        raise SystemExit(f"API error: {result.errors}")
    return result.data


async def _all(pool: Any, query: str, field: str, **variables: Any) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    after = None
    while True:
        page = (await _api(pool, query, after=after, **variables))[field]
        nodes += page["nodes"]
        if not page["pageInfo"]["hasNextPage"]:
            return nodes
        after = page["pageInfo"]["endCursor"]


async def measure(
    url: str, paths: list[Path], sample: int, quote_chars: int, hours: int
) -> dict[str, int]:
    connection = await connect(url)
    try:
        await migrate(connection)
    finally:
        await connection.close()
    pool = await create_pool(url, max_size=4)
    try:
        return await _measure(pool, url, paths, sample, quote_chars, hours)
    finally:
        await pool.close()


async def _measure(
    pool: Any, url: str, paths: list[Path], sample: int, quote_chars: int, hours: int
) -> dict[str, int]:
    key = ChannelKey(server="measure", channel=f"memory-{paths[0].stem}")
    ingestor = MessageIngestor(pool, normalize_text)
    channel_row = await ingestor.channel_id(key)
    channel = global_id(CHANNEL, channel_row)
    worker = Worker(pool, url, WorkerConfig(chunk_tokens=6000), extractor_factory=OfflineExtractor)
    days: list[tuple[str, int, str]] = []  # window, messages, digest global id
    label = "%Y-%m-%d" if hours >= 24 else "%Y-%m-%d %H:%M"
    for start, messages in _windows(paths, hours).items():
        day = start.strftime(label)
        await ingestor.add_many(key, messages)
        await ingestor.flush()
        async with pool.acquire() as connection:
            job, _ = await jobs.enqueue_job(
                connection, jobs.JobKind.CHANNEL, channel_row, {}, max_attempts=1
            )
        await worker.run_once()
        async with pool.acquire() as connection:
            done = await jobs.job_by_id(connection, job.id)
        if done is None or done.digest_id is None:
            print(f"{day}: no digest ({done.status if done else 'job gone'})")
            continue
        days.append((day, len(messages), global_id(DIGEST, done.digest_id)))
    items = await _all(pool, ITEMS, "trackedItems", channel=channel)
    texts = {m["messageId"]: m for m in await _all(pool, MESSAGES, "messages", channel=channel)}
    created: dict[str, int] = defaultdict(int)
    linked: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (item, mention)
    changes: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (item, event)
    for item in items:
        first = item["mentions"][0]["digest"]["id"] if item["mentions"] else None
        if first:
            created[first] += 1
        linked += [(item, m) for m in item["mentions"] if m["digest"]["id"] != first]
        changes += [(item, e) for e in item["history"] if e["fromStatus"] is not None]
    by_text = {item["id"]: item["text"] for item in items}
    width = 10 if hours >= 24 else 16
    print(f"{'window':{width}} {'messages':>8} {'created':>7} {'linked':>6} {'changes':>7}")
    totals = {"created": 0, "linked": 0, "changed": 0}
    for day, count, digest in days:
        row = {
            "created": created[digest],
            "linked": sum(1 for _, m in linked if m["digest"]["id"] == digest),
            "changed": sum(1 for _, e in changes if e["digest"] and e["digest"]["id"] == digest),
        }
        for name in totals:
            totals[name] += row[name]
        print(
            f"{day:{width}} {count:>8} {row['created']:>7} {row['linked']:>6} {row['changed']:>7}"
        )
    print(
        f"{'total':{width}} {'':>8} {totals['created']:>7} {totals['linked']:>6} "
        f"{totals['changed']:>7}"
    )

    def said(message_id: str) -> str:
        message = texts.get(message_id)
        if message is None:
            return message_id
        return f"<{message['author']}> {_cut(message['text'], quote_chars)}"

    print(f"\n## Links ({min(sample, len(linked))} of {len(linked)})")
    for number, (item, mention) in enumerate(linked[:sample], 1):
        digest = (await _api(pool, DIGEST_ITEMS, id=mention["digest"]["id"]))["digest"]
        row = digest[SECTION[item["kind"]]][mention["position"]]
        print(
            f"L{number} [{item['kind']}] first said {item['firstSaidAt'][:10]}"
            f"\n   item:  {_cut(item['text'], quote_chars)}"
            f"\n   said:  {said(item['messageIds'][0])}"
            f"\n   again: {_cut(row.get('text') or row.get('title'), quote_chars)}"
            f"\n   in:    {said(row['messageIds'][0]) if row['messageIds'] else '-'}"
        )
    print(f"\n## State changes ({min(sample, len(changes))} of {len(changes)})")
    for number, (item, event) in enumerate(changes[:sample], 1):
        pointer = event["pointer"]["resolvedText"] if event["pointer"] else None
        related = by_text.get(event["relatedItemId"] or "")
        print(
            f"S{number} [{item['kind']}] {event['fromStatus']} -> {event['toStatus']} "
            f"at {event['at'][:16]} ({event['reason']})"
            f"\n   item:     {_cut(item['text'], quote_chars)}"
            f"\n   said:     {said(item['messageIds'][0])}"
            f"\n   evidence: {said(event['evidenceMessageIds'][0])}"
            + (f"\n   pointer:  {_cut(pointer, quote_chars)!r}" if pointer else "")
            + (f"\n   by:       {_cut(related, quote_chars)}" if related else "")
        )
    return totals


ENDINGS = {"reversed", "superseded"}


def _records(root: str, path: str, cache: dict[str, list[ParsedMessage]]) -> list[ParsedMessage]:
    if path not in cache:
        file = (REPO if root == "repo" else DATA) / path
        cache[path] = [
            r for r in iter_records(file, base_date=file_date(file)) if isinstance(r, ParsedMessage)
        ]
    return cache[path]


def read_label(example: dict[str, Any], cache: dict[str, list[ParsedMessage]]) -> str:
    """The change the memory rules make to a labelled example's item ("none": no change): the
    item tracked (owned or asked by the message's author, a decision as said), the message one
    minute later in the item's conversation."""
    records = {r.external_id: r for r in _records(example["root"], example["path"], cache)}
    said = records[example["item"]["message_id"]]
    message = records[example["message"]["message_id"]]
    kind = ItemKind(example["kind"])
    owner = said.author if kind == ItemKind.DECISION else message.author
    start = datetime(2024, 1, 1, tzinfo=UTC)
    item = TrackedItem(1, kind, said.text, owner, 1, (said.external_id,), start, said.text)
    window = [
        MemoryMessage(
            message.external_id, message.author, start + timedelta(minutes=1), message.text, 1
        )
    ]
    changes = plan_items([item], [], window).changes
    return changes[0].to_status if changes else "none"


def _is_right(expected: str, got: str) -> bool:
    return expected == got or (expected in ENDINGS and got in ENDINGS)


def _family(example: dict[str, Any]) -> str:
    if example["expected"] == "none":
        return "false friends"
    return {"action_item": "completion", "question": "question closed"}.get(
        example["kind"], "decision ended"
    )


def measure_labels(path: Path, show_wrong: bool) -> dict[str, float]:
    """Print precision, recall and the share read right, per split and family; return the
    share read right per split."""
    labels = json.loads(path.read_text())
    examples = labels["examples"]
    cache: dict[str, list[ParsedMessage]] = {}
    shares: dict[str, float] = {}
    # The splits the file describes, in its order: a split added to the labels is measured
    # (and printed apart) without touching this script.
    for split in labels["splits"]:
        rows = [(e, read_label(e, cache)) for e in examples if e["split"] == split]
        changed = [(e, got) for e, got in rows if got != "none"]
        expected = [(e, got) for e, got in rows if e["expected"] != "none"]
        right_changes = sum(1 for e, got in changed if _is_right(e["expected"], got))
        right = sum(1 for e, got in rows if _is_right(e["expected"], got))
        precision = right_changes / len(changed) if changed else 1.0
        recall = right_changes / len(expected) if expected else 1.0
        shares[split] = right / len(rows) if rows else 1.0
        sources = sorted({e["path"].split("/")[-1].split(".")[0][:7] for e, _ in rows})
        print(
            f"## {split}: {len(rows)} examples, {len(expected)} state changes "
            f"({len(sources)} sources)"
        )
        print(
            f"state changes: precision {precision:.2f} ({right_changes}/{len(changed)}), "
            f"recall {recall:.2f} ({right_changes}/{len(expected)}); "
            f"examples read right {shares[split]:.2f} ({right}/{len(rows)})"
        )
        for family in ("completion", "question closed", "decision ended", "false friends"):
            mine = [(e, got) for e, got in rows if _family(e) == family]
            good = sum(1 for e, got in mine if _is_right(e["expected"], got))
            print(f"  {family:16} {good:>3}/{len(mine):<3} right")
        if show_wrong:
            for e, got in rows:
                if not _is_right(e["expected"], got):
                    print(
                        f"  WRONG {e['id']} {e['kind']} expected {e['expected']}, got {got}: "
                        f"{e['message']['quote']!r}"
                    )
    return shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "--log", action="append", help=f"under ../shared/data (default {DEFAULT_LOG})"
    )
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--quote-chars", type=int, default=200)
    parser.add_argument(
        "--window-hours",
        type=int,
        default=24,
        choices=(1, 2, 3, 4, 6, 8, 12, 24),
        help="digest windows: calendar days (24) or slices of these many hours",
    )
    parser.add_argument("--labels", type=Path, default=None, help="labelled state changes")
    parser.add_argument("--show-wrong", action="store_true", help="with --labels")
    args = parser.parse_args()
    if args.labels:
        measure_labels(
            REPO / args.labels if not args.labels.is_absolute() else args.labels, args.show_wrong
        )
        return
    paths = [DATA / name for name in (args.log or [DEFAULT_LOG])]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise SystemExit(f"not found: {', '.join(missing)} (the data lives in ../shared/data)")
    if args.database_url:
        asyncio.run(
            measure(args.database_url, paths, args.sample, args.quote_chars, args.window_hours)
        )
        return
    with tempfile.TemporaryDirectory(prefix="digestd-memory-") as home:
        Path(home).chmod(0o755)  # the embedded server runs as its own user
        try:
            asyncio.run(
                measure(
                    embedded_database_url(Path(home)),
                    paths,
                    args.sample,
                    args.quote_chars,
                    args.window_hours,
                )
            )
        finally:
            stop_embedded_server(Path(home))


if __name__ == "__main__":
    main()
