"""A report's question split into the sub-questions its evidence is gathered for, by rules
(the model's split, checked, is `runner.reports.llm_decompose`; these rules stand in when it
fails).

Rules (`split_question`): the question is cut at sentence ends (`?`, `!`, `;`, a period before
a capital), then at commas and conjunctions (`and`, `or`, `as well as`, `along with`, `plus`).
A part naming none of the question's words (`runner.reports.evidence.question_terms`: no asking
words such as "summarize") is dropped; one naming a single word is joined to the part before it
(to the next when it opens its sentence), so "England and Wales" or "the shape and the
appearance" stays one part instead of a part that is only a name. Parts with the same words are
one; at most `MAX_SUB_QUESTIONS`, the last taking in the rest. A question that leaves one part
is atomic: its one sub-question is the question itself, and the report is what it was without
decomposition.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from runner.reports.evidence import named_terms, question_terms

MAX_SUB_QUESTIONS = 4
# A part naming fewer of the question's words than this is no question of its own.
MIN_PART_TERMS = 2
# Part of a report's cache key: bumped when the rules or the prompt change what is gathered.
DECOMPOSER_VERSION = "decompose-1"

_SENTENCES = re.compile(r"(?<=[?!;])\s+|(?<=\.)\s+(?=[A-Z])")
_CONJUNCTIONS = re.compile(
    r"\s*,\s*(?:(?:and|or)\s+)?|\s+(?:as well as|along with|and also|and|or|plus)\s+",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Decomposition:
    """The sub-questions of a question, how they were found (`rules` or `model`) and what went
    wrong on the way (a model that failed, with the rules used instead)."""

    question: str
    sub_questions: tuple[str, ...]
    method: str = "rules"
    warnings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def atomic(self) -> bool:
        return len(self.sub_questions) == 1

    def as_json(self) -> dict[str, Any]:
        return {"method": self.method, "sub_questions": list(self.sub_questions)}


def terms_of(text: str) -> frozenset[str]:
    return frozenset(question_terms(text)) if _has_words(text) else frozenset()


def _has_words(text: str) -> bool:
    return any(char.isalnum() for char in text)


_OPENING_CONJUNCTION = re.compile(r"^(?:and|or|plus|also)\s+", re.IGNORECASE)


def _clean(part: str) -> str:
    """A part as a sub-question: without the conjunction that joined it to the one before."""
    return _OPENING_CONJUNCTION.sub("", " ".join(part.split()).strip(" ,;:."))


def _pieces(text: str, separator: re.Pattern[str], offset: int) -> list[tuple[int, int]]:
    """Spans of `text` between the matches of `separator`, shifted by `offset`, empty ones out."""
    spans, start = [], 0
    for match in separator.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(offset + s, offset + e) for s, e in spans if text[s:e].strip()]


def split_question(question: str) -> tuple[str, ...]:
    """The sub-questions of `question` by the rules of the module docstring: each is a span of
    the question (joined parts keep the words between them)."""
    whole = " ".join(question.split())
    asked = set(question_terms(whole))
    parts: list[tuple[int, int]] = []
    for sentence_start, sentence_end in _pieces(whole, _SENTENCES, 0):
        sentence = whole[sentence_start:sentence_end]
        pending: tuple[int, int] | None = None  # a one-word opening, waiting for its part
        own: list[tuple[int, int]] = []
        for start, end in _pieces(sentence, _CONJUNCTIONS, sentence_start):
            named = named_terms(asked, set(terms_of(whole[start:end])))
            if not named:
                continue  # only asking words and stopwords: "please", "and so on"
            if len(named) < MIN_PART_TERMS:
                if own:
                    own[-1] = (own[-1][0], end)
                else:
                    pending = (pending[0] if pending else start, end)
                continue
            own.append((pending[0] if pending else start, end))
            pending = None
        if pending is not None:  # the whole sentence is one short question: "What is docker?"
            own.append(pending)
        parts += own
    unique: dict[frozenset[str], str] = {}
    for start, end in parts:
        text = _clean(whole[start:end])
        unique.setdefault(terms_of(text), text)
    kept = list(unique.values())
    if len(kept) > MAX_SUB_QUESTIONS:
        kept = [*kept[: MAX_SUB_QUESTIONS - 1], "; ".join(kept[MAX_SUB_QUESTIONS - 1 :])]
    if len(kept) <= 1:
        return (whole,)
    return tuple(kept)


def rules_decomposition(question: str) -> Decomposition:
    return Decomposition(question, split_question(question))
