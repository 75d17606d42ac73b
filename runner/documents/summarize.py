"""Summary and key points of a document FOR A QUERY: the summarizer protocol and the offline
(extractive, deterministic) implementation. The LLM implementation is `llm_summary.py`.

Offline, sentences of the canonical text are scored for the query with the evidence formula
(matched query terms × rarity of the matched terms across chunks; whole-token matching), so two
queries on one document pick different sentences:
- key points: the best-scoring sentences (40-400 characters), at most one per evidence chunk so
  they cover different parts of the document, in ranking order;
- summary: the document's opening sentence (what the document is) followed by the next best
  sentences not used as key points, in document order, within the character budget.
Without query terms, or when no sentence matches, the choice is positional: the opening
sentences make the summary and the first sentence of the intro, conclusion and headed sections
make the key points. Table fragments and running headers (`runner.documents.prose`) are never
summary sentences or key points. Sentences are copied verbatim; nothing is invented.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from runner.core.vocabulary import ExtractionUsage, PipelineWarning
from runner.documents.canonical import PageSpan
from runner.documents.evidence import EvidenceMode, SelectedEvidence, positional_order
from runner.documents.evidence_chunks import EvidenceChunk
from runner.documents.prose import is_prose, repeated_sentences, sentence_spans
from runner.documents.terms import query_terms, term_set, tokens
from runner.errors import LLMError

SUMMARY_MAX_CHARS = 2000
KEY_POINT_MAX_CHARS = 500
MAX_KEY_POINTS = 10

_KEY_POINT_RANGE = (40, 400)
_SUMMARY_SENTENCE_MAX = 600


# Told where a summarizer is: its phase ("map" or "reduce") and, in the map, the parts done of
# all (the job shows them as its progress; runner.core.progress).
ProgressHook = Callable[[str, int, int], Awaitable[None]]


@dataclass(frozen=True)
class SummaryRequest:
    """Everything a summarizer may use. `evidence` is what the digest already quotes."""

    query: str
    canonical_text: str
    page_spans: list[PageSpan] | None
    chunks: list[EvidenceChunk]
    evidence: list[SelectedEvidence]
    summary_budget: int = SUMMARY_MAX_CHARS  # characters
    key_points_budget: int = 2500  # characters over all key points
    max_key_points: int = 8
    title: str | None = None
    evidence_mode: EvidenceMode = "query"
    progress: ProgressHook | None = field(default=None, compare=False)


@dataclass(frozen=True)
class SummaryResult:
    summary: str
    key_points: list[str]
    warnings: list[PipelineWarning] = field(default_factory=list)
    # The LLM calls and tokens it took (None for the offline summarizer, which calls none).
    usage: ExtractionUsage | None = field(default=None, compare=False)
    # Parts of the document the offline rules read because the model failed on them (their
    # CHUNKS_EXTRACTED_OFFLINE warning is in `warnings`): the digest is PARTIAL.
    partial: bool = False
    map_chunks: int = 0  # map requests planned (0: one request read the document)
    # The model that wrote it (None offline) and, when it is not the summarizer's own primary
    # (a fallback model answered), the fingerprint that keys the digest instead.
    model: str | None = None
    fingerprint: str | None = None


class Summarizer(Protocol):
    name: str

    def fingerprint(self) -> str:
        """Everything that changes the output for the same request (part of the cache key)."""
        ...

    def refusal(self) -> LLMError | None:
        """The error a call would fail with now, known without calling (an open circuit
        breaker), so the job skips the summarizer instead of asking it; None when it may run."""
        ...

    async def summarize(self, request: SummaryRequest) -> SummaryResult: ...


@dataclass(frozen=True)
class Sentence:
    start: int
    end: int
    text: str
    chunk_index: int


def _regions(text: str, page_spans: list[PageSpan] | None) -> list[PageSpan]:
    return [(0, len(text))] if page_spans is None else [s for s in page_spans if s[1] > s[0]]


def split_sentences(
    text: str, page_spans: list[PageSpan] | None, chunks: list[EvidenceChunk]
) -> list[Sentence]:
    """Sentences of the document's text (page markers excluded), each with its chunk."""
    chunk_starts = [chunk.start for chunk in chunks]
    return [
        Sentence(
            start=start,
            end=end,
            text=text[start:end],
            chunk_index=max(0, bisect.bisect_right(chunk_starts, start) - 1),
        )
        for region_start, region_end in _regions(text, page_spans)
        for start, end in sentence_spans(text, region_start, region_end)
    ]


def fit_text(text: str, limit: int) -> str:
    """`text` cut at a word boundary to at most `limit` characters, marked with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 1)
    return text[: cut if cut > 0 else limit - 1].rstrip(" ,;:") + "…"


def rank_sentences(
    sentences: list[Sentence], chunks: list[EvidenceChunk], query: str
) -> list[tuple[float, Sentence]]:
    """Sentences matching the query, best first (score, then occurrences, then position)."""
    wanted = query_terms(query)
    if not wanted:
        return []
    frequencies = Counter(
        term for chunk in chunks for term in term_set(chunk.text) if term in wanted
    )
    ranked: list[tuple[float, int, int, Sentence]] = []
    for sentence in sentences:
        counts = Counter(tokens(sentence.text))
        matched = [term for term in wanted if term in counts]
        if not matched:
            continue
        weight = sum(1 / math.log2(frequencies[term] + 2) for term in matched) / len(matched)
        score = round(len(matched) / len(wanted) * weight, 6)
        ranked.append((score, sum(counts[t] for t in matched), sentence.start, sentence))
    ranked.sort(key=lambda item: (-item[0], -item[1], item[2]))
    return [(score, sentence) for score, _, _, sentence in ranked]


def _key_points(candidates: list[Sentence], request: SummaryRequest) -> list[Sentence]:
    low, high = _KEY_POINT_RANGE
    chosen: list[Sentence] = []
    used_chunks: set[int] = set()
    total = 0
    limit = min(request.max_key_points, MAX_KEY_POINTS)
    for sentence in candidates:
        if len(chosen) >= limit:
            break
        size = len(sentence.text)
        if not low <= size <= high or sentence.chunk_index in used_chunks:
            continue
        if total + size > request.key_points_budget or not is_prose(sentence.text):
            continue
        if any(_same(sentence, point) for point in chosen):
            continue  # documents repeat themselves (boilerplate, pull quotes)
        chosen.append(sentence)
        used_chunks.add(sentence.chunk_index)
        total += size
    return chosen


def _same(a: Sentence, b: Sentence) -> bool:
    return a.text.casefold() == b.text.casefold()


def _summary(
    lead: list[Sentence], candidates: list[Sentence], taken: list[Sentence], budget: int
) -> str:
    """Lead and candidate sentences within `budget`, in document order. Sentences already
    `taken` as key points are left out, unless no other candidate fits: a summary must still
    speak to the query."""
    budget = min(budget, SUMMARY_MAX_CHARS)
    picked: list[Sentence] = []
    size = -1
    for avoid in (taken, []):
        for sentence in [*lead, *candidates]:
            if len(sentence.text) > _SUMMARY_SENTENCE_MAX or size + 1 + len(sentence.text) > budget:
                continue
            if any(_same(sentence, other) for other in [*avoid, *picked]):
                continue
            picked.append(sentence)
            size += 1 + len(sentence.text)
        if any(sentence in candidates for sentence in picked):
            break
    if not picked:
        first = next((s for s in [*lead, *candidates]), None)
        return fit_text(first.text, budget) if first else ""
    return " ".join(sentence.text for sentence in sorted(picked, key=lambda s: s.start))


def offline_summary(request: SummaryRequest) -> SummaryResult:
    """The deterministic extractive summary and key points (see the module docstring)."""
    sentences = split_sentences(request.canonical_text, request.page_spans, request.chunks)
    # Documents without prose (a title page, a list) still get a summary from what they have.
    # Nor a running header, which a document "says" on every page.
    running = repeated_sentences([s.text for s in sentences])
    prose = [
        s
        for s in sentences
        if is_prose(s.text) and " ".join(s.text.casefold().split()) not in running
    ] or sentences
    lead = prose[:1]
    ranked = [sentence for _, sentence in rank_sentences(prose, request.chunks, request.query)]
    warnings: list[PipelineWarning] = []
    if not ranked:
        if query_terms(request.query):
            warnings.append(
                PipelineWarning("no_query_match", "no sentence matches the query's terms")
            )
        order = {chunk.index: rank for rank, chunk in enumerate(positional_order(request.chunks))}
        firsts: dict[int, Sentence] = {}
        for sentence in prose[1:]:
            firsts.setdefault(sentence.chunk_index, sentence)
        ranked = sorted(
            firsts.values(), key=lambda s: (order.get(s.chunk_index, len(order)), s.start)
        )
        lead = prose[:3]
    points = _key_points(ranked, request)
    summary = _summary(lead, ranked, points, request.summary_budget)
    return SummaryResult(
        summary=summary,
        key_points=[fit_text(point.text, KEY_POINT_MAX_CHARS) for point in points],
        warnings=warnings,
    )


class OfflineSummarizer:
    """The built-in summarizer: no network, same input → same output."""

    name = "offline"

    def fingerprint(self) -> str:
        return "offline-extractive:2"

    def refusal(self) -> LLMError | None:
        return None  # nothing to refuse: no endpoint

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return offline_summary(request)
