"""The link model: a score over the features of each candidate parent (and of "starts a
conversation"), the best one wins. The score is linear in the features, plus, when the weights
give one, a small hidden layer (tanh units over the same features: one feature's meaning
depends on the others, e.g. a shared word matters less when the message names someone else).
Weights come from `weights.json` beside this module, written by scripts/train_disentangle.py
from the train split of the Ubuntu IRC corpus.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from runner.conversations.disentangle.features import (
    NAMES,
    ChannelState,
    candidates,
    option_features,
    self_features,
)
from runner.conversations.disentangle.message import Message

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
            found = candidates(state, index)
            features = option_features(state, index, found)
            options: list[int | None] = [*found, None]
            features.append(self_features(state, index))
            parent = choose(Decision(index, options, features))
        parents.append(parent)
        state.commit(parent)
    return parents


@dataclass(frozen=True)
class HiddenLayer:
    """tanh units over the features: `inputs[name]` is a feature's weight into each unit, the
    unit's output weight is `outputs`."""

    inputs: Mapping[str, Sequence[float]]
    biases: Sequence[float]
    outputs: Sequence[float]


class LinkModel:
    """One weight per feature of `features.NAMES` (and, with `hidden`, one per feature and
    unit); a name the weights do not give weighs 0, and a name they give that the features no
    longer make is ignored."""

    def __init__(self, weights: Mapping[str, float], hidden: HiddenLayer | None = None) -> None:
        self.weights = [float(weights.get(name, 0.0)) for name in NAMES]
        self.hidden = hidden
        if hidden is not None:
            units = len(hidden.biases)
            zero = [0.0] * units
            # One row per feature: its unit inputs, then its linear weight, so one gather and
            # one segment sum give both parts of every option's score.
            self.table = np.array(
                [
                    [*map(float, hidden.inputs.get(name, zero)), self.weights[i]]
                    for i, name in enumerate(NAMES)
                ],
                dtype=np.float64,
            )
            self.biases = np.array(hidden.biases, dtype=np.float64)
            self.outputs = np.array(hidden.outputs, dtype=np.float64)
            self.choose = self._choose_hidden  # type: ignore[method-assign]

    @classmethod
    def from_json(cls, path: Path) -> LinkModel:
        data = json.loads(path.read_text(encoding="utf-8"))
        weights = {str(name): float(value) for name, value in data["weights"].items()}
        layer = data.get("hidden")
        hidden = None
        if layer is not None:
            hidden = HiddenLayer(
                {str(name): [float(v) for v in row] for name, row in layer["inputs"].items()},
                [float(v) for v in layer["biases"]],
                [float(v) for v in layer["outputs"]],
            )
        return cls(weights, hidden)

    def weight(self, name: str) -> float:
        return self.weights[NAMES.index(name)]

    def scores(self, features: Sequence[Sequence[int]]) -> np.ndarray:
        """The score of each option (a list of feature ids)."""
        if self.hidden is None:
            weight = self.weights.__getitem__
            return np.array([sum(map(weight, ids)) for ids in features])
        flat: list[int] = []
        starts: list[int] = []
        for ids in features:
            starts.append(len(flat))
            flat += ids
        # One gather and one segment sum (every option has a feature), each option's weights
        # added in its list's order, as before: the same floats, so the same ties.
        summed = np.add.reduceat(self.table.take(flat, axis=0), starts)
        units = np.tanh(summed[:, :-1] + self.biases)
        result: np.ndarray = units @ self.outputs + summed[:, -1]
        return result

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

    def _choose_hidden(self, decision: Decision) -> int | None:
        """`choose` with the hidden layer, the same tie rule (argmax takes the first, nearest,
        of equal candidates; a candidate must beat "starts a conversation")."""
        scores = self.scores(decision.features)
        if len(scores) > 1:
            position = int(scores[:-1].argmax())
            if scores[position] > scores[-1]:
                return decision.options[position]
        return decision.options[-1]


@cache
def default_model() -> LinkModel:
    """The shipped model (read once per process)."""
    return LinkModel.from_json(WEIGHTS_PATH)


def link(messages: Sequence[Message], model: LinkModel | None = None) -> list[int | None]:
    """For each message, the index of the earlier message it answers, or None (it starts a
    conversation): an explicit `reply_to` when there is one, nothing for system notices, else
    the model's choice."""
    return walk(messages, (model or default_model()).choose)
