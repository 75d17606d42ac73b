"""Leave-one-source-out: every figure of the chat gold set beside the figure it gets when the
learned parts never saw the window's source.

For each source family (`item_data.source_of`) the item models are fitted on the windows of the
other sources and the held-out source's windows are digested with them; the held-out figures
of all sources are then summed (micro). Five configurations are run on every window:
- rules: the offline extractor without learned decisions (nothing is trained, so its held-out
  figure is its in-sample figure);
- each learned mode (filter, propose; see item_model.MODES), in-sample (the models fitted on
  every window) and held out (fitted without the window's source).
The shipped weights decide each kind in one mode (scripts/train_items.py picks the mode with the
best held-out F1), so the shipped figures per kind are those of that mode's runs. Topics, links and artifacts are rule-based
and not trained: their held-out figure equals the in-sample one, and the table says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce

from runner.conversations.threads import thread_window
from runner.core.extractor import Extractor
from runner.core.window import Window
from runner.digests.pipeline import run_pipeline
from runner.evaluation.chat import PipelineOptions
from runner.evaluation.gold import GoldFile, WindowRoot
from runner.evaluation.item_data import LabelledWindow, training_examples, window_examples
from runner.evaluation.item_data import source_of as source_of
from runner.evaluation.matching import SCORED_FIELDS
from runner.evaluation.scoring import Counts, score_fields
from runner.evaluation.tables import NOT_DEFINED, Cell, EvalSection
from runner.evaluation.windows import (
    Roots,
    WindowUnavailable,
    check_gold_against_window,
    load_window,
)
from runner.extract.offline import OfflineExtractor
from runner.extract.offline.item_model import (
    FILTER_MODE,
    KINDS,
    PROPOSE_MODE,
    RULES_MODE,
    ItemModel,
    fit,
)

RULES = "rules"
LEARNED_MODES = (FILTER_MODE, PROPOSE_MODE)


def config_name(mode: str, held_out: bool) -> str:
    """The run of one learned mode: "filter/in" (fitted on every window) or "filter/out"
    (fitted without the window's source); the rules' run is "rules"."""
    if mode == RULES_MODE:
        return RULES
    return f"{mode}/{'out' if held_out else 'in'}"


MIN_GOLD = 10  # gold items of a kind on held-out real windows before a model may decide it
MIN_GAIN = 0.02  # held-out F1 a model must gain over the rules to decide a kind
CONFIGS = (RULES, *(config_name(m, h) for m in LEARNED_MODES for h in (False, True)))


@dataclass
class WindowRuns:
    """One window's counts per configuration and field."""

    name: str
    source: str
    real_data: bool
    counts: dict[str, dict[str, Counts]] = field(default_factory=dict)  # config -> field -> Counts


@dataclass
class LosoEvaluation:
    windows: list[WindowRuns]
    modes: Mapping[str, str]  # kind -> the shipped mode


def split_by_source(names_sources: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """source -> the window names of that source, sources and names in first-seen order."""
    groups: dict[str, list[str]] = {}
    for name, source in names_sources:
        groups.setdefault(source, []).append(name)
    return groups


def shipped_counts(runs: WindowRuns, modes: Mapping[str, str], held_out: bool) -> dict[str, Counts]:
    """The shipped extractor's counts per field: each kind's counts from its mode's run (the
    kinds are decided independently; untrained fields come from the rules' run)."""
    return {
        name: runs.counts[config_name(modes.get(name, RULES_MODE), held_out)][name]
        for name in SCORED_FIELDS
    }


def held_out_f1(runs: Sequence[WindowRuns], kind: str, mode: str) -> float:
    """F1 of `kind` over `runs` when decided in `mode` with each source held out."""
    counts = reduce(
        lambda a, b: a + b, (r.counts[config_name(mode, True)][kind] for r in runs), Counts()
    )
    return counts.f1 or 0.0


def choose_modes(runs: Sequence[WindowRuns]) -> dict[str, str]:
    """Per kind, the mode with the best held-out F1 on the real-data windows (all windows when
    there are none). A model replaces the rules only where that says something: the kind has
    at least MIN_GOLD gold items there and the model gains at least MIN_GAIN F1 (with fewer
    items one item decides; the rules win otherwise)."""
    real = [r for r in runs if r.real_data] or list(runs)
    modes: dict[str, str] = {}
    for kind in KINDS:
        gold = sum(r.counts[RULES][kind].gold for r in real)
        rules_f1 = held_out_f1(real, kind, RULES_MODE)
        best, best_f1 = RULES_MODE, rules_f1 + MIN_GAIN
        for mode in LEARNED_MODES:
            f1 = held_out_f1(real, kind, mode)
            if gold >= MIN_GOLD and f1 >= best_f1 - 1e-9:
                best, best_f1 = mode, f1
        modes[kind] = best
    return modes


def total(counts: Mapping[str, Counts]) -> Counts:
    return reduce(lambda a, b: a + b, counts.values(), Counts())


def _f1(counts: Counts) -> Cell:
    return NOT_DEFINED if counts.f1 is None else round(counts.f1, 4)


PerField = Callable[[WindowRuns], Mapping[str, Counts]]


def _config(name: str) -> PerField:
    return lambda runs: runs.counts[name]


def _shipped(modes: Mapping[str, str], held_out: bool) -> PerField:
    return lambda runs: shipped_counts(runs, modes, held_out)


def scope_counts(runs: Sequence[WindowRuns], kind: str, per_field: PerField) -> Counts:
    """Micro-summed counts of `kind` ("overall": every field) over `runs`."""
    summed = Counts()
    for window in runs:
        counts = per_field(window)
        summed = summed + (total(counts) if kind == "overall" else counts[kind])
    return summed


def loso_rows(evaluation: LosoEvaluation) -> list[list[Cell]]:
    """Per source (then every source, then the real-data sources) and per kind (then overall):
    gold; rules F1; each learned mode's F1 in-sample and held out; the shipped mode and its F1
    in-sample and held out."""
    groups = split_by_source([(w.name, w.source) for w in evaluation.windows])
    by_name = {w.name: w for w in evaluation.windows}
    scopes: list[tuple[str, list[WindowRuns]]] = [
        (source, [by_name[n] for n in names]) for source, names in groups.items()
    ]
    scopes.append(("all sources", list(evaluation.windows)))
    scopes.append(("real-data sources", [w for w in evaluation.windows if w.real_data]))
    modes = evaluation.modes
    rows: list[list[Cell]] = []
    for scope, runs in scopes:
        if not runs:
            continue
        for kind in (*SCORED_FIELDS, "overall"):
            trained = kind in KINDS or kind == "overall"
            rules = scope_counts(runs, kind, _config(RULES))
            learned: list[Cell] = []
            for mode in LEARNED_MODES:
                for held_out in (False, True):
                    if trained:
                        name = config_name(mode, held_out)
                        learned.append(_f1(scope_counts(runs, kind, _config(name))))
                    else:
                        learned.append("= in-sample" if held_out else "not trained")
            rows.append(
                [
                    scope,
                    kind,
                    rules.gold,
                    _f1(rules),
                    *learned,
                    modes.get(kind, RULES_MODE) if kind != "overall" else "per kind",
                    _f1(scope_counts(runs, kind, _shipped(modes, False))),
                    _f1(scope_counts(runs, kind, _shipped(modes, True))),
                ]
            )
    return rows


def loso_section(evaluation: LosoEvaluation) -> EvalSection:
    columns = [
        "source",
        "kind",
        "gold",
        "rules",
        "filter in",
        "filter out",
        "propose in",
        "propose out",
        "shipped mode",
        "shipped in",
        "shipped out",
    ]
    sources = split_by_source([(w.name, w.source) for w in evaluation.windows])
    notes = [
        "F1 per source and kind; out: the item models fitted without the window's source "
        "(leave-one-source-out), in: fitted on every window (in-sample)",
        "rules: the offline rules alone; nothing is trained, so held-out = in-sample",
        "filter: the model keeps or drops the rules' items; propose: it also adds items for "
        "messages the rules missed",
        "topics, links, artifacts: rule-based, not trained: held-out = in-sample",
        "shipped mode: how runner/extract/offline/item_weights.json decides the kind "
        "(scripts/train_items.py picks the best held-out mode on the real-data windows, so "
        "'shipped out' is optimistic by that one choice among three)",
        "sources: "
        + "; ".join(f"{source} ({len(names)} window(s))" for source, names in sources.items()),
    ]
    return EvalSection("Chat gold set: leave-one-source-out", columns, loso_rows(evaluation), notes)


async def _run(
    window: Window, gold: GoldFile, model: ItemModel, options: PipelineOptions
) -> dict[str, Counts]:
    extractor: Extractor = OfflineExtractor(model)
    result = await run_pipeline(
        window,
        extractor,
        chunk_tokens=options.chunk_tokens,
        min_overlap=options.min_overlap,
        concurrency=options.concurrency,
    )
    scores = score_fields(gold, result.digest, options.threshold)
    return {name: score.counts for name, score in scores.items()}


@dataclass(frozen=True)
class LoadedWindow:
    gold: GoldFile
    window: Window  # threaded, as the pipeline reads it
    labelled: LabelledWindow


def load_labelled(golds: Sequence[tuple[object, GoldFile]], roots: Roots) -> list[LoadedWindow]:
    """The gold windows whose data is present, threaded and turned into examples."""
    loaded: list[LoadedWindow] = []
    for _path, gold in golds:
        try:
            window = load_window(gold, roots)
        except WindowUnavailable:
            continue
        if check_gold_against_window(gold, window):
            continue  # the main evaluation reports a broken gold file
        threaded = thread_window(window)
        labelled = LabelledWindow(gold.name, source_of(gold), window_examples(gold, window))
        loaded.append(LoadedWindow(gold, threaded, labelled))
    return loaded


async def evaluate_loso(
    loaded: Sequence[LoadedWindow], options: PipelineOptions, modes: Mapping[str, str]
) -> LosoEvaluation:
    """Every window in every configuration (CONFIGS); `modes` are the shipped modes."""
    labelled = [w.labelled for w in loaded]
    sources = split_by_source([(w.name, w.source) for w in labelled])
    in_sample: dict[str, ItemModel] = {}
    held_out: dict[tuple[str, str], ItemModel] = {}
    for mode in LEARNED_MODES:
        everywhere = dict.fromkeys(KINDS, mode)
        in_sample[mode] = fit(training_examples(labelled, None), everywhere)
        for source in sources:
            held_out[mode, source] = fit(training_examples(labelled, source), everywhere)
    runs: list[WindowRuns] = []
    for item in loaded:
        source = item.labelled.source
        window_runs = WindowRuns(item.gold.name, source, item.gold.window.root == WindowRoot.DATA)
        window_runs.counts[RULES] = await _run(item.window, item.gold, ItemModel(), options)
        for mode in LEARNED_MODES:
            for held, model in ((False, in_sample[mode]), (True, held_out[mode, source])):
                window_runs.counts[config_name(mode, held)] = await _run(
                    item.window, item.gold, model, options
                )
        runs.append(window_runs)
    return LosoEvaluation(runs, modes)


def run_loso(
    golds: Sequence[tuple[object, GoldFile]],
    roots: Roots,
    options: PipelineOptions,
    modes: Mapping[str, str],
) -> LosoEvaluation:
    return asyncio.run(evaluate_loso(load_labelled(golds, roots), options, modes))
