"""Learn the weights of the disentanglement link model from the train split.

    .venv/bin/python scripts/train_disentangle.py [--data ../shared/data] [--out PATH]
    .venv/bin/python scripts/train_disentangle.py --hold-out-every 5 [--hold-out-offset K]
    .venv/bin/python scripts/train_disentangle.py --hidden 32 [...]   (the feed-forward model)
    .venv/bin/python scripts/train_disentangle.py --hidden 32 --seed S --out FILE
    .venv/bin/python scripts/train_disentangle.py --hidden 32 --seeds 14,1,2   (an ensemble)
    .venv/bin/python scripts/train_disentangle.py --merge A.json B.json ... --out FILE

Reads ../shared/data/chat/ubuntu_irc_disentanglement/train only (never dev), makes every scored
message's candidates and features with the runtime's own code (`runner.conversations.disentangle.model.
walk`), and fits a linear ranking model: the softmax over a message's options (its candidate
parents and "starts a conversation") of the summed feature weights, maximizing the probability of
its gold parents, with an L2 penalty. Full-batch Adam from zero weights, a fixed number of steps:
the same data gives the same weights, byte for byte (rounded to 4 decimals). Needs numpy only.

`--hidden H` adds H tanh units over the same features to the linear score (a feed-forward model
like the paper's, one small layer), fitted on the same objective by minibatch Adam from a fixed
seed (deterministic too; `--seed` picks another). `--seeds` trains one such model per seed and
writes their ensemble: the mean of their scores, as one model with their hidden units side by
side (exact); `--merge` writes the same file from members trained separately (in parallel).

Features that look at the conversations built so far need parents for the earlier messages:
round 1 reads each log with no model (every message alone), each later round with the previous
round's model, so the features are made as linking will make them (the model's own mistakes
included), and training continues from the previous round's weights.

Features, rounds, steps and SELF_BIAS were chosen with `--hold-out-every 5`: fit on four fifths
of the train files, score the other fifth (offsets 0 and 2) with the evaluator's metrics, for
several self biases. Dev is scored only by `digestd eval`, once per final candidate.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runner.conversations.disentangle.corpus import AnnotatedLog, read_split
from runner.conversations.disentangle.features import NAMES
from runner.conversations.disentangle.model import (
    WEIGHTS_PATH,
    Decision,
    HiddenLayer,
    LinkModel,
    link,
    walk,
)
from runner.evaluation.disentanglement import score_system

STEPS = 200  # the first round, from zero weights
STEPS_LATER = 80  # each later round, starting from the previous round's weights
ROUNDS = 3  # round 1 reads with no model (every message alone), round k with round k-1's
LEARNING_RATE = 0.05
L2 = 1e-4
# Added to the "self" weight after training: the threshold for "starts a conversation". The
# softmax fits probabilities, the evaluator scores the argmax; on held-out train files (both
# folds, see docs/quality.md) -0.2 scored better link and exact-match F1 than 0.
SELF_BIAS = -0.2
HELD_OUT_BIASES = (-0.4, -0.3, -0.2, -0.1, 0.0)
# `--hidden H`: the same objective with H tanh units beside the linear part, fitted by
# minibatch Adam (runs of consecutive decisions, their order shuffled with a fixed seed).
HIDDEN_EPOCHS = 6  # the first round
HIDDEN_EPOCHS_LATER = 3
HIDDEN_BATCH = 512  # decisions
HIDDEN_LEARNING_RATE = 0.005
HIDDEN_SEED = 14


class Dataset:
    """Options as rows; each row's active features flattened, each decision a run of rows."""

    def __init__(self) -> None:
        self.row_starts: list[int] = []  # into `features`
        self.features: list[int] = []
        self.decision_starts: list[int] = []  # into rows
        self.gold_rows: list[int] = []  # 1 when the row is a gold option

    def add(self, features: list[list[int]], gold: list[bool]) -> None:
        self.decision_starts.append(len(self.row_starts))
        for ids, is_gold in zip(features, gold, strict=True):
            self.row_starts.append(len(self.features))
            self.features.extend(ids)
            self.gold_rows.append(int(is_gold))


def build(logs: list[AnnotatedLog], model: LinkModel) -> Dataset:
    """Every scored message's options and features, the channel read with `model` choosing the
    parents (so features that look at earlier conversations see what linking will see)."""
    dataset = Dataset()
    for log in logs:

        def choose(decision: Decision, gold_of: dict[int, set[int]] = log.gold) -> int | None:
            gold = gold_of.get(decision.index)
            if gold is not None:  # None: context before the annotated part
                wanted = [
                    (option is None and decision.index in gold) or option in gold
                    for option in decision.options
                ]
                if any(wanted):
                    dataset.add(decision.features, wanted)
            return model.choose(decision)

        walk(log.messages, choose)
    return dataset


def train(dataset: Dataset, weights: np.ndarray, steps: int) -> np.ndarray:
    features = np.asarray(dataset.features, dtype=np.int64)
    row_starts = np.asarray(dataset.row_starts, dtype=np.int64)
    rows = len(row_starts)
    row_of_feature = np.repeat(np.arange(rows), np.diff(np.append(row_starts, len(features))))
    decision_starts = np.asarray(dataset.decision_starts, dtype=np.int64)
    decision_of_row = np.repeat(
        np.arange(len(decision_starts)), np.diff(np.append(decision_starts, rows))
    )
    gold = np.asarray(dataset.gold_rows, dtype=np.float64)
    size = len(NAMES)
    weights = weights.copy()
    first_moment = np.zeros(size)
    second_moment = np.zeros(size)
    count = len(decision_starts)
    for step in range(1, steps + 1):
        scores = np.bincount(row_of_feature, weights=weights[features], minlength=rows)
        top = np.maximum.reduceat(scores, decision_starts)[decision_of_row]
        exp = np.exp(scores - top)
        total = np.add.reduceat(exp, decision_starts)[decision_of_row]
        gold_total = np.add.reduceat(exp * gold, decision_starts)[decision_of_row]
        # d(-log sum_gold p)/d score = p(row) - p(row | gold)
        row_gradient = exp / total - exp * gold / gold_total
        summed = np.bincount(features, weights=row_gradient[row_of_feature], minlength=size)
        gradient = summed / count + L2 * weights
        first_moment = 0.9 * first_moment + 0.1 * gradient
        second_moment = 0.999 * second_moment + 0.001 * gradient**2
        corrected_first = first_moment / (1 - 0.9**step)
        corrected_second = second_moment / (1 - 0.999**step)
        weights -= LEARNING_RATE * corrected_first / (np.sqrt(corrected_second) + 1e-8)
        if step % 100 == 0 or step == steps:
            gold_probability = np.add.reduceat(exp * gold, decision_starts) / np.add.reduceat(
                exp, decision_starts
            )
            loss = -np.mean(np.log(gold_probability))
            print(f"step {step}: loss {loss:.4f}", file=sys.stderr)
    return weights


class HiddenParameters:
    """The feed-forward model while it is fitted: `table` is features x (units + 1), each
    feature's weights into the units then its linear weight (as `LinkModel` holds them)."""

    def __init__(self, units: int, seed: int = HIDDEN_SEED) -> None:
        self.seed = seed
        rng = np.random.default_rng(seed)
        self.table = np.zeros((len(NAMES), units + 1))
        self.table[:, :units] = rng.normal(0.0, 0.1, (len(NAMES), units))
        self.biases = np.zeros(units)
        self.outputs = rng.normal(0.0, 0.1, units)

    def model(self, self_bias: float = 0.0) -> LinkModel:
        """Rounded to 4 decimals, as written to weights.json."""
        units = len(self.biases)
        linear = {name: round(float(self.table[i, units]), 4) for i, name in enumerate(NAMES)}
        linear = with_self_bias(linear, self_bias)
        inputs = {
            name: [round(float(v), 4) for v in self.table[i, :units]]
            for i, name in enumerate(NAMES)
        }
        return LinkModel(
            linear,
            HiddenLayer(
                inputs,
                [round(float(v), 4) for v in self.biases],
                [round(float(v), 4) for v in self.outputs],
            ),
        )


def train_hidden(dataset: Dataset, parameters: HiddenParameters, epochs: int) -> None:
    """Minibatch Adam on the softmax objective of `train`, with the hidden units."""
    features = np.asarray(dataset.features, dtype=np.int64)
    row_starts = np.asarray(dataset.row_starts + [len(features)], dtype=np.int64)
    decision_starts = np.asarray(dataset.decision_starts + [len(dataset.row_starts)], np.int64)
    gold_all = np.asarray(dataset.gold_rows, dtype=np.float64)
    count = len(dataset.decision_starts)
    units = len(parameters.biases)
    groups = [parameters.table, parameters.biases, parameters.outputs]
    moments = [(np.zeros_like(g), np.zeros_like(g)) for g in groups]
    rng = np.random.default_rng(parameters.seed)
    batches = list(range(0, count, HIDDEN_BATCH))
    step = 0
    for epoch in range(1, epochs + 1):
        total_loss = 0.0
        for first in rng.permutation(batches):
            last = min(first + HIDDEN_BATCH, count)
            row_lo, row_hi = decision_starts[first], decision_starts[last]
            occ_lo, occ_hi = row_starts[row_lo], row_starts[row_hi]
            ids = features[occ_lo:occ_hi]
            local_rows = row_starts[row_lo:row_hi] - occ_lo
            rows = row_hi - row_lo
            row_of_feature = np.repeat(np.arange(rows), np.diff(np.append(local_rows, len(ids))))
            local_decisions = decision_starts[first:last] - row_lo
            decision_of_row = np.repeat(
                np.arange(last - first), np.diff(np.append(local_decisions, rows))
            )
            gold = gold_all[row_lo:row_hi]
            summed = np.add.reduceat(parameters.table[ids], local_rows)
            hidden = np.tanh(summed[:, :units] + parameters.biases)
            scores = hidden @ parameters.outputs + summed[:, units]
            top = np.maximum.reduceat(scores, local_decisions)[decision_of_row]
            exp = np.exp(scores - top)
            total = np.add.reduceat(exp, local_decisions)
            gold_total = np.add.reduceat(exp * gold, local_decisions)
            total_loss -= float(np.sum(np.log(gold_total / total)))
            # d(-log sum_gold p)/d score = p(row) - p(row | gold), averaged over the batch
            probability = exp / total[decision_of_row]
            gold_probability = exp * gold / gold_total[decision_of_row]
            row_gradient = (probability - gold_probability) / (last - first)
            d_summed = np.empty((rows, units + 1))
            d_summed[:, units] = row_gradient
            d_summed[:, :units] = np.outer(row_gradient, parameters.outputs) * (1 - hidden**2)
            d_table = np.stack(
                [
                    np.bincount(ids, weights=d_summed[row_of_feature, j], minlength=len(NAMES))
                    for j in range(units + 1)
                ],
                axis=1,
            )
            gradients = [
                d_table + L2 * parameters.table,
                d_summed[:, :units].sum(axis=0),
                hidden.T @ row_gradient + L2 * parameters.outputs,
            ]
            step += 1
            for group, gradient, (first_moment, second_moment) in zip(
                groups, gradients, moments, strict=True
            ):
                first_moment *= 0.9
                first_moment += 0.1 * gradient
                second_moment *= 0.999
                second_moment += 0.001 * gradient**2
                corrected_first = first_moment / (1 - 0.9**step)
                corrected_second = second_moment / (1 - 0.999**step)
                group -= HIDDEN_LEARNING_RATE * corrected_first / (np.sqrt(corrected_second) + 1e-8)
        print(f"epoch {epoch}: loss {total_loss / count:.4f}", file=sys.stderr, flush=True)


def held_out_split(
    logs: list[AnnotatedLog], every: int, offset: int
) -> tuple[list[AnnotatedLog], list[AnnotatedLog]]:
    """Train logs to fit on and train logs to score on: every `every`-th file (by name, from
    `offset`) is held out, so choices are made on train files the weights never saw."""
    fit = [log for i, log in enumerate(logs) if i % every != offset]
    held = [log for i, log in enumerate(logs) if i % every == offset]
    return fit, held


def with_self_bias(learned: dict[str, float], bias: float) -> dict[str, float]:
    return {**learned, "self": round(learned.get("self", 0.0) + bias, 4)}


def report_held_out(
    learned: dict[str, float], held: list[AnnotatedLog], hidden: HiddenParameters | None = None
) -> None:
    for bias in HELD_OUT_BIASES:
        if hidden is None:
            model = LinkModel(with_self_bias(learned, bias))
        else:
            model = hidden.model(bias)
        score = score_system("held out", lambda messages, model=model: link(messages, model), held)
        print(
            f"held out ({len(held)} train logs), self bias {bias:+.1f}: link P/R/F1 "
            f"{score.links.precision:.4f} {score.links.recall:.4f} {score.links.f1:.4f}, "
            f"1-VI {score.vi:.4f}, 1-1 {score.one_to_one:.4f}, exact P/R/F1 "
            f"{score.exact.precision:.4f} {score.exact.recall:.4f} {score.exact.f1:.4f}",
            flush=True,
        )


def fit(
    logs: list[AnnotatedLog], units: int, seed: int, started: float
) -> tuple[dict[str, float], HiddenParameters | None]:
    """The ROUNDS rounds of training: the linear weights learned (linear model), or the fitted
    feed-forward parameters (`units` > 0)."""
    model = LinkModel({})
    weights = np.zeros(len(NAMES))
    learned: dict[str, float] = {}
    hidden = HiddenParameters(units, seed) if units else None
    for round_number in range(1, ROUNDS + 1):
        dataset = build(logs, model)
        print(
            f"round {round_number}: {len(dataset.decision_starts)} decisions, "
            f"{len(dataset.row_starts)} options, {len(NAMES)} features "
            f"({time.monotonic() - started:.1f} s)",
            file=sys.stderr,
        )
        if hidden is not None:
            epochs = HIDDEN_EPOCHS if round_number == 1 else HIDDEN_EPOCHS_LATER
            train_hidden(dataset, hidden, epochs)
            model = hidden.model()
            continue
        weights = train(dataset, weights, STEPS if round_number == 1 else STEPS_LATER)
        learned = {name: round(float(weights[i]), 4) for i, name in enumerate(NAMES)}
        model = LinkModel(learned)
    return learned, hidden


def hidden_document(hidden: HiddenParameters) -> dict[str, Any]:
    """weights.json of one feed-forward model, SELF_BIAS added."""
    shipped = hidden.model(SELF_BIAS)
    assert shipped.hidden is not None
    units = len(shipped.hidden.biases)
    learned = {name: round(float(shipped.table[i, units]), 4) for i, name in enumerate(NAMES)}
    layer = {
        "units": units,
        "epochs": HIDDEN_EPOCHS,
        "epochs_later": HIDDEN_EPOCHS_LATER,
        "batch": HIDDEN_BATCH,
        "learning_rate": HIDDEN_LEARNING_RATE,
        "seed": hidden.seed,
        "biases": list(shipped.hidden.biases),
        "outputs": list(shipped.hidden.outputs),
        "inputs": dict(sorted(shipped.hidden.inputs.items())),
    }
    return {
        "about": "disentanglement link weights (linear + one tanh layer); made by "
        "scripts/train_disentangle.py --hidden from the train split of Kummerfeld et al. "
        "2019 (data CC-BY-4.0)",
        "rounds": ROUNDS,
        "l2": L2,
        "self_bias": SELF_BIAS,
        "weights": dict(sorted(learned.items())),
        "hidden": layer,
    }


def ensemble_document(members: list[dict[str, Any]]) -> dict[str, Any]:
    """One feed-forward model whose score is the mean of the members' scores: the mean of their
    linear weights, their hidden units side by side, each unit's output weight divided by the
    number of members (exact: the score is linear in the output weights)."""
    count = len(members)
    names = sorted({name for member in members for name in member["weights"]})
    weights = {
        name: round(sum(m["weights"].get(name, 0.0) for m in members) / count, 4) for name in names
    }
    layers = [member["hidden"] for member in members]
    input_names = sorted({name for layer in layers for name in layer["inputs"]})
    inputs = {
        name: [
            value for layer in layers for value in layer["inputs"].get(name, [0.0] * layer["units"])
        ]
        for name in input_names
    }
    first = members[0]
    return {
        "about": f"disentanglement link weights: the mean score of {count} feed-forward models "
        "(linear + one tanh layer) trained with different seeds; made by "
        "scripts/train_disentangle.py --hidden --seeds from the train split of Kummerfeld et "
        "al. 2019 (data CC-BY-4.0)",
        "rounds": first["rounds"],
        "l2": first["l2"],
        "self_bias": first["self_bias"],
        "seeds": [layer["seed"] for layer in layers],
        "weights": weights,
        "hidden": {
            **{key: first["hidden"][key] for key in ("epochs", "epochs_later", "batch")},
            "learning_rate": first["hidden"]["learning_rate"],
            "units": sum(layer["units"] for layer in layers),
            "members": count,
            "biases": [value for layer in layers for value in layer["biases"]],
            "outputs": [round(value / count, 5) for layer in layers for value in layer["outputs"]],
            "inputs": inputs,
        },
    }


def write_ensemble(out: Path, members: list[dict[str, Any]]) -> None:
    out.write_text(json.dumps(ensemble_document(members), indent=1) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=WEIGHTS_PATH)
    parser.add_argument(
        "--hold-out-every",
        type=int,
        default=0,
        metavar="N",
        help="fit on the train files but every N-th, score those, write nothing",
    )
    parser.add_argument("--hold-out-offset", type=int, default=0, metavar="K")
    parser.add_argument("--seed", type=int, default=HIDDEN_SEED, help="random seed of --hidden")
    parser.add_argument(
        "--seeds",
        type=lambda text: [int(part) for part in text.split(",")],
        default=None,
        metavar="S1,S2,...",
        help="with --hidden: train one model per seed, write their mean-score ensemble",
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the ensemble of models already written by --hidden --seed S --out FILE "
        "(the same file --seeds writes, with the members trained in parallel)",
    )
    parser.add_argument(
        "--hidden",
        type=int,
        default=0,
        metavar="H",
        help="add H tanh units to the linear score (a feed-forward model)",
    )
    args = parser.parse_args()
    started = time.monotonic()
    if args.merge:
        members = [json.loads(path.read_text(encoding="utf-8")) for path in args.merge]
        write_ensemble(args.out, members)
        print(f"wrote {args.out}", file=sys.stderr)
        return 0
    if args.seeds and not args.hidden:
        parser.error("--seeds needs --hidden")
    logs = read_split(args.data, "train")
    held: list[AnnotatedLog] = []
    if args.hold_out_every:
        logs, held = held_out_split(logs, args.hold_out_every, args.hold_out_offset)
    if args.seeds:
        members = [fit(logs, args.hidden, seed, started)[1] for seed in args.seeds]
        write_ensemble(args.out, [hidden_document(member) for member in members if member])
        print(f"wrote {args.out} ({time.monotonic() - started:.1f} s)", file=sys.stderr)
        return 0
    learned, hidden = fit(logs, args.hidden, args.seed, started)
    if held:
        report_held_out(learned, held, hidden)
        return 0
    if hidden is not None:
        document = hidden_document(hidden)
        args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out} ({time.monotonic() - started:.1f} s)", file=sys.stderr)
        return 0
    learned = with_self_bias(learned, SELF_BIAS)
    document = {
        "about": "disentanglement link weights; made by scripts/train_disentangle.py from the "
        "train split of Kummerfeld et al. 2019 (data CC-BY-4.0)",
        "rounds": ROUNDS,
        "steps": STEPS,
        "steps_later": STEPS_LATER,
        "learning_rate": LEARNING_RATE,
        "l2": L2,
        "self_bias": SELF_BIAS,
        "weights": dict(sorted(learned.items())),
    }
    args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({time.monotonic() - started:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
