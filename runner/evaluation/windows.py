"""The window a gold file names, built the way the worker would see it: records from the real
importers (`iter_records`, so ids are the importer's stable ids), text through `normalize_text`,
ordered by timestamp like the worker's window query (stable, so file order breaks ties).

No database is involved: the pipeline takes plain data, and the evaluator stays fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.core.window import Window, WindowMessage
from runner.evaluation.gold import GoldFile, WindowRoot
from runner.grounding.normalize import normalize_text
from runner.importers import ParsedMessage, iter_records


class WindowUnavailable(Exception):
    """The window's data is not there (e.g. ../shared/data is absent): skip it, say why."""


class WindowMismatch(ValueError):
    """The data is there but does not hold the window the gold file describes."""


@dataclass(frozen=True)
class Roots:
    """Where `root: repo` and `root: data` paths are resolved."""

    repo: Path
    data: Path | None


def source_path(gold: GoldFile, roots: Roots) -> Path:
    if gold.window.root == WindowRoot.REPO:
        return roots.repo / gold.window.path
    if roots.data is None:
        raise WindowUnavailable("no data directory given")
    return roots.data / gold.window.path


def load_window(gold: GoldFile, roots: Roots) -> Window:
    """The messages from `first_message_id` to `last_message_id` (inclusive, importer order)."""
    path = source_path(gold, roots)
    if not path.exists():
        raise WindowUnavailable(f"{path} is absent")
    spec = gold.window
    selected: list[ParsedMessage] = []
    seen: set[str] = set()
    inside = False
    for record in iter_records(path):
        if not isinstance(record, ParsedMessage):
            continue  # rejected records never reach a window in the service either
        if record.external_id == spec.first_message_id:
            inside = True
        # A repeated id is stored once by the importer; keep its first occurrence.
        if inside and record.external_id not in seen:
            selected.append(record)
            seen.add(record.external_id)
        if inside and record.external_id == spec.last_message_id:
            break
    else:
        raise WindowMismatch(
            f"{path}: window {spec.first_message_id}..{spec.last_message_id} not found"
        )
    if len(selected) != spec.message_count:
        raise WindowMismatch(
            f"{path}: window has {len(selected)} messages, the gold file says {spec.message_count}"
        )
    ordered = sorted(selected, key=lambda record: record.ts)
    messages = tuple(
        WindowMessage(
            message_id=record.external_id,
            author=record.author,
            ts=record.ts,
            normalized_text=normalize_text(record.text),
            reply_to=record.reply_to,
        )
        for record in ordered
    )
    return Window(channel_name=spec.channel, messages=messages)


def check_gold_against_window(gold: GoldFile, window: Window) -> list[str]:
    """Problems of the annotations against the real text: unknown ids, spans whose quote is
    not the normalized slice. Empty when the gold file is sound."""
    texts = {message.message_id: message.normalized_text for message in window.messages}
    problems = [
        f"cites {message_id}, which is not in the window"
        for message_id in sorted(gold.cited_message_ids() - texts.keys())
    ]
    for artifact in gold.artifacts:
        text = texts.get(artifact.message_id)
        if text is None:
            continue
        if not artifact.quotes(text[artifact.char_start : artifact.char_end]):
            problems.append(
                f"artifact {artifact.title!r}: {artifact.message_id}"
                f"[{artifact.char_start}:{artifact.char_end}] is not its quote"
            )
    return problems
