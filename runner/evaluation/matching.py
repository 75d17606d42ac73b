"""When does an extracted item count as a gold item? The matching rule, in one place.

An extracted item matches a gold item of the same field when
1. their cited message sets overlap (share at least one message id), and
2. their texts agree:
   - decisions, action items, open questions, topics: token-set F1 >= `TEXT_THRESHOLD` (0.3),
     on the same content tokens the validator's support check uses (`runner.grounding.claim_support`: NFKC,
     case-folded `\\w+` words, no one-letter tokens, no English stopwords);
   - links: the URLs are equal after trimming trailing punctuation and slashes;
   - artifacts: the spans overlap (same message, at least one character in common).
Matching is one-to-one: candidate pairs are taken greedily by descending similarity (ties by
gold then extracted position), so one extracted item never satisfies two gold items.

Why token-set F1 and not a fuzzy-string ratio: annotations are paraphrases, not copies, so
shared words, not character order, carry the meaning; F1 penalizes a too-long and a too-short
extracted text alike; and it needs no new dependency.

Why 0.3, calibrated on the gold set with the offline extractor (docs/quality.md): among claim
pairs (decisions, action items, questions) citing a common message, every pair at >= 0.3 is the
same item to a human reader (e.g. 0.77 for "Retry the batch fetch with exponential backoff and
jitter" vs "retry the batch fetch with exponential backoff, max 5 attempts"), while three true
pairs score below it and count as misses: two paraphrased questions (0.22, 0.25) and an extracted
"Do that next time." that lost its object (0.0). Topics are the weak spot: a one-word
keyword title can pass on a generic word ("ubuntu" vs "Where xorg.conf is in Ubuntu 10.10":
0.40). The lenient figures (`threshold=0`, messages only) show how many misses are wording.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from runner.grounding.claim_support import content_tokens

TEXT_THRESHOLD = 0.3


class Rule(str, Enum):
    TEXT = "text"
    URL = "url"
    SPAN = "span"


FIELD_RULES: dict[str, Rule] = {
    "topics": Rule.TEXT,
    "decisions": Rule.TEXT,
    "action_items": Rule.TEXT,
    "open_questions": Rule.TEXT,
    "links": Rule.URL,
    "artifacts": Rule.SPAN,
}

SCORED_FIELDS = tuple(FIELD_RULES)


@dataclass(frozen=True)
class Span:
    message_id: str
    char_start: int
    char_end: int


@dataclass(frozen=True)
class ScoredItem:
    """What matching needs of an item, gold or extracted: its text (the URL for a link, the
    quote for an artifact), the messages it cites, and for artifacts its span."""

    text: str
    message_ids: frozenset[str]
    span: Span | None = None
    owner: str | None = None


@dataclass(frozen=True)
class Pair:
    gold: int
    extracted: int
    similarity: float


def token_set_f1(a: str, b: str) -> float:
    """F1 of the two texts' distinct content-token sets; 0.0 when either has none."""
    left, right = set(content_tokens(a)), set(content_tokens(b))
    common = len(left & right)
    if not common:
        return 0.0
    precision, recall = common / len(right), common / len(left)
    return 2 * precision * recall / (precision + recall)


def normalize_url(url: str) -> str:
    """Trailing punctuation is the sentence's, not the URL's; a trailing slash is cosmetic."""
    return url.strip().rstrip(".,;:!?)]}>'\"").rstrip("/")


def spans_overlap(a: Span, b: Span) -> bool:
    return a.message_id == b.message_id and a.char_start < b.char_end and b.char_start < a.char_end


def similarity(rule: Rule, gold: ScoredItem, extracted: ScoredItem) -> float:
    """How alike the two are under `rule`, in [0, 1] (URL and span rules are 0 or 1)."""
    if rule is Rule.URL:
        return 1.0 if normalize_url(gold.text) == normalize_url(extracted.text) else 0.0
    if rule is Rule.SPAN:
        assert gold.span is not None and extracted.span is not None
        return 1.0 if spans_overlap(gold.span, extracted.span) else 0.0
    return token_set_f1(gold.text, extracted.text)


def is_match(
    rule: Rule, gold: ScoredItem, extracted: ScoredItem, threshold: float = TEXT_THRESHOLD
) -> float | None:
    """The similarity when the pair matches under the rule (see the module docstring), else
    None. `threshold` applies to the text rule; 0 makes it messages-only (lenient)."""
    if not gold.message_ids & extracted.message_ids:
        return None
    score = similarity(rule, gold, extracted)
    if rule is Rule.TEXT:
        return score if score >= threshold else None
    return score if score > 0 else None


def match_items(
    rule: Rule,
    gold: Sequence[ScoredItem],
    extracted: Sequence[ScoredItem],
    threshold: float = TEXT_THRESHOLD,
) -> list[Pair]:
    """The one-to-one greedy matching (by descending similarity, then position)."""
    candidates: list[Pair] = []
    for g, gold_item in enumerate(gold):
        for e, extracted_item in enumerate(extracted):
            score = is_match(rule, gold_item, extracted_item, threshold)
            if score is not None:
                candidates.append(Pair(g, e, score))
    candidates.sort(key=lambda pair: (-pair.similarity, pair.gold, pair.extracted))
    used_gold: set[int] = set()
    used_extracted: set[int] = set()
    pairs: list[Pair] = []
    for pair in candidates:
        if pair.gold in used_gold or pair.extracted in used_extracted:
            continue
        used_gold.add(pair.gold)
        used_extracted.add(pair.extracted)
        pairs.append(pair)
    return sorted(pairs, key=lambda pair: pair.gold)
