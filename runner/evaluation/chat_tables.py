"""The chat evaluation as `EvalSection`s (per field, per window, grounding) and as a JSON detail
of the misses, so a reader can see what was not found and what was found but not annotated."""

from __future__ import annotations

from functools import reduce
from typing import Any

from runner.evaluation.chat import ChatEvaluation, PipelineOptions, WindowScore
from runner.evaluation.matching import SCORED_FIELDS, ScoredItem
from runner.evaluation.scoring import Counts, Grounding
from runner.evaluation.tables import NOT_DEFINED, Cell, EvalSection


def ratio(value: float | None) -> Cell:
    return NOT_DEFINED if value is None else round(value, 4)


def _prf(counts: Counts) -> list[Cell]:
    return [ratio(counts.precision), ratio(counts.recall), ratio(counts.f1)]


def field_totals(evaluation: ChatEvaluation) -> dict[str, tuple[Counts, Counts]]:
    """Micro-summed (strict, lenient) counts of each field over all windows."""
    totals: dict[str, tuple[Counts, Counts]] = {}
    for name in SCORED_FIELDS:
        strict = sum((w.fields[name].counts for w in evaluation.windows), Counts())
        lenient = sum((w.fields[name].lenient for w in evaluation.windows), Counts())
        totals[name] = (strict, lenient)
    return totals


def fields_section(
    evaluation: ChatEvaluation, options: PipelineOptions, extractor: str
) -> EvalSection:
    totals = field_totals(evaluation)
    rows: list[list[Cell]] = []
    for name, (strict, lenient) in totals.items():
        rows.append(
            [
                name,
                strict.gold,
                strict.extracted,
                strict.matched,
                *_prf(strict),
                ratio(lenient.recall),
            ]
        )
    overall = reduce(lambda a, b: a + b, (s for s, _ in totals.values()), Counts())
    overall_lenient = reduce(
        lambda a, b: a + b, (lenient for _, lenient in totals.values()), Counts()
    )
    rows.append(
        [
            "overall",
            overall.gold,
            overall.extracted,
            overall.matched,
            *_prf(overall),
            ratio(overall_lenient.recall),
        ]
    )
    owners = [w.fields["action_items"].owner_agreement for w in evaluation.windows]
    same, with_owner = sum(o[0] for o in owners), sum(o[1] for o in owners)
    notes = [
        f"extractor {extractor}; {len(evaluation.windows)} window(s); chunk_tokens "
        f"{options.chunk_tokens}; micro-averaged over windows (overall: over fields too)",
        f"match: cited messages overlap and token-set F1 >= {options.threshold} (links: same "
        "URL; artifacts: overlapping span); one-to-one, greedy by similarity",
        "R@msgs: recall when only the cited messages must overlap (text ignored)",
        f"action-item owners agree on {same} of {with_owner} matched items with a gold owner",
    ]
    notes += [f"skipped {name}: {reason}" for name, reason in evaluation.skipped]
    columns = ["field", "gold", "extracted", "matched", "P", "R", "F1", "R@msgs"]
    return EvalSection("Chat gold set: per field", columns, rows, notes)


def windows_section(evaluation: ChatEvaluation) -> EvalSection:
    rows: list[list[Cell]] = []

    def total(windows: list[WindowScore]) -> Counts:
        return sum((f.counts for w in windows for f in w.fields.values()), Counts())

    for window in evaluation.windows:
        counts = total([window])
        rows.append(
            [
                window.name,
                window.messages,
                window.chunks,
                counts.gold,
                counts.extracted,
                counts.matched,
                *_prf(counts),
                round(window.seconds, 3),
            ]
        )
    # The sample channel was written alongside the offline rules, so its figures are optimistic;
    # the real-data subtotal is the closer estimate for other people's chats.
    subtotals = [
        ("all windows", evaluation.windows),
        ("real-data windows", [w for w in evaluation.windows if w.real_data]),
    ]
    for label, windows in subtotals:
        if windows:
            counts = total(windows)
            rows.append(
                [
                    label,
                    sum(w.messages for w in windows),
                    sum(w.chunks for w in windows),
                    counts.gold,
                    counts.extracted,
                    counts.matched,
                    *_prf(counts),
                    round(sum(w.seconds for w in windows), 3),
                ]
            )
    columns = [
        "window",
        "messages",
        "chunks",
        "gold",
        "extracted",
        "matched",
        "P",
        "R",
        "F1",
        "seconds",
    ]
    notes = [
        "real-data windows: third-party chats from ../shared/data; the sample channel was "
        "written with the offline rules, so its figures are optimistic"
    ]
    return EvalSection("Chat gold set: per window", columns, rows, notes)


def grounding_section(evaluation: ChatEvaluation, min_overlap: float) -> EvalSection:
    rows: list[list[Cell]] = []

    def row(name: str, g: Grounding, rejected_map: int) -> list[Cell]:
        return [
            name,
            g.pointers_stored,
            ratio(g.verbatim_share),
            g.pointers_reanchored,
            g.pointers_rejected,
            g.claims_emitted,
            ratio(g.claims_pass_share),
            f"{g.claims_rechecked}/{g.claims_passed}",
            rejected_map,
        ]

    for window in evaluation.windows:
        rows.append(row(window.name, window.grounding, window.map_rejections))
    if evaluation.windows:
        total = reduce(lambda a, b: a + b, (w.grounding for w in evaluation.windows))
        rows.append(row("all", total, sum(w.map_rejections for w in evaluation.windows)))
    columns = [
        "window",
        "pointers",
        "verbatim",
        "re-anchored",
        "ptr rejected",
        "claims",
        "claims pass",
        "re-checked",
        "map rejected",
    ]
    notes = [
        "verbatim: share of stored pointers whose normalized_text[start:end] is their quote "
        "(must be 1.000)",
        f"claims pass: share of synthesized claims emitted by the reduce step that passed the "
        f"citation and >= {min_overlap:.0%} word-overlap check; re-checked: stored claims whose "
        "overlap this evaluator recomputes as passing",
        "map rejected: items the validator dropped from chunk summaries before the reduce step",
    ]
    return EvalSection("Chat gold set: grounding", columns, rows, notes)


def chat_sections(
    evaluation: ChatEvaluation, options: PipelineOptions, extractor: str
) -> list[EvalSection]:
    return [
        fields_section(evaluation, options, extractor),
        windows_section(evaluation),
        grounding_section(evaluation, options.min_overlap),
    ]


def _item_json(item: ScoredItem) -> dict[str, Any]:
    data: dict[str, Any] = {"text": item.text[:300], "message_ids": sorted(item.message_ids)}
    if item.span is not None:
        data["span"] = [item.span.char_start, item.span.char_end]
    if item.owner:
        data["owner"] = item.owner
    return data


def chat_details(evaluation: ChatEvaluation) -> dict[str, Any]:
    """Per window and field: the gold items nothing matched and the extracted items that
    matched no gold item (read these to see what the misses look like)."""
    return {
        "windows": [
            {
                "name": window.name,
                "gold_file": str(window.gold_path),
                "messages": window.messages,
                "missed": {n: [_item_json(i) for i in f.missed] for n, f in window.fields.items()},
                "unmatched_extracted": {
                    n: [_item_json(i) for i in f.spurious] for n, f in window.fields.items()
                },
            }
            for window in evaluation.windows
        ],
        "skipped": [{"name": name, "reason": reason} for name, reason in evaluation.skipped],
    }
