"""Fit and check the conversation importance weights (runner/extract/offline/importance.py).

    .venv/bin/python scripts/fit_importance.py [--gold docs/gold-set] [--data ../shared/data]

Every gold window is threaded as `digestd eval` threads it (`thread_window`); each conversation
of two or more messages is one example, labelled important when the annotators cited at least
two of its messages (or all of a two-message one) as a topic, decision, action item or open
question. Logistic regression on `importance.FEATURES` (L2 0.5, full-batch gradient descent
from zero, fixed steps: the same data gives the same weights).

Prints the weights fitted on all windows (rounded, to copy into importance.py), then for each
window the figures of weights fitted on the OTHER windows only (leave-one-window-out) beside
those of the shipped weights: AUC, and precision of the conversations the product would tell
(score >= OVERVIEW_MIN, opening not noise) and of the top 3. Needs numpy only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runner.conversations.threads import thread_window
from runner.core.window import WindowMessage
from runner.evaluation.gold import GoldFile, load_gold_dir
from runner.evaluation.windows import Roots, WindowUnavailable, load_window
from runner.extract.offline import importance as model

L2 = 0.5
STEPS = 3000
RATE = 0.1


def _conversations(window_messages: tuple[WindowMessage, ...]) -> list[list[WindowMessage]]:
    groups: dict[str, list[WindowMessage]] = {}
    for message in window_messages:
        groups.setdefault(str(message.conversation), []).append(message)
    return [sorted(g, key=lambda m: m.ts) for g in groups.values() if len(g) >= 2]


def _cited(gold: GoldFile) -> set[str]:
    ids: set[str] = set()
    for topic in gold.topics:
        ids.update(topic.message_ids)
    for items in (gold.decisions, gold.action_items, gold.open_questions):
        for item in items:
            ids.update(item.message_ids)
    return ids


def examples(gold: GoldFile, roots: Roots) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Features, labels, shipped scores and noise-opening flags of a window's conversations."""
    window = thread_window(load_window(gold, roots))
    conversations = _conversations(window.messages)
    keys = {m.message_id: str(m.conversation) for m in window.messages}
    helper_names = model.helpers(window.messages, keys)
    cited = _cited(gold)
    rows, labels, shipped, noisy = [], [], [], []
    for members in conversations:
        found = model.importance(members, helper_names)
        rows.append([found.features[name] for name in model.FEATURES])
        hits = sum(1 for m in members if m.message_id in cited)
        labels.append(1.0 if hits >= min(2, len(members)) else 0.0)
        shipped.append(found.score)
        noisy.append(found.noise_opening)
    return np.array(rows), np.array(labels), np.array(shipped), np.array(noisy, dtype=bool)


def fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    weights = np.zeros(x.shape[1])
    bias = 0.0
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-(x @ weights + bias)))
        grad = x.T @ (p - y) / len(y) + L2 * weights / len(y)
        weights -= RATE * grad
        bias -= RATE * float(np.mean(p - y))
    return weights, bias


def auc(scores: np.ndarray, labels: np.ndarray) -> float | None:
    pos, neg = scores[labels == 1], scores[labels == 0]
    if not len(pos) or not len(neg):
        return None
    wins = sum(float(np.sum(p > neg)) + 0.5 * float(np.sum(p == neg)) for p in pos)
    return wins / (len(pos) * len(neg))


def _told(scores: np.ndarray, noisy: np.ndarray, labels: np.ndarray) -> str:
    told = (scores >= model.OVERVIEW_MIN) & ~noisy
    if not told.any():
        return "  -  (0)"
    return f"{labels[told].mean():.2f} ({int(told.sum())})"


def _top(scores: np.ndarray, labels: np.ndarray, k: int = 3) -> float:
    order = np.argsort(-scores, kind="stable")[:k]
    return float(labels[order].mean()) if len(order) else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gold", type=Path, default=ROOT / "docs" / "gold-set")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    roots = Roots(repo=ROOT, data=args.data)
    windows: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
    for _, gold in load_gold_dir(args.gold):
        try:
            windows[gold.name] = examples(gold, roots)
        except WindowUnavailable as reason:
            print(f"skipped {gold.name}: {reason}")
    if not windows:
        print("no gold window could be read")
        return 1
    x = np.vstack([w[0] for w in windows.values()])
    y = np.concatenate([w[1] for w in windows.values()])
    weights, bias = fit(x, y)
    print(f"{len(y)} conversations, {int(y.sum())} important")
    print(f"BIAS = {bias:.2f}")
    for name, weight in zip(model.FEATURES, weights, strict=True):
        print(f"    {name!r}: {weight:.2f},")
    header = "window                            n  pos  AUC(held-out)  AUC(shipped)  told P(held-out)  told P(shipped)  top3(held-out)  top3(shipped)"
    print(header)
    for name, (wx, wy, shipped, noisy) in windows.items():
        others = [w for n, w in windows.items() if n != name]
        ow, ob = fit(np.vstack([o[0] for o in others]), np.concatenate([o[1] for o in others]))
        held = wx @ ow + ob
        held_auc, shipped_auc = auc(held, wy), auc(shipped, wy)
        print(
            f"{name:32} {len(wy):2} {int(wy.sum()):4}  "
            f"{'-' if held_auc is None else f'{held_auc:.2f}':>13}  "
            f"{'-' if shipped_auc is None else f'{shipped_auc:.2f}':>12}  "
            f"{_told(held, noisy, wy):>16}  {_told(shipped, noisy, wy):>15}  "
            f"{_top(held, wy):14.2f}  {_top(shipped, wy):13.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
