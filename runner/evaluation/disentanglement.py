"""`digestd eval` section: the link model beside the paper's two heuristic baselines on the dev
split of the Ubuntu IRC disentanglement corpus (Kummerfeld and others, ACL 2019), with the
paper's metrics (see `runner.evaluation.disentanglement_metrics` for their definitions).

Every system reads each whole log (context lines included, so names and recent speakers are
known) and is scored on the annotated messages only. The model's weights come from the train
split (scripts/train_disentangle.py); dev is never used to fit or tune anything.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.conversations.disentangle import link
from runner.conversations.disentangle.baselines import lowe_links, previous_links
from runner.conversations.disentangle.corpus import CORPUS_DIR, AnnotatedLog, read_split
from runner.conversations.disentangle.message import Message
from runner.evaluation.disentanglement_metrics import (
    Prf,
    conversations,
    exact_match,
    link_prf,
    links_from_parents,
    one_to_one_overlap,
    variation_of_information,
)
from runner.evaluation.tables import Cell, EvalSection

Linker = Callable[[Sequence[Message]], list[int | None]]

SYSTEMS: tuple[tuple[str, Linker], ...] = (
    ("link model", link),
    ("previous (baseline)", previous_links),
    ("Lowe et al. 2017 (baseline)", lowe_links),
)

TITLE = "Disentanglement on Ubuntu IRC dev"


@dataclass(frozen=True)
class SystemScore:
    name: str
    messages: int
    links: Prf
    vi: float  # 1 - VI / log2(n)
    one_to_one: float
    exact: Prf
    seconds: float


def score_system(name: str, linker: Linker, logs: list[AnnotatedLog]) -> SystemScore:
    links = Prf(0, 0, 0)
    exact = Prf(0, 0, 0)
    pairs = []
    overlap = 0
    scored = 0
    seconds = 0.0
    for log in logs:
        started = time.process_time()  # CPU time: one core, however loaded the machine is
        parents = linker(log.messages)
        seconds += time.process_time() - started
        predicted = links_from_parents(parents, log.first_scored)
        links += link_prf(log.gold, predicted)
        gold_conversations = conversations(log.gold)
        predicted_conversations = conversations(predicted)
        pairs.append((gold_conversations, predicted_conversations))
        overlap += one_to_one_overlap(gold_conversations, predicted_conversations)
        exact += exact_match(gold_conversations, predicted_conversations)
        scored += len(log.gold)
    return SystemScore(
        name,
        sum(len(log.messages) for log in logs),
        links,
        variation_of_information(pairs),
        overlap / scored if scored else 0.0,
        exact,
        seconds,
    )


def score_dev(data_dir: Path) -> list[SystemScore]:
    logs = read_split(data_dir, "dev")
    if not logs:
        raise FileNotFoundError(f"no annotated logs under {data_dir / CORPUS_DIR / 'dev'}")
    return [score_system(name, linker, logs) for name, linker in SYSTEMS]


def _row(score: SystemScore) -> list[Cell]:
    def r(value: float) -> float:
        return round(value, 4)

    return [
        score.name,
        r(score.links.precision),
        r(score.links.recall),
        r(score.links.f1),
        r(score.vi),
        r(score.one_to_one),
        r(score.exact.precision),
        r(score.exact.recall),
        r(score.exact.f1),
        round(score.messages / score.seconds) if score.seconds else 0,
    ]


def disentanglement_section(scores: list[SystemScore], logs: int) -> EvalSection:
    scored = scores[0].links.gold if scores else 0
    return EvalSection(
        title=TITLE,
        columns=[
            "system",
            "link P",
            "link R",
            "link F1",
            "1-VI",
            "1-1",
            "exact P",
            "exact R",
            "exact F1",
            "msg/s",
        ],
        rows=[_row(score) for score in scores],
        notes=[
            f"{logs} dev logs of Kummerfeld et al. 2019 ({scores[0].messages if scores else 0} "
            f"lines read, {scored} gold links on the annotated messages); weights learned on the "
            "train split only (scripts/train_disentangle.py)",
            "links: P/R/F1 over (message, parent) pairs, a self-link for a conversation start; "
            "1-VI: 1 - VI/log2(n) (the paper's scaled VI); 1-1: one-to-one overlap; exact: "
            "conversations of 2+ messages found exactly",
            "published on the test split (not dev): link F1 linear 63.5, feed-forward 72.3; "
            "VI / 1-1 / exact F1 Elsner & Charniak 82.1 / 51.4 / 15.5, Lowe 80.6 / 53.7 / 8.9, "
            "previous 66.1 / 27.6 / 0.0, feed-forward 91.3 / 75.6 / 36.2",
            "msg/s: lines linked per CPU second of this process in this run (all lines, one core, "
            "numpy for the hidden layer; bench/disentangle.py measures it properly)",
        ],
    )


def evaluate_disentanglement(data_dir: Path) -> EvalSection:
    """The disentanglement section of `digestd eval` over the dev split under `data_dir`."""
    logs = read_split(data_dir, "dev")
    if not logs:
        raise FileNotFoundError(f"no annotated logs under {data_dir / CORPUS_DIR / 'dev'}")
    return disentanglement_section([score_system(n, f, logs) for n, f in SYSTEMS], len(logs))
