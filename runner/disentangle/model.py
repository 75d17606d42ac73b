"""The link model: a linear score over the features of each candidate parent (and of "starts a
conversation"), the best one wins. Weights come from `weights.json` beside this module, written
by scripts/train_disentangle.py from the train split of the Ubuntu IRC corpus.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from runner.disentangle.features import (
    NAMES,
    ChannelState,
    candidates,
    pair_features,
    self_features,
)
from runner.disentangle.message import Message

WEIGHTS_PATH = Path(__file__).with_name("weights.json")


@dataclass(frozen=True)
class Decision:
    """One message's choice: its candidate parents and the features of each; the last entry of
    `options` is `None`, "starts a conversation"."""

    index: int
    options: list[int | None]
    features: list[list[int]]  # ids into features.NAMES


def walk(messages: Sequence[Message], choose: Callable[[Decision], int | None]) -> list[int | None]:
    """Parents of `messages`, read left to right: an explicit `reply_to` when there is one,
    nothing for system notices, else `choose(decision)` over the message's candidates (whose
    features see the parents chosen for the messages before it)."""
    state = ChannelState()
    parents: list[int | None] = []
    for index, message in enumerate(messages):
        seen = state.read(message)
        parent: int | None = None
        if message.reply_to is not None and 0 <= message.reply_to < index:
            parent = message.reply_to
        elif not seen.system:
            options: list[int | None] = list(candidates(state, index))
            features = [pair_features(state, index, c) for c in options if c is not None]
            options.append(None)
            features.append(self_features(state, index))
            parent = choose(Decision(index, options, features))
        parents.append(parent)
        state.commit(parent)
    return parents


class LinkModel:
    """One weight per feature of `features.NAMES`; a name the weights do not give weighs 0, and
    a name they give that the features no longer make is ignored."""

    def __init__(self, weights: Mapping[str, float]) -> None:
        self.weights = [float(weights.get(name, 0.0)) for name in NAMES]

    @classmethod
    def from_json(cls, path: Path) -> LinkModel:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls({str(name): float(value) for name, value in data["weights"].items()})

    def weight(self, name: str) -> float:
        return self.weights[NAMES.index(name)]

    def choose(self, decision: Decision) -> int | None:
        """The best-scoring option; a tie goes to "starts a conversation", then to the nearest
        candidate (options run nearest first)."""
        weight = self.weights.__getitem__
        options = decision.options
        best = options[-1]
        best_score = sum(map(weight, decision.features[-1]))
        for position, features in enumerate(decision.features[:-1]):
            score = sum(map(weight, features))
            if score > best_score:
                best, best_score = options[position], score
        return best


@cache
def default_model() -> LinkModel:
    """The shipped model (read once per process)."""
    return LinkModel.from_json(WEIGHTS_PATH)


def link(messages: Sequence[Message], model: LinkModel | None = None) -> list[int | None]:
    """For each message, the index of the earlier message it answers, or None (it starts a
    conversation): an explicit `reply_to` when there is one, nothing for system notices, else
    the model's choice."""
    return walk(messages, (model or default_model()).choose)
