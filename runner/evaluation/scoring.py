"""From a gold file and a validated digest to numbers: per-field counts and P/R/F1 (micro over
fields and windows), and the grounding figures of what the pipeline stored."""

from __future__ import annotations

from dataclasses import dataclass, field

from runner.core.contract import Digest
from runner.digests.pipeline import PipelineResult
from runner.evaluation.gold import GoldFile
from runner.evaluation.matching import (
    FIELD_RULES,
    SCORED_FIELDS,
    TEXT_THRESHOLD,
    ScoredItem,
    Span,
    match_items,
)
from runner.grounding.claim_support import support_share
from runner.grounding.pointers import MatchKind
from runner.grounding.words import NAME_PART, words

# Rejection reasons that mean "a synthesized claim failed its citation or overlap check".
CLAIM_FIELDS = ("decisions", "action_items", "open_questions", "knowledge_items")
CLAIM_REJECTIONS = ("low_support", "no_citation", "unknown_message_id")


@dataclass(frozen=True)
class Counts:
    """Gold items, extracted items and one-to-one matches; P/R/F1 are None when undefined
    (nothing extracted / nothing in gold), never a silent 0 or 1."""

    gold: int = 0
    extracted: int = 0
    matched: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.gold + other.gold, self.extracted + other.extracted, self.matched + other.matched
        )

    @property
    def precision(self) -> float | None:
        return self.matched / self.extracted if self.extracted else None

    @property
    def recall(self) -> float | None:
        return self.matched / self.gold if self.gold else None

    @property
    def f1(self) -> float | None:
        if not self.gold and not self.extracted:
            return None
        p, r = self.precision or 0.0, self.recall or 0.0
        return 2 * p * r / (p + r) if p + r else 0.0


def gold_items(gold: GoldFile) -> dict[str, list[ScoredItem]]:
    ids = frozenset
    return {
        "topics": [ScoredItem(t.title, ids(t.message_ids)) for t in gold.topics],
        "decisions": [ScoredItem(d.text, ids(d.message_ids)) for d in gold.decisions],
        "action_items": [
            ScoredItem(a.text, ids(a.message_ids), owner=a.owner) for a in gold.action_items
        ],
        "open_questions": [ScoredItem(q.text, ids(q.message_ids)) for q in gold.open_questions],
        "links": [ScoredItem(link.url, ids(link.message_ids)) for link in gold.links],
        "artifacts": [
            ScoredItem(
                a.label, ids([a.message_id]), span=Span(a.message_id, a.char_start, a.char_end)
            )
            for a in gold.artifacts
        ],
    }


def digest_items(digest: Digest) -> dict[str, list[ScoredItem]]:
    ids = frozenset
    return {
        "topics": [ScoredItem(t.title, ids(t.message_ids)) for t in digest.topics],
        "decisions": [ScoredItem(d.text, ids(d.message_ids)) for d in digest.decisions],
        "action_items": [
            ScoredItem(a.text, ids(a.message_ids), owner=a.owner) for a in digest.action_items
        ],
        "open_questions": [ScoredItem(q.text, ids(q.message_ids)) for q in digest.open_questions],
        "links": [ScoredItem(link.url, ids(link.message_ids)) for link in digest.links],
        "artifacts": [
            ScoredItem(
                a.pointer.quote or "",
                ids([a.pointer.message_id]),
                span=Span(a.pointer.message_id, a.pointer.char_start, a.pointer.char_end),
            )
            for a in digest.artifacts
        ],
    }


@dataclass
class FieldScore:
    counts: Counts
    lenient: Counts  # messages-only matching (text threshold 0): how many misses are wording
    missed: list[ScoredItem] = field(default_factory=list)  # gold items nothing matched
    spurious: list[ScoredItem] = field(default_factory=list)  # extracted items matching no gold
    owner_agreement: tuple[int, int] = (0, 0)  # matched action items: (same owner, with owner)


def _same_owner(gold: str | None, extracted: str | None) -> bool:
    if not gold or not extracted:
        return False
    a, b = words(gold, NAME_PART), words(extracted, NAME_PART)
    # "Kenji" and "Kenji Watanabe" are the same owner; annotators write first names.
    return bool(a and b) and (a[0] == b[0] or set(a) <= set(b) or set(b) <= set(a))


def score_fields(
    gold: GoldFile, digest: Digest, threshold: float = TEXT_THRESHOLD
) -> dict[str, FieldScore]:
    expected, found = gold_items(gold), digest_items(digest)
    scores: dict[str, FieldScore] = {}
    for name in SCORED_FIELDS:
        rule = FIELD_RULES[name]
        pairs = match_items(rule, expected[name], found[name], threshold)
        lenient = match_items(rule, expected[name], found[name], 0.0)
        matched_gold = {pair.gold for pair in pairs}
        matched_extracted = {pair.extracted for pair in pairs}
        with_owner = [pair for pair in pairs if expected[name][pair.gold].owner]
        same = sum(
            _same_owner(expected[name][p.gold].owner, found[name][p.extracted].owner)
            for p in with_owner
        )
        scores[name] = FieldScore(
            counts=Counts(len(expected[name]), len(found[name]), len(pairs)),
            lenient=Counts(len(expected[name]), len(found[name]), len(lenient)),
            missed=[item for i, item in enumerate(expected[name]) if i not in matched_gold],
            spurious=[item for i, item in enumerate(found[name]) if i not in matched_extracted],
            owner_agreement=(same, len(with_owner)),
        )
    return scores


@dataclass(frozen=True)
class Grounding:
    """What the pipeline stored, re-checked independently of the validator.

    pointers_*: artifact and knowledge-item pointers in the validated digest; `verbatim` counts
    those whose `normalized_text[start:end]` equals their quote (must be all of them).
    claims_*: synthesized claims (decisions, action items, open questions, synthesized knowledge
    items) the reduce step emitted; `passed` are those the validator kept (citations exist,
    overlap >= min_overlap), `rechecked` those of the kept whose overlap we recompute as passing.
    """

    pointers_stored: int
    pointers_verbatim: int
    pointers_reanchored: int
    pointers_rejected: int
    claims_emitted: int
    claims_passed: int
    claims_rechecked: int

    def __add__(self, other: Grounding) -> Grounding:
        return Grounding(*(a + b for a, b in zip(_values(self), _values(other), strict=True)))

    @property
    def verbatim_share(self) -> float | None:
        return self.pointers_verbatim / self.pointers_stored if self.pointers_stored else None

    @property
    def claims_pass_share(self) -> float | None:
        return self.claims_passed / self.claims_emitted if self.claims_emitted else None


def _values(grounding: Grounding) -> tuple[int, ...]:
    return (
        grounding.pointers_stored,
        grounding.pointers_verbatim,
        grounding.pointers_reanchored,
        grounding.pointers_rejected,
        grounding.claims_emitted,
        grounding.claims_passed,
        grounding.claims_rechecked,
    )


def grounding_of(result: PipelineResult, texts: dict[str, str], min_overlap: float) -> Grounding:
    digest = result.digest
    pointers = [artifact.pointer for artifact in digest.artifacts]
    pointers += [k.content_pointer for k in digest.knowledge_items if k.content_pointer]
    verbatim = sum(
        1
        for p in pointers
        if p.message_id in texts and texts[p.message_id][p.char_start : p.char_end] == p.quote
    )
    reanchored = sum(
        1
        for kinds in result.validation.pointer_matches.values()
        for kind in kinds
        if kind is not None and kind is not MatchKind.OFFSETS
    )
    rejections = result.validation.rejections
    pointer_rejected = sum(1 for r in rejections if r.reason.startswith("pointer_unresolved"))
    claim_rejected = sum(
        1 for r in rejections if r.field in CLAIM_FIELDS and r.reason.startswith(CLAIM_REJECTIONS)
    )
    claims: list[tuple[str, list[str]]] = [
        *((d.text, d.message_ids) for d in digest.decisions),
        *((a.text, a.message_ids) for a in digest.action_items),
        *((q.text, q.message_ids) for q in digest.open_questions),
    ]
    claims += [(k.content, k.message_ids) for k in digest.knowledge_items if k.content is not None]
    rechecked = 0
    for claim, message_ids in claims:
        share = support_share(claim, [texts[m] for m in message_ids if m in texts])
        all_cited = all(m in texts for m in message_ids) and bool(message_ids)
        rechecked += int(all_cited and share is not None and share >= min_overlap)
    return Grounding(
        pointers_stored=len(pointers),
        pointers_verbatim=verbatim,
        pointers_reanchored=reanchored,
        pointers_rejected=pointer_rejected,
        claims_emitted=len(claims) + claim_rejected,
        claims_passed=len(claims),
        claims_rechecked=rechecked,
    )
