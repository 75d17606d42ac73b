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
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from runner.evaluation.disentanglement_product import ParentReader

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


def score_parents(
    name: str, logs: list[AnnotatedLog], parents: list[list[int | None]], seconds: float
) -> SystemScore:
    """Each log's parents (one per line, None: starts a conversation) scored against its gold."""
    links = Prf(0, 0, 0)
    exact = Prf(0, 0, 0)
    pairs = []
    overlap = 0
    scored = 0
    for log, log_parents in zip(logs, parents, strict=True):
        predicted = links_from_parents(log_parents, log.first_scored)
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


def run_system(linker: Linker, logs: list[AnnotatedLog]) -> tuple[list[list[int | None]], float]:
    """`linker` over every whole log: its parents, and the CPU seconds it took (one core,
    however loaded the machine is)."""
    parents = []
    seconds = 0.0
    for log in logs:
        started = time.process_time()
        parents.append(linker(log.messages))
        seconds += time.process_time() - started
    return parents, seconds


def score_system(name: str, linker: Linker, logs: list[AnnotatedLog]) -> SystemScore:
    parents, seconds = run_system(linker, logs)
    return score_parents(name, logs, parents, seconds)


def score_dev(data_dir: Path) -> list[SystemScore]:
    logs = read_split(data_dir, "dev")
    if not logs:
        raise FileNotFoundError(f"no annotated logs under {data_dir / CORPUS_DIR / 'dev'}")
    return [score_system(name, linker, logs) for name, linker in SYSTEMS]


PRODUCT = "link model through the product"


@dataclass(frozen=True)
class SplitScores:
    """One split's systems, and how far the product's parents are from the model's on the
    files: `differing` of the `scored` annotated messages have another parent (None: the
    product path was not run)."""

    label: str
    logs: int
    scores: list[SystemScore]
    differing: int | None = None
    scored: int = 0


def score_split(
    data_dir: Path,
    split: str,
    label: str,
    systems: tuple[tuple[str, Linker], ...],
    read_parents: ParentReader | None,
) -> SplitScores:
    """`systems` on the whole logs of `split`, and the first of them as a user
    gets it when `read_parents` reads the API: imported, digested and read back
    (`runner.evaluation.disentanglement_product`)."""
    logs = read_split(data_dir, split)
    if not logs:
        raise FileNotFoundError(f"no annotated logs under {data_dir / CORPUS_DIR / split}")
    runs = [(name, *run_system(linker, logs)) for name, linker in systems]
    scores = [score_parents(name, logs, parents, seconds) for name, parents, seconds in runs]
    if read_parents is None:
        return SplitScores(label, len(logs), scores)
    # Imported here: the product path needs the database and the worker.
    from runner.evaluation.disentanglement_product import product_parents

    started = time.monotonic()
    by_log = product_parents(logs, data_dir, split, read_parents)
    through = [by_log[log.name] for log in logs]
    seconds = time.monotonic() - started
    scores.insert(1, score_parents(PRODUCT, logs, through, seconds))
    library = runs[0][1]
    differing = sum(
        a[i] != b[i]
        for log, a, b in zip(logs, library, through, strict=True)
        for i in range(log.first_scored, len(log.messages))
    )
    scored = sum(len(log.messages) - log.first_scored for log in logs)
    return SplitScores(label, len(logs), scores, differing, scored)


def _row(label: str, score: SystemScore) -> list[Cell]:
    def r(value: float) -> float:
        return round(value, 4)

    return [
        label,
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


def _agreement(split: SplitScores) -> str:
    files, product = split.scores[0], split.scores[1]
    gap = (product.links.f1 - files.links.f1) * 100
    exact_gap = (product.exact.f1 - files.exact.f1) * 100
    return (
        f"{split.label}: the product's parents differ from the model's on the files for "
        f"{split.differing} of {split.scored} annotated messages (link F1 {gap:+.2f} points, "
        f"exact F1 {exact_gap:+.2f}): the importer keeps no system lines (joins, quits, nick "
        "changes), so the model reads only the spoken messages, and reads a 12-hour clock's "
        "12:59 to 01:00 as 12 hours later (the files' reader as 12 hours earlier)"
    )


def disentanglement_section(splits: list[SplitScores]) -> EvalSection:
    first = splits[0]
    scored = first.scores[0].links.gold if first.scores else 0
    notes = [
        f"{first.logs} dev logs of Kummerfeld et al. 2019 ({first.scores[0].messages} lines "
        f"read, {scored} gold links on the annotated messages; each log read whole, its 1,000 "
        "context lines too, and scored on its annotated lines); channel-two: the corpus' "
        "second channel, never trained on; weights learned on the train split only "
        "(scripts/train_disentangle.py)",
        f"{PRODUCT}: each log imported as `digestd import` does, digested by the channel job "
        "(offline extractor) in an embedded PostgreSQL, every `Message.parent` read through "
        "the GraphQL API and mapped back to its line",
        *(_agreement(split) for split in splits if split.differing is not None),
        "links: P/R/F1 over (message, parent) pairs, a self-link for a conversation start; "
        "1-VI: 1 - VI/log2(n) (the paper's scaled VI); 1-1: one-to-one overlap; exact: "
        "conversations of 2+ messages found exactly",
        "published on the test split (not dev): link F1 linear 63.5, feed-forward 72.3, "
        "10-model vote 73.5; VI / 1-1 / exact F1 Elsner & Charniak 82.1 / 51.4 / 15.5, Lowe "
        "80.6 / 53.7 / 8.9, previous 66.1 / 27.6 / 0.0, feed-forward 91.3 / 75.6 / 36.2, "
        "10-model vote exact F1 38.0",
        "msg/s: lines linked per CPU second of this process in this run (all lines, one core); "
        f"for the {PRODUCT}: lines per wall second of import, digest and API read together",
    ]
    return EvalSection(
        title=TITLE,
        columns=[
            "logs",
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
        rows=[_row(split.label, score) for split in splits for score in split.scores],
        notes=notes,
    )


def evaluate_disentanglement(
    data_dir: Path, read_parents: ParentReader | None = None
) -> EvalSection:
    """The disentanglement section of `digestd eval`: the model and the baselines on the dev
    split under `data_dir`, the model through the product (given how to read a channel's
    parents through the API), and both again on channel-two's logs when they are there."""
    splits = [score_split(data_dir, "dev", "dev", SYSTEMS, read_parents)]
    if (data_dir / CORPUS_DIR / "channel-two").is_dir():
        splits.append(
            score_split(
                data_dir, "channel-two", "channel-two (dev, pilot-dev)", SYSTEMS[:1], read_parents
            )
        )
    return disentanglement_section(splits)
