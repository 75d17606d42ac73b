"""Fitting a report's evidence to the writer model's input budget, degrading gracefully when it
does not fit, as plain data: no database, no network.

The units come ranked by `runner.reports.evidence.rank_evidence`. Their priority is question
relevance (the BM25 rank), then recency (a newer message first among equal scores; a document
span has no time and keeps its order). The degradation order when they do not fit:
1. at most `max_units` units go to the model at all (a longer list is noise to a writer that
   cites a few dozen sentences): the rest are dropped (`CONTENT_DROPPED`, reason `unit_cap`);
2. a budget below `MIN_EVIDENCE_TOKENS` is raised to it (`TOKEN_BUDGET_FLOORED`): the request
   then may not fit the model, which the preflight reports before anything is sent;
3. units longer than `TRUNCATED_UNIT_TOKENS` are cut at a word boundary, lowest priority first,
   until the rest fits (`CONTENT_TRUNCATED`): the model sees less of a sentence, the stored
   quote stays the whole unit, and support is still checked against the whole source;
4. the lowest-priority units are dropped until the rest fits (`CONTENT_DROPPED`, `budget_limit`).
No summarization (no `PRIORITY_SUMMARIZED`): a summary is not a quotable span, and every report
sentence must cite exact characters. Every step leaves a fidelity record {phase,
original_tokens, final_tokens, reason}; the ids of the units left out are `dropped_content_ids`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runner.core.tokens import count_tokens
from runner.reports.evidence import Evidence, RankedEvidence
from runner.reports.sources import MessageSource

PHASE = "synthesis"  # the phase name, in fidelity records, of writing the report from its evidence
DEFAULT_MAX_UNITS = 60
MIN_EVIDENCE_TOKENS = 512
TRUNCATED_UNIT_TOKENS = 40
# Tokens a unit costs beyond its text in the request (`<source id="E12" origin="...">` tags).
UNIT_OVERHEAD_TOKENS = 12
TRUNCATION_MARK = "…"


def content_id(unit: Evidence) -> str:
    """A unit's stable id: its message's canonical key plus the span of a message sentence (one
    message may give several units), a document's id, text hash and locator; a digest's claim is its kind and a hash of its text at its
    first cited message (several claims may cite one message)."""
    source = unit.source
    if unit.kind != "sentence":
        digest = hashlib.sha256(unit.text.encode("utf-8")).hexdigest()[:12]
        return f"{unit.kind}:{digest}@{source.key}"
    if isinstance(source, MessageSource):
        return f"{source.key}:char:{source.char_start}-{source.char_end}"
    # The document and its span (a document's key names the document only: it is one source).
    return f"document:{source.document_id}:{source.source_text_hash}:{source.locator}"


@dataclass(frozen=True)
class FittedUnit:
    """A unit as the model sees it: `text` is the unit's text, or a prefix of it when cut."""

    evidence: Evidence
    text: str
    tokens: int
    truncated: bool = False


@dataclass
class EvidenceFit:
    """What goes to the model, and what the fitting did to get there."""

    units: list[FittedUnit]
    budget_tokens: int
    fidelity: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    dropped_content_ids: list[str] = field(default_factory=list)
    estimated: bool = False  # a token count fell back to chars/4

    @property
    def tokens(self) -> int:
        return sum(unit.tokens + UNIT_OVERHEAD_TOKENS for unit in self.units)

    def as_json(self) -> dict[str, Any]:
        return {
            "budget_tokens": self.budget_tokens,
            "fidelity": self.fidelity,
            "warnings": self.warnings,
            "dropped_content_ids": self.dropped_content_ids,
        }


def priority_order(ranked: list[RankedEvidence]) -> list[RankedEvidence]:
    """Relevance first (the rank's prose-before-lists order and score), then recency; ties keep
    the rank's order."""

    def key(item: tuple[int, RankedEvidence]) -> tuple[bool, float, float, int]:
        index, ranked_unit = item
        source = ranked_unit.evidence.source
        newest_first = -source.ts.timestamp() if isinstance(source, MessageSource) else 0.0
        return (not ranked_unit.evidence.prose, -ranked_unit.score, newest_first, index)

    return [item for _, item in sorted(enumerate(ranked), key=key)]


def cut_to_tokens(text: str, limit: int, counter: Callable[[str], int]) -> str:
    """`text` cut at a word boundary so that it counts at most `limit` tokens, marked `…`."""
    if counter(text) <= limit:
        return text
    words = text.split(" ")
    low, high = 1, len(words)
    while low < high:  # the longest word prefix within the limit (counts grow with length)
        middle = (low + high + 1) // 2
        if counter(" ".join(words[:middle]) + TRUNCATION_MARK) <= limit:
            low = middle
        else:
            high = middle - 1
    return " ".join(words[:low]).rstrip(" ,;:") + TRUNCATION_MARK


def _record(step: str, before: int, after: int, reason: str, **extra: Any) -> dict[str, Any]:
    return {
        "phase": PHASE,
        "step": step,
        "original_tokens": before,
        "final_tokens": after,
        "reason": reason,
        **extra,
    }


def _warning(code: str, message: str, item_ids: list[str] | None = None) -> dict[str, Any]:
    warning: dict[str, Any] = {"code": code, "message": message, "phase": PHASE}
    if item_ids:
        warning["item_ids"] = item_ids
    return warning


def fit_evidence(
    ranked: list[RankedEvidence],
    budget_tokens: int,
    *,
    max_units: int = DEFAULT_MAX_UNITS,
    counter: Callable[[str], int] | None = None,
) -> EvidenceFit:
    """The units that fit `budget_tokens` (tokens of evidence in the request), in priority
    order, with the fidelity records, warnings and dropped ids of the degradation steps."""
    estimated = False

    def default_counter(text: str) -> int:
        nonlocal estimated
        counted = count_tokens(text)
        estimated = estimated or counted.estimated
        return counted.tokens

    count = counter or default_counter
    ordered = priority_order(ranked)
    units = [FittedUnit(r.evidence, r.evidence.text, count(r.evidence.text)) for r in ordered]
    fit = EvidenceFit(units, budget_tokens)
    original = fit.tokens
    if len(units) > max_units:
        left_out = units[max_units:]
        fit.units = units[:max_units]
        fit.dropped_content_ids += [content_id(u.evidence) for u in left_out]
        fit.fidelity.append(
            _record(
                "cap",
                original,
                fit.tokens,
                "unit_cap",
                units_before=len(units),
                units_after=max_units,
            )
        )
        fit.warnings.append(
            _warning(
                "CONTENT_DROPPED",
                f"{len(left_out)} lower-ranked evidence units beyond the first "
                f"{max_units} were not given to the model",
            )
        )
    if budget_tokens < MIN_EVIDENCE_TOKENS:
        fit.warnings.append(
            _warning(
                "TOKEN_BUDGET_FLOORED",
                f"the evidence budget of {budget_tokens} tokens was raised "
                f"to the minimum of {MIN_EVIDENCE_TOKENS}",
            )
        )
        fit.fidelity.append(_record("floor", budget_tokens, MIN_EVIDENCE_TOKENS, "budget_floor"))
        fit.budget_tokens = budget_tokens = MIN_EVIDENCE_TOKENS
    _truncate(fit, count)
    _drop(fit)
    if not fit.fidelity:
        fit.fidelity.append(_record("none", original, fit.tokens, "within_budget"))
    fit.estimated = estimated
    if estimated:
        fit.warnings.append(
            _warning(
                "TOKEN_COUNT_ESTIMATE_USED",
                "evidence tokens were estimated as characters / 4",
            )
        )
    return fit


def _truncate(fit: EvidenceFit, count: Callable[[str], int]) -> None:
    """Cut long units, lowest priority first, until the units fit (or none is long)."""
    before = fit.tokens
    cut: list[str] = []
    for index in reversed(range(len(fit.units))):
        if fit.tokens <= fit.budget_tokens:
            break
        unit = fit.units[index]
        if unit.tokens <= TRUNCATED_UNIT_TOKENS:
            continue
        text = cut_to_tokens(unit.text, TRUNCATED_UNIT_TOKENS, count)
        fit.units[index] = FittedUnit(unit.evidence, text, count(text), truncated=True)
        cut.append(content_id(unit.evidence))
    if cut:
        fit.fidelity.append(
            _record("truncate", before, fit.tokens, "budget_limit", units_truncated=len(cut))
        )
        fit.warnings.append(
            _warning(
                "CONTENT_TRUNCATED",
                f"{len(cut)} evidence units were cut to "
                f"{TRUNCATED_UNIT_TOKENS} tokens for the model",
                cut,
            )
        )


def _drop(fit: EvidenceFit) -> None:
    """Drop the lowest-priority units until the rest fits."""
    before = fit.tokens
    dropped: list[str] = []
    while fit.units and fit.tokens > fit.budget_tokens:
        dropped.append(content_id(fit.units.pop().evidence))
    if dropped:
        fit.dropped_content_ids += dropped
        fit.fidelity.append(
            _record("drop", before, fit.tokens, "budget_limit", units_dropped=len(dropped))
        )
        fit.warnings.append(
            _warning(
                "CONTENT_DROPPED",
                f"{len(dropped)} lowest-priority evidence units did not fit the "
                f"model's budget of {fit.budget_tokens} evidence tokens",
                dropped,
            )
        )
