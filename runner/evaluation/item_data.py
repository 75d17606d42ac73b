"""Gold windows as training data for the item models (runner/extract/offline/item_model.py), and
the source family of each window, which leave-one-source-out holds out.

A message is a positive example of a kind when a gold item of that kind cites it and its text
could match the item under the evaluator's rule (token-set F1 >= the matching threshold); when
no cited message reaches it, the closest cited message is the positive (each gold item gives at
least one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from runner.conversations.threads import thread_window
from runner.core.window import Window
from runner.evaluation.gold import GoldFile, WindowRoot
from runner.evaluation.matching import TEXT_THRESHOLD, token_set_f1
from runner.extract.offline.item_model import Example, context_of, message_features

SAMPLE_SOURCE = "sample"


def source_of(gold: GoldFile) -> str:
    """The window's source family, from its path: the repository's own files are "sample"; a
    data file's family is the name of the directory under the data's top folder (chat/,
    meetings/) up to its first underscore, so chat/ubuntu_irc/... and
    chat/ubuntu_irc_disentanglement/... (the same #ubuntu channel) are one family, "ubuntu"."""
    if gold.window.root == WindowRoot.REPO:
        return SAMPLE_SOURCE
    parts = PurePosixPath(gold.window.path).parts
    folder = parts[1] if len(parts) > 2 else parts[0]
    return folder.split("_", 1)[0].casefold() or folder


def positive_ids(gold: GoldFile, texts: dict[str, str]) -> dict[str, set[str]]:
    """kind -> the message ids that are positive examples of it (see the module docstring)."""
    items: dict[str, list[tuple[str, list[str]]]] = {
        "decisions": [(d.text, d.message_ids) for d in gold.decisions],
        "action_items": [(a.text, a.message_ids) for a in gold.action_items],
        "open_questions": [(q.text, q.message_ids) for q in gold.open_questions],
    }
    positives: dict[str, set[str]] = {kind: set() for kind in items}
    for kind, entries in items.items():
        for text, message_ids in entries:
            cited = [m for m in message_ids if m in texts]
            if not cited:
                continue
            scored = [(token_set_f1(text, texts[m]), m) for m in cited]
            close = [m for score, m in scored if score >= TEXT_THRESHOLD]
            positives[kind].update(close or [max(scored, key=lambda pair: pair[0])[1]])
    return positives


def window_examples(gold: GoldFile, window: Window) -> list[Example]:
    """One example per message of the threaded window (the order the pipeline reads)."""
    threaded = thread_window(window)
    messages = threaded.messages
    texts = {m.message_id: m.normalized_text for m in messages}
    positives = positive_ids(gold, texts)
    context = context_of(messages)
    return [
        Example(
            message_features(context, index),
            frozenset(kind for kind, ids in positives.items() if m.message_id in ids),
        )
        for index, m in enumerate(messages)
    ]


@dataclass(frozen=True)
class LabelledWindow:
    name: str
    source: str
    examples: Sequence[Example]


def training_examples(windows: Sequence[LabelledWindow], hold_out: str | None) -> list[Example]:
    """Every example of the windows not of source `hold_out` (None: all of them)."""
    return [e for w in windows if w.source != hold_out for e in w.examples]
