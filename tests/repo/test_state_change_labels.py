"""The labelled state changes of channel memory (docs/channel-memory/state-changes.json) point
at real messages: every example's item and message are found in its source by the importer's
ids, quoted as they are written, the item before the message, and no two splits (tuning and
the held-out ones the file describes) share a source."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from runner.importers.detect import iter_records
from runner.importers.irc import file_date
from runner.importers.records import ParsedMessage
from tests.support.paths import REPO_ROOT, shared_data

LABELS = REPO_ROOT / "docs" / "channel-memory" / "state-changes.json"
EXPECTED = {"done", "dropped", "reversed", "superseded", "none"}
KINDS = {"action_item": {"done", "none"}, "question": {"dropped", "none"}}


def _splits() -> list[str]:
    splits: dict[str, str] = json.loads(LABELS.read_text())["splits"]
    return list(splits)


def _examples() -> list[dict[str, Any]]:
    examples: list[dict[str, Any]] = json.loads(LABELS.read_text())["examples"]
    return examples


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_labels_are_well_formed_and_the_splits_share_no_source() -> None:
    examples = _examples()
    assert len({e["id"] for e in examples}) == len(examples)
    sources: dict[str, set[str]] = defaultdict(set)
    for example in examples:
        assert example["expected"] in KINDS.get(
            example["kind"], {"reversed", "superseded", "none"}
        ), example["id"]
        assert example["expected"] in EXPECTED
        assert len(example["message"]["quote"]) <= 160 and len(example["item"]["quote"]) <= 160
        sources[example["split"]].add(example["path"])
    # Every example is in a split the file describes, and every split described has examples.
    assert set(sources) == set(_splits()) and {"tune", "held_out"} <= set(sources)
    for split, paths in sources.items():
        for other, others in sources.items():
            assert split == other or not paths & others, (split, other)


def test_every_label_points_at_the_messages_it_quotes() -> None:
    by_path: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for example in _examples():
        by_path[(example["root"], example["path"])].append(example)
    for (root, path), examples in by_path.items():
        file = REPO_ROOT / path if root == "repo" else shared_data(path)
        records = [
            r
            for r in iter_records(Path(file), base_date=file_date(Path(file)))
            if isinstance(r, ParsedMessage)
        ]
        order = {r.external_id: i for i, r in enumerate(records)}
        texts = {r.external_id: _flat(r.text) for r in records}
        for example in examples:
            item, message = example["item"], example["message"]
            for said in (item, message):
                quote = said["quote"].rstrip("\u2026")
                assert texts[said["message_id"]].startswith(quote), example["id"]
            assert order[item["message_id"]] < order[message["message_id"]], example["id"]
