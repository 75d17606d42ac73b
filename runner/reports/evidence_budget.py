"""Fitting a report's evidence to the writer model's input budget, degrading gracefully when it
does not fit, as plain data: no database, no network.

The units come ranked by `runner.reports.evidence.rank_evidence`. Their priority
(`unit_priority`) is the weighted sum of quality 40%, confidence 30%, recency 15% and relevance
15%: quality is the source's (`SourceQuality`: a document's extraction, LOW when degraded; a
message counts as an undegraded document), confidence the unit's kind (a quoted sentence is its
source's own words; a channel digest's decision is firmer than its topic summary, an open
question weakest), recency a message's age behind the pool's newest (halved per week; a
document span has no time: oldest) and relevance its BM25 score scaled between the pool's
lowest and highest. Running text comes before lists and tables, as the rank puts it; ties
keep the rank's order. Some units are `protected` (`protected_ids`): those
containing a phrase the question quotes in double quotes (the user pinned those words), and the
digest decisions and action items that share at least two content words with the question.
The degradation order when they do not fit:
1. at most `max_units` units go to the model at all (a longer list is noise to a writer that
   cites a few dozen sentences): the rest are dropped (`CONTENT_DROPPED`, reason `unit_cap`),
   except protected units, which are kept in their priority place;
2. a budget below `MIN_EVIDENCE_TOKENS` is raised to it (`TOKEN_BUDGET_FLOORED`): the request
   then may not fit the model, which the final fit reports before anything is sent;
3. units longer than `TRUNCATED_UNIT_TOKENS` are cut at a word boundary, lowest priority first,
   until the rest fits (`CONTENT_TRUNCATED`): the model sees less of a sentence, the stored
   quote stays the whole unit, and support is still checked against the whole source;
4. when dropping is allowed, the lowest-priority units are dropped until the rest fits
   (`CONTENT_DROPPED`, `budget_limit`); never a protected unit, never one of the top
   `TOP_ITEMS_CONDENSED`, never below `MIN_ITEMS_KEPT` units;
5. the units left are condensed to their headline sentence within `CONDENSED_UNIT_TOKENS`,
   lowest priority first (`PRIORITY_SUMMARIZED` for a top or protected unit, else
   `CONTENT_TRUNCATED`): the floor of the top units;
6. protected units are cut to `HEADLINE_UNIT_TOKENS` (`PROTECTED_OVERFLOW`);
7. what is still over is `over_budget`: the writer fails with `EvidenceOverflow`.
No model summary: a summary is not a quotable span, and every report sentence must cite exact
characters; a condensed unit is a prefix of its text. Every step leaves a step record {phase,
step, original_tokens, final_tokens, reason}; every unit considered (within the cap) gets a
per-item record in `content_fidelity` under its `synthesis` phase (level, tokens before and
after, reason, warnings, and the `timestamp` of the fitting, ISO 8601 UTC; the other phases an
item passes through are merged in by `runner.core.fidelity.merge_phase`); the ids of the units
left out are `dropped_content_ids`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from runner.core.fidelity import (
    FIDELITY_SCHEMA_VERSION,
    MIN_ITEMS_KEPT,
    PHASE_SYNTHESIS,
    TOP_ITEMS_CONDENSED,
    FidelityLevel,
    latest_phase,
    merge_phase,
    phase_entry,
)
from runner.core.tokens import count_tokens
from runner.documents.policy import SourceQuality
from runner.grounding.claim_support import content_tokens
from runner.reports.digest_evidence import DIGEST_EVIDENCE_KIND
from runner.reports.evidence import Evidence, RankedEvidence
from runner.reports.sources import MessageSource

PHASE = PHASE_SYNTHESIS  # the phase, in fidelity records, of writing the report from its evidence
DEFAULT_MAX_UNITS = 60
MIN_EVIDENCE_TOKENS = 512
TRUNCATED_UNIT_TOKENS = 40
CONDENSED_UNIT_TOKENS = 20
HEADLINE_UNIT_TOKENS = 10
# Tokens a unit costs beyond its text in the request (`<source id="E12" origin="...">` tags);
# an estimate: the final fit counts the request as sent.
UNIT_OVERHEAD_TOKENS = 12
TRUNCATION_MARK = "…"
# Digest claims that are key findings: protected when they speak of the question's subject.
_KEY_CLAIMS = frozenset({"decision", "action_item"})
# The seed's priority weights: source quality 40%, confidence 30%, recency 15%, relevance 15%.
QUALITY_WEIGHT = 0.40
CONFIDENCE_WEIGHT = 0.30
RECENCY_WEIGHT = 0.15
RELEVANCE_WEIGHT = 0.15
# The seed's quality scale. `estimate_quality` says MEDIUM for an extraction without
# degradation and LOW for a degraded one (never HIGH); a message is MEDIUM too (as written, not
# vetted), so chats and undegraded documents compete on the other signals.
QUALITY_SCORES = {
    SourceQuality.HIGH: 1.0,
    SourceQuality.MEDIUM: 0.7,
    SourceQuality.LOW: 0.4,
    SourceQuality.UNKNOWN: 0.4,
}
# Confidence by kind of unit: a quoted sentence (of a message, a document or a document
# digest's evidence) is its source's own words; a channel digest's claim is a model's reading
# of the messages it cites, firmer when it states what was settled than when it summarizes,
# and an open question settles nothing.
CONFIDENCE_SCORES = {
    "sentence": 1.0,
    DIGEST_EVIDENCE_KIND: 1.0,
    "decision": 0.9,
    "action_item": 0.9,
    "topic": 0.7,
    "open_question": 0.4,
}
# Recency halves per week older than the newest unit: a discussion of days or weeks ranks its
# newer messages first, while the turns of one meeting or one afternoon are equally recent and
# compete on relevance (scaling by the pool's time range would weigh a minute in a one-hour
# meeting as much as a month in a long channel).
RECENCY_HALF_LIFE = timedelta(days=7)
UNKNOWN_CLAIM_CONFIDENCE = 0.7  # another claim kind (a link, an artifact, a knowledge item)
_QUOTED = re.compile(r'"([^"]{3,200})"|“([^”]{3,200})”|«([^»]{3,200})»')
_SENTENCE_END = re.compile(r"[.!?](?=\s)")


def content_id(unit: Evidence) -> str:
    """A unit's stable id: its message's canonical key plus the span of a message sentence (one
    message may give several units), a document's id, text hash and locator; a digest's claim is
    its kind and a hash of its text at its first cited message (several claims may cite one
    message)."""
    source = unit.source
    if unit.kind != "sentence":
        digest = hashlib.sha256(unit.text.encode("utf-8")).hexdigest()[:12]
        return f"{unit.kind}:{digest}@{source.key}"
    if isinstance(source, MessageSource):
        return f"{source.key}:char:{source.char_start}-{source.char_end}"
    # The document and its span (a document's key names the document only: it is one source).
    return f"document:{source.document_id}:{source.source_text_hash}:{source.locator}"


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def protected_ids(question: str, ranked: list[RankedEvidence]) -> set[str]:
    """The units never dropped for the budget: those holding a phrase the question quotes
    ("...", as whole words; a phrase of stopwords only pins nothing), and digest decisions and
    action items sharing two content words with it."""
    quoted = (_folded(next(g for g in m.groups() if g)) for m in _QUOTED.finditer(question))
    phrases = [
        re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)")
        for phrase in quoted
        if content_tokens(phrase)
    ]
    terms = set(content_tokens(question))
    protected: set[str] = set()
    for item in ranked:
        unit = item.evidence
        pinned = bool(phrases) and any(p.search(_folded(unit.text)) for p in phrases)
        key = unit.kind in _KEY_CLAIMS and len(terms & set(content_tokens(unit.text))) >= 2
        if pinned or key:
            protected.add(content_id(unit))
    return protected


@dataclass(frozen=True)
class FittedUnit:
    """A unit as the model sees it: `text` is the unit's text, or a prefix of it when cut."""

    evidence: Evidence
    text: str
    tokens: int
    level: FidelityLevel = FidelityLevel.FULL
    overhead: int = UNIT_OVERHEAD_TOKENS  # its tags in the request

    @property
    def truncated(self) -> bool:
        return self.level.degraded


@dataclass
class EvidenceFit:
    """What goes to the model, and what the fitting did to get there."""

    units: list[FittedUnit]
    budget_tokens: int
    fidelity: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    dropped_content_ids: list[str] = field(default_factory=list)
    estimated: bool = False  # a token count fell back to chars/4
    protected: set[str] = field(default_factory=set)
    # Per item (within the cap), by content id: {"phases": {PHASE: {level, ...}}}.
    content_fidelity: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Content id -> "sha256:<hex>" of its whole text in the archive (when archiving is on).
    content_archive_hashes: dict[str, str] = field(default_factory=dict)
    # The synthesis phase's share of the effective input budget and what it allows, when the
    # writer applied it (`runner.core.fidelity.SYNTHESIS_BUDGET_SHARE`).
    phase_share: float | None = None
    phase_budget_tokens: int | None = None
    # Content id -> the whole text of each unit within the cap (for the archive; not stored).
    originals: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def tokens(self) -> int:
        return sum(unit.tokens + unit.overhead for unit in self.units)

    def degraded_texts(self) -> dict[str, str]:
        """The whole texts of the units given in part or left out, by content id."""
        return {
            item_id: self.originals[item_id]
            for item_id, record in self.content_fidelity.items()
            if (latest := latest_phase(record)) is not None
            and latest[1]["level"] != FidelityLevel.FULL.value
            and item_id in self.originals
        }

    @property
    def over_budget(self) -> bool:
        return self.tokens > self.budget_tokens

    def as_json(self) -> dict[str, Any]:
        share = {}
        if self.phase_share is not None:
            share = {
                "phase_budget_share": self.phase_share,
                "phase_budget_tokens": self.phase_budget_tokens,
            }
        return {
            "budget_tokens": self.budget_tokens,
            **share,
            "fidelity": self.fidelity,
            "warnings": self.warnings,
            "dropped_content_ids": self.dropped_content_ids,
            "content_fidelity_schema_version": FIDELITY_SCHEMA_VERSION,
            "content_fidelity": self.content_fidelity,
            "content_archive_hashes": self.content_archive_hashes,
        }


def unit_priority(item: RankedEvidence, scores: tuple[float, float], newest: float) -> float:
    """A unit's priority in [0, 1]: the seed's weighted sum of its source's quality, its
    confidence, its recency (halved for each `RECENCY_HALF_LIFE` its message is older than
    the pool's newest message, `newest`; a document span has no time and counts as oldest)
    and its relevance (its BM25 score between the pool's lowest and highest, `scores`)."""
    unit = item.evidence
    source = unit.source
    recency = 0.0
    if isinstance(source, MessageSource):
        age = max(0.0, newest - source.ts.timestamp())
        recency = 0.5 ** (age / RECENCY_HALF_LIFE.total_seconds())
    relevance = _scaled(item.score, *scores)
    return (
        QUALITY_WEIGHT * QUALITY_SCORES.get(unit.quality, QUALITY_SCORES[SourceQuality.LOW])
        + CONFIDENCE_WEIGHT * CONFIDENCE_SCORES.get(unit.kind, UNKNOWN_CLAIM_CONFIDENCE)
        + RECENCY_WEIGHT * recency
        + RELEVANCE_WEIGHT * max(0.0, min(relevance, 1.0))
    )


def _scaled(value: float, low: float, high: float) -> float:
    """`value` between `low` (0) and `high` (1); 1 when every unit has the same value."""
    return (value - low) / (high - low) if high > low else 1.0


def priority_order(ranked: list[RankedEvidence]) -> list[RankedEvidence]:
    """Running text before lists and tables (the rank's own order), then the highest
    `unit_priority` first; ties keep the rank's order."""
    stamps = [
        r.evidence.source.ts.timestamp()
        for r in ranked
        if isinstance(r.evidence.source, MessageSource)
    ]
    newest = max(stamps, default=0.0)
    scores = (
        min((r.score for r in ranked), default=0.0),
        max((r.score for r in ranked), default=0.0),
    )

    def key(item: tuple[int, RankedEvidence]) -> tuple[bool, float, int]:
        index, ranked_unit = item
        # Rounded: float noise in the sum must not reorder units the weights call equal.
        weight = round(unit_priority(ranked_unit, scores, newest), 9)
        return (not ranked_unit.evidence.prose, -weight, index)

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


def condensed_text(text: str, limit: int, counter: Callable[[str], int]) -> str:
    """A unit's headline: its first sentence when that one is shorter, cut to `limit` tokens."""
    end = _SENTENCE_END.search(text)
    first = text[: end.end()] if end else text
    return cut_to_tokens(first, limit, counter)


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
    protected: Collection[str] = frozenset(),
    allow_dropping: bool = True,
    overhead: Callable[[Evidence], int] | None = None,
) -> EvidenceFit:
    """The units that fit `budget_tokens` (tokens of evidence in the request), in priority
    order, with the step records, per-item records, warnings and dropped ids of the
    degradation steps. `protected` are content ids never dropped for the budget; `overhead` is
    what a unit's tags cost in the request (by default `UNIT_OVERHEAD_TOKENS`)."""
    estimated = False

    def default_counter(text: str) -> int:
        nonlocal estimated
        counted = count_tokens(text)
        estimated = estimated or counted.estimated
        return counted.tokens

    count = counter or default_counter
    ordered = priority_order(ranked)
    ids = [content_id(r.evidence) for r in ordered]
    cap = max(max_units, MIN_ITEMS_KEPT)
    within = [i for i, item_id in enumerate(ids) if i < cap or item_id in protected]
    tags = overhead or (lambda _: UNIT_OVERHEAD_TOKENS)
    units = [
        FittedUnit(e, e.text, count(e.text), overhead=tags(e))
        for e in (ordered[i].evidence for i in within)
    ]
    fit = EvidenceFit(units, budget_tokens, protected={ids[i] for i in within} & set(protected))
    original = {ids[i]: unit.tokens for i, unit in zip(within, units, strict=True)}
    rank = {ids[i]: place for place, i in enumerate(within)}
    fit.originals = {ids[i]: ordered[i].evidence.text for i in within}
    if len(within) < len(ordered):
        kept = set(within)
        every = fit.tokens + sum(
            # Tags estimated: counting thousands of left-out tags would double the fit's time.
            count(r.evidence.text) + UNIT_OVERHEAD_TOKENS
            for i, r in enumerate(ordered)
            if i not in kept
        )
        _cap_left_out(fit, [ids[i] for i in range(len(ids)) if i not in kept], cap)
        fit.fidelity.append(
            _record(
                "cap",
                every,
                fit.tokens,
                "unit_cap",
                units_before=len(ordered),
                units_after=len(within),
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
    start = fit.tokens
    _cut(fit, count, FidelityLevel.TRUNCATED, TRUNCATED_UNIT_TOKENS, rank)
    if allow_dropping:
        _drop(fit, rank)
    _cut(fit, count, FidelityLevel.CONDENSED, CONDENSED_UNIT_TOKENS, rank)
    _cut(fit, count, FidelityLevel.HEADLINE, HEADLINE_UNIT_TOKENS, rank)
    if not fit.fidelity:
        fit.fidelity.append(_record("none", start, fit.tokens, "within_budget"))
    if fit.over_budget:
        fit.fidelity.append(_record("over", start, fit.tokens, "over_budget"))
    fit.estimated = estimated
    if estimated:
        fit.warnings.append(
            _warning(
                "TOKEN_COUNT_ESTIMATE_USED",
                "evidence tokens were estimated as characters / 4",
            )
        )
    _item_records(fit, original, rank)
    return fit


def _cap_left_out(fit: EvidenceFit, left_out: list[str], cap: int) -> None:
    fit.dropped_content_ids += left_out
    fit.warnings.append(
        _warning(
            "CONTENT_DROPPED",
            f"{len(left_out)} lower-ranked evidence units beyond the first "
            f"{cap} were not given to the model",
        )
    )


def _priority(item_id: str, fit: EvidenceFit, rank: dict[str, int]) -> bool:
    return rank[item_id] < TOP_ITEMS_CONDENSED or item_id in fit.protected


# What each cutting step is called in its step record, and when it applies.
_STEPS = {
    FidelityLevel.TRUNCATED: "truncate",
    FidelityLevel.CONDENSED: "condense",
    FidelityLevel.HEADLINE: "headline",
}


def _cut(
    fit: EvidenceFit,
    count: Callable[[str], int],
    level: FidelityLevel,
    limit: int,
    rank: dict[str, int],
) -> None:
    """Cut units to `level` (at most `limit` tokens), lowest priority first, until they fit.
    Only protected units go to a headline."""
    before = fit.tokens
    cut: list[str] = []
    for index in reversed(range(len(fit.units))):
        if not fit.over_budget:
            break
        unit = fit.units[index]
        item_id = content_id(unit.evidence)
        if unit.tokens <= limit or (
            level is FidelityLevel.HEADLINE and item_id not in fit.protected
        ):
            continue
        if level is FidelityLevel.TRUNCATED:
            text = cut_to_tokens(unit.text, limit, count)
        else:
            text = condensed_text(unit.evidence.text, limit, count)
        fit.units[index] = FittedUnit(unit.evidence, text, count(text), level, unit.overhead)
        cut.append(item_id)
    if not cut:
        return
    reason = "protected_overflow" if level is FidelityLevel.HEADLINE else "budget_limit"
    fit.fidelity.append(
        _record(_STEPS[level], before, fit.tokens, reason, **{f"units_{level.value}": len(cut)})
    )
    if level is FidelityLevel.TRUNCATED:
        fit.warnings.append(
            _warning(
                "CONTENT_TRUNCATED",
                f"{len(cut)} evidence units were cut to {limit} tokens for the model",
                cut,
            )
        )
    elif level is FidelityLevel.CONDENSED:
        top = [i for i in cut if _priority(i, fit, rank)]
        rest = [i for i in cut if i not in top]
        if top:
            fit.warnings.append(
                _warning(
                    "PRIORITY_SUMMARIZED",
                    f"{len(top)} top-ranked or protected evidence units were condensed to "
                    f"their headline sentence within {limit} tokens",
                    top,
                )
            )
        if rest:
            fit.warnings.append(
                _warning(
                    "CONTENT_TRUNCATED",
                    f"{len(rest)} evidence units were condensed to {limit} tokens for the model",
                    rest,
                )
            )
    else:
        fit.warnings.append(
            _warning(
                "PROTECTED_OVERFLOW",
                f"the protected evidence did not fit the budget of {fit.budget_tokens} tokens "
                f"condensed; {len(cut)} protected units were cut to {limit} tokens",
                cut,
            )
        )


def _drop(fit: EvidenceFit, rank: dict[str, int]) -> None:
    """Drop the lowest-priority droppable units until the rest fits: never a protected unit,
    one of the top units, or a unit that would leave fewer than the minimum."""
    before = fit.tokens
    dropped: list[str] = []
    for index in reversed(range(len(fit.units))):
        if not fit.over_budget or len(fit.units) <= MIN_ITEMS_KEPT:
            break
        item_id = content_id(fit.units[index].evidence)
        if _priority(item_id, fit, rank):
            continue
        del fit.units[index]
        dropped.append(item_id)
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


def _item_records(fit: EvidenceFit, original: dict[str, int], rank: dict[str, int]) -> None:
    """What happened to each unit within the cap: level, tokens before and after, why."""
    given = {content_id(u.evidence): u for u in fit.units}
    # One time for the whole fitting: the records say when this phase's fitting ran.
    timestamp = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    codes: dict[str, list[str]] = {}
    for warning in fit.warnings:
        for item_id in warning.get("item_ids", []):
            codes.setdefault(item_id, []).append(warning["code"])
    for item_id in sorted(original, key=rank.__getitem__):
        unit = given.get(item_id)
        level = unit.level if unit else FidelityLevel.DROPPED
        reason = {
            FidelityLevel.FULL: "within_budget",
            FidelityLevel.HEADLINE: "protected_overflow",
        }.get(level, "budget_limit")
        entry = phase_entry(
            level,
            reason,
            codes.get(item_id, []),
            timestamp,
            original_tokens=original[item_id],
            final_tokens=unit.tokens if unit else 0,
            rank=rank[item_id] + 1,
            protected=item_id in fit.protected,
        )
        fit.content_fidelity[item_id] = merge_phase(fit.content_fidelity.get(item_id), PHASE, entry)


def unfitted(ranked: list[RankedEvidence], max_units: int = DEFAULT_MAX_UNITS) -> EvidenceFit:
    """The evidence as ranked, without token management: the first `max_units` units whole,
    no budget records (the request's preflight still refuses what is over the model's budget);
    the units beyond the cap are still named as dropped."""
    ordered = priority_order(ranked)
    cap = max(max_units, MIN_ITEMS_KEPT)
    units = [
        FittedUnit(r.evidence, r.evidence.text, count_tokens(r.evidence.text).tokens)
        for r in ordered[:cap]
    ]
    fit = EvidenceFit(units, 0)
    fit.budget_tokens = fit.tokens
    if len(ordered) > cap:
        _cap_left_out(fit, [content_id(r.evidence) for r in ordered[cap:]], cap)
    return fit
