"""The learned item decisions: is this message a decision, an action item, a question still open?

One small logistic model per item kind over features that carry across channels: the speech
act of the message (the rules' own cues, modal verbs, tense, first/second person, hedges), its
place in its conversation (first, last, how many replies, how many people), who answers and
how (agreement, an answer, thanks), and whom it addresses. No word of any one window is a
feature, so a model fitted on some chats can judge another.

Weights live in `item_weights.json` beside this module, written by scripts/train_items.py from
the gold set (docs/gold-set). Each kind has a `mode` (MODES): the rules alone, the model
filtering the rules' items, or filtering and proposing items of its own. The training script
picks, per kind, the mode with the best F1 when each source is held out (see docs/quality.md),
so a model decides a kind only where it beats the rules on chats it did not see.

`fit` is here too (numpy, full-batch gradient descent from zero weights, a fixed number of
steps), so the evaluator can refit with one source held out; the same examples give the same
weights.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from runner.core.window import WindowMessage
from runner.extract.offline import patterns
from runner.extract.offline.text import FoldedPattern, content_words, squash, view_message
from runner.extract.offline.threads import (
    Participants,
    find_answer,
    is_agreement,
    is_social,
    is_strong_agreement,
)

KINDS = ("decisions", "action_items", "open_questions")
# How a kind is decided: by the rules alone; by the model keeping or dropping the rules' items
# ("filter"); or, besides, by the model adding an item for a message the rules left out.
RULES_MODE, FILTER_MODE, PROPOSE_MODE = "rules", "filter", "propose"
MODES = (RULES_MODE, FILTER_MODE, PROPOSE_MODE)
WEIGHTS_PATH = Path(__file__).with_name("item_weights.json")

STEPS = 400
LEARNING_RATE = 0.5
L2 = 0.01
_HORIZON = 6  # later messages read for replies, agreement and thanks

_FUTURE = FoldedPattern(
    r"(?i)\b(?:will|shall|i'll|we'll|you'll|he'll|she'll|they'll|gonna|going to)\b"
)
_OBLIGATION = FoldedPattern(r"(?i)\b(?:should|must|need to|needs to|have to|has to|ought)\b")
_POSSIBILITY = FoldedPattern(r"(?i)\b(?:can|could|would|may|might)\b")
_WE = FoldedPattern(r"(?i)\b(?:we|we'll|we're|we've|let's|us|our|team)\b")
_YOU = FoldedPattern(r"(?i)\b(?:you|you're|you'll|your|u)\b")
_PAST = FoldedPattern(r"(?i)\b(?:\w{3,}ed|did|was|were|had|went|got|made)\b")
_SETTLE = FoldedPattern(
    r"(?i)\b(?:agree|agreed|decided|decision|consensus|settled|plan|policy|approved|going forward"
    r"|from now on|instead|switch|switching|go with|stick with)\b"
)
_THANKS = FoldedPattern(r"(?i)\b(?:thanks|thank you|thx|ty|cheers|worked|works now|solved|fixed)\b")
_NEGATION = FoldedPattern(r"(?i)\b(?:not|no|never|don't|doesn't|didn't|can't|cannot|won't)\b")
_CODE = re.compile(r"`|\$ |--\w|/\w+/")
_URL = re.compile(r"https?://|www\.")


def _log_count(n: int) -> float:
    return math.log1p(n) / math.log(10)


def _cue(flag: object) -> float:
    return 1.0 if flag else 0.0


@dataclass(frozen=True)
class ItemContext:
    messages: Sequence[WindowMessage]
    participants: Participants
    share: Mapping[str, float]  # author -> share of the messages
    # message index -> whether it takes up advice: read by the message and by the few before it
    takes_advice: dict[int, bool] = field(default_factory=dict, compare=False, repr=False)

    def takes_up_advice(self, index: int) -> bool:
        known = self.takes_advice.get(index)
        if known is None:
            text = self.messages[index].normalized_text
            known = self.takes_advice[index] = patterns.takes_advice(text, self.participants)
        return known


def context_of(
    messages: Sequence[WindowMessage], participants: Participants | None = None
) -> ItemContext:
    """`participants`: `Participants.of(messages)` when the caller has it already."""
    counts: dict[str, int] = {}
    for message in messages:
        counts[message.author] = counts.get(message.author, 0) + 1
    total = max(1, len(messages))
    return ItemContext(
        messages,
        participants if participants is not None else Participants.of(messages),
        {a: n / total for a, n in counts.items()},
    )


def _conversation_bounds(messages: Sequence[WindowMessage], index: int) -> tuple[int, int]:
    """[start, end) of the run of messages sharing `messages[index]`'s conversation (threaded
    windows keep conversations contiguous); the message alone when it has none."""
    conversation = messages[index].conversation
    if conversation is None:
        return index, index + 1
    start = index
    while start > 0 and messages[start - 1].conversation == conversation:
        start -= 1
    end = index + 1
    while end < len(messages) and messages[end].conversation == conversation:
        end += 1
    return start, end


def message_features(context: ItemContext, index: int) -> dict[str, float]:
    """The features of `context.messages[index]` (names are stable: they key the weights)."""
    messages, participants = context.messages, context.participants
    message = messages[index]
    text = squash(message.normalized_text)
    sentences = [s.text for s in view_message(message).sentences] or [text]
    words = len(text.split())
    decision = max(
        ((c.strength if (c := patterns.decision(s, participants)) else 0) for s in sentences),
        default=0,
    )
    proposal = any(patterns.proposal(s, participants) for s in sentences)
    actions = [
        c for s in sentences if (c := patterns.action(s, message.author, participants)) is not None
    ]
    question = max(
        ((c.strength if (c := patterns.question(s, participants)) else -99) for s in sentences),
        default=-99,
    )
    asks = question > -99
    start, end = _conversation_bounds(messages, index)
    later = list(messages[index + 1 : index + 1 + _HORIZON])
    by_others = [m for m in later if m.author != message.author]
    replies = [m for m in by_others if m.reply_to == message.message_id]
    addressed_back = [
        m for m in by_others if participants.addressee(m.normalized_text) == message.author
    ]
    agreeing = [m for m in by_others[:3] if is_agreement(m.normalized_text)]
    thanks = [m for m in later if m.author == message.author and _THANKS.search(m.normalized_text)]
    answered = asks and find_answer(messages, index, participants, text) is not None
    conversation_authors = {m.author for m in messages[start:end]}
    suggests = any(patterns.is_suggestion(s, participants) for s in sentences)
    taken_up = suggests and any(
        messages[later].author != message.author
        and context.takes_up_advice(later)
        and patterns.addressed_to(messages[later].normalized_text, participants)
        in (None, message.author)
        for later in range(index + 1, min(len(messages), index + 1 + _HORIZON))
    )
    features = {
        "rule_decision": decision / 3,
        "rule_proposal": _cue(proposal),
        "rule_action": _cue(actions),
        "rule_action_marker": _cue(any(c.strength >= 3 for c in actions)),
        "rule_action_owner_other": _cue(
            any(c.owner and c.owner != message.author for c in actions)
        ),
        "rule_commitment_only": _cue(patterns.commitment_only(text)),
        # Advice and its uptake ("try switching to X" ... "ok will do"): an action item of the
        # person advised, whatever the channel's register.
        "suggestion": _cue(suggests),
        "advice_taken_after": _cue(taken_up),
        "takes_advice": _cue(context.takes_up_advice(index)),
        "rule_question": _cue(asks),
        "question_strength": max(0.0, min(question, 13)) / 13 if asks else 0.0,
        "second_person_question": _cue(asks and patterns.is_second_person(text)),
        "answered": _cue(answered),
        "unanswered_question": _cue(asks and not answered),
        # The asker saying later that the answers did not help, or asking again: still open.
        "asker_unresolved": _cue(asks and patterns.asker_unresolved(messages, index)),
        "ends_with_question_mark": _cue(text.rstrip().endswith("?")),
        "has_question_mark": _cue("?" in text),
        "problem": _cue(patterns.is_problem(text)),
        "howto": _cue(patterns.is_howto(text)),
        "future": _cue(_FUTURE.search(text)),
        "obligation": _cue(_OBLIGATION.search(text)),
        "possibility": _cue(_POSSIBILITY.search(text)),
        "first_person_plural": _cue(_WE.search(text)),
        "first_person": _cue(patterns.FIRST_PERSON.search(text)),
        "second_person": _cue(_YOU.search(text)),
        "past_tense": _cue(_PAST.search(text)),
        "negation": _cue(_NEGATION.search(text)),
        "settle_words": _cue(_SETTLE.search(text)),
        "social": _cue(is_social(text)),
        "short": _cue(words < 4),
        "length": min(_log_count(words), 2.0),
        "content_words": min(len(content_words(text)), 20) / 20,
        "has_code": _cue(_CODE.search(text)),
        "has_url": _cue(_URL.search(text)),
        "addressed": _cue(participants.addressee(text)),
        "is_reply": _cue(message.reply_to),
        "replies": min(_log_count(len(replies) + len(addressed_back)), 1.0),
        "agreement_after": _cue(agreeing),
        "strong_agreement_after": _cue(
            any(is_strong_agreement(m.normalized_text) for m in agreeing)
        ),
        "others_after": min(_log_count(len({m.author for m in by_others})), 1.0),
        "asker_thanks_after": _cue(thanks),
        "first_in_conversation": _cue(index == start),
        "last_in_conversation": _cue(index == end - 1),
        "conversation_size": min(_log_count(end - start), 2.0),
        "conversation_people": min(_log_count(len(conversation_authors)), 1.5),
        "author_share": context.share.get(message.author, 0.0),
    }
    return features


FEATURE_NAMES = tuple(
    sorted(
        message_features(
            context_of([WindowMessage("m", "a", datetime(2000, 1, 1, tzinfo=UTC), "hi")]), 0
        )
    )
)


@dataclass(frozen=True)
class KindModel:
    """One kind's logistic model: P(kind | message) = sigmoid(bias + w . features)."""

    bias: float
    weights: Mapping[str, float]
    threshold: float
    mode: str = RULES_MODE  # see MODES

    @property
    def propose(self) -> bool:
        return self.mode == PROPOSE_MODE

    def probability(self, features: Mapping[str, float]) -> float:
        score = self.bias + sum(self.weights.get(n, 0.0) * v for n, v in features.items())
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, score))))

    def accepts(self, features: Mapping[str, float]) -> bool:
        return self.probability(features) >= self.threshold


@dataclass(frozen=True)
class ItemModel:
    kinds: Mapping[str, KindModel] = field(default_factory=dict)

    def gated(self, kind: str) -> KindModel | None:
        """The kind's model when it decides the kind, else None (the rules decide)."""
        model = self.kinds.get(kind)
        return model if model is not None and model.mode != RULES_MODE else None

    def with_modes(self, modes: Mapping[str, str]) -> ItemModel:
        return ItemModel(
            {
                kind: KindModel(m.bias, m.weights, m.threshold, modes.get(kind, m.mode))
                for kind, m in self.kinds.items()
            }
        )

    def to_json(self, about: str = "") -> str:
        data = {
            "about": about,
            "features": list(FEATURE_NAMES),
            "kinds": {
                kind: {
                    "mode": m.mode,
                    "threshold": m.threshold,
                    "bias": m.bias,
                    "weights": dict(sorted(m.weights.items())),
                }
                for kind, m in sorted(self.kinds.items())
            },
        }
        return json.dumps(data, indent=1, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ItemModel:
        data = json.loads(text)
        return cls(
            {
                kind: KindModel(
                    float(m["bias"]),
                    {str(k): float(v) for k, v in m["weights"].items()},
                    float(m["threshold"]),
                    str(m["mode"]),
                )
                for kind, m in data["kinds"].items()
            }
        )

    def fingerprint(self) -> str:
        """A short hash of the weights (part of the chunk cache key)."""
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()[:12]


@functools.cache
def default_model() -> ItemModel:
    """The shipped weights; an absent file means the rules alone."""
    if not WEIGHTS_PATH.is_file():
        return ItemModel()
    return ItemModel.from_json(WEIGHTS_PATH.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Example:
    features: Mapping[str, float]
    labels: frozenset[str]  # the kinds this message is gold for


def _best_threshold(probabilities: np.ndarray, labels: np.ndarray) -> float:
    """The cut maximizing message-level F1 on the training examples (0.5 when none is positive)."""
    if not labels.any():
        return 0.5
    best, best_f1 = 0.5, -1.0
    for cut in np.round(np.arange(0.05, 0.96, 0.05), 2):
        chosen = probabilities >= cut
        tp = float((chosen & labels).sum())
        f1 = 2 * tp / (chosen.sum() + labels.sum()) if tp else 0.0
        if f1 > best_f1 + 1e-12:
            best, best_f1 = float(cut), f1
    return best


# The messages the rules already make an item of, per kind: what a filter judges.
CANDIDATE_FEATURES = {
    "decisions": ("rule_decision", "rule_proposal"),
    "action_items": ("rule_action", "rule_commitment_only", "advice_taken_after"),
    "open_questions": ("rule_question",),
}


def is_candidate(features: Mapping[str, float], kind: str) -> bool:
    return any(features.get(name, 0.0) > 0 for name in CANDIDATE_FEATURES[kind])


def fit_kind(examples: Sequence[Example], kind: str, mode: str = RULES_MODE) -> KindModel:
    """Logistic regression with an L2 penalty and balanced classes, full-batch gradient descent
    from zero for `STEPS` steps: deterministic. Weights rounded to 4 decimals. A filter is
    fitted on the rules' candidates of the kind only (what it will judge); the other modes on
    every message."""
    if mode == FILTER_MODE:
        examples = [e for e in examples if is_candidate(e.features, kind)]
    x = np.array([[e.features.get(n, 0.0) for n in FEATURE_NAMES] for e in examples], dtype=float)
    y = np.array([kind in e.labels for e in examples], dtype=bool)
    if len(examples) == 0:
        return KindModel(0.0, {}, 0.5, mode)
    positives = max(1, int(y.sum()))
    negatives = max(1, len(y) - int(y.sum()))
    sample = np.where(y, len(y) / (2 * positives), len(y) / (2 * negatives))
    w = np.zeros(x.shape[1])
    b = 0.0
    target = y.astype(float)
    for _ in range(STEPS):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w + b, -30, 30)))
        error = (p - target) * sample
        w -= LEARNING_RATE * (x.T @ error / len(y) + L2 * w)
        b -= LEARNING_RATE * float(error.mean())
    weights = {n: round(float(v), 4) for n, v in zip(FEATURE_NAMES, w, strict=True)}
    bias = round(b, 4)
    rounded = KindModel(bias, weights, 0.5)
    probabilities = np.array([rounded.probability(e.features) for e in examples])
    return KindModel(bias, weights, _best_threshold(probabilities, y), mode)


def fit(examples: Sequence[Example], modes: Mapping[str, str] | None = None) -> ItemModel:
    """One model per kind, each fitted for and set in `modes[kind]` (default: rules, i.e. not
    deciding; its model is then fitted as for proposing, on every message)."""
    return ItemModel(
        {kind: fit_kind(examples, kind, (modes or {}).get(kind, RULES_MODE)) for kind in KINDS}
    )
