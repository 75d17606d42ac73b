"""Evidence selection: which chunks of a document answer the query, with what score.

Scoring, per chunk, with `terms.query_terms`:

    score = (matched_terms / query_terms) * mean(1 / log2(df(term) + 2) for matched terms)
            * (0.5 + 0.5 * hits / (hits + k1 * (1 - b + b * length / average_length)))

where `df` is the number of chunks containing the term: a rare term says more than one found
everywhere. The first two factors (the design's formula) tie every chunk that matches the same
terms (acl19irc.pdf's five snippets for "How was the dataset annotated?" all scored 0.242232), so
the last factor, BM25's saturating term frequency (k1 = 1.2, b = 0.75; `hits` = occurrences of
the matched terms in the chunk, `length` its content tokens), tells them apart: more mentions, or
the same mentions in fewer words, score higher, with diminishing returns. The score stays in
[0, 1] (each factor is at most 1) and deterministic. Matching is on whole tokens. Ranking: higher
score, then more occurrences of the query terms, then earlier chunk, then shorter chunk. Scores are rounded to 6 decimals first so ties are exact and reproducible. Chunks
that are mostly prose (`prose.is_mostly_prose`) rank before reference lists, tables and menus, whose
many names would otherwise match every query; their scores are unchanged.

Short queries: with no content term (empty, or only stopwords) evidence is positional: the opening
chunk, the closing chunk, then chunks that start with a heading, then the rest in order, all with
score 0 (they are not relevant to a query, only representative). One-term queries are scored
normally, not sent to the positional path, because a one-word query ("kubernetes") is still a query
and must shape the evidence. If no chunk matches at all, the positional choice is used too and the
caller is told (`mode == "positional"`).

A chunk longer than `max_chars` is cut to the window of at most `max_chars` that holds the most
query-term occurrences, starting at the chunk or a sentence start and ending at a sentence,
clause or word boundary, so the snippet is still an exact slice of the canonical text.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from runner.documents.evidence_chunks import EvidenceChunk, after_heading
from runner.documents.prose import is_mostly_prose
from runner.documents.terms import query_terms, term_set, tokens

EvidenceMode = Literal["query", "positional"]
_SENTENCE_END = re.compile(r"[.!?][\"'’”)\]]*\s+|[。！？]\s*|\n\n")
_CLAUSE_END = re.compile(r"[,;:]\s")


@dataclass(frozen=True)
class ScoredChunk:
    chunk: EvidenceChunk
    score: float
    matched: tuple[str, ...]
    hits: int  # occurrences of query terms in the chunk
    prose: bool  # mostly running text (not a reference list, table or menu)


@dataclass(frozen=True)
class SelectedEvidence:
    start: int  # absolute, end-exclusive offsets in the canonical text
    end: int
    page: int | None
    text: str
    score: float
    chunk_index: int


@dataclass(frozen=True)
class EvidenceSelection:
    snippets: list[SelectedEvidence]
    mode: EvidenceMode
    terms: tuple[str, ...]


def score_chunks(chunks: list[EvidenceChunk], query: str) -> list[ScoredChunk]:
    """Every chunk with its score, in ranking order (see the module docstring)."""
    wanted = query_terms(query)
    chunk_tokens = [Counter(tokens(chunk.text)) for chunk in chunks]
    frequencies = Counter(term for counts in chunk_tokens for term in counts if term in wanted)
    lengths = [sum(counts.values()) for counts in chunk_tokens]
    average_length = sum(lengths) / max(1, len(lengths))
    scored: list[ScoredChunk] = []
    for chunk, counts, length in zip(chunks, chunk_tokens, lengths, strict=True):
        matched = tuple(term for term in wanted if term in counts)
        hits = sum(counts[term] for term in matched)
        if matched:
            weight = sum(1 / math.log2(frequencies[term] + 2) for term in matched) / len(matched)
            factor = frequency_factor(hits, length, average_length)
            score = round(len(matched) / len(wanted) * weight * factor, 6)
        else:
            score = 0.0
        prose = is_mostly_prose(chunk.text) if matched else False
        scored.append(ScoredChunk(chunk, score, matched, hits, prose))
    scored.sort(
        key=lambda item: (
            not item.prose,
            -item.score,
            -item.hits,
            item.chunk.index,
            len(item.chunk),
        )
    )
    return scored


# The share of the score the term frequency decides (the rest is the seed's coverage × rarity),
# and BM25's saturation and length normalization (Robertson's usual k1 and b).
_FREQUENCY_SHARE = 0.5
_K1, _B = 1.2, 0.75


def frequency_factor(hits: int, length: int, average_length: float) -> float:
    """In [1 - _FREQUENCY_SHARE, 1): BM25's saturating term frequency of the chunk's query-term
    occurrences, `hits / (hits + k1 · (1 - b + b · length / average_length))`, so a chunk that
    says the matched terms more often, or in fewer words, scores higher, with diminishing
    returns (a tenth mention adds little)."""
    norm = _K1 * (1 - _B + _B * length / max(1.0, average_length))
    return 1 - _FREQUENCY_SHARE + _FREQUENCY_SHARE * hits / (hits + norm)


def positional_order(chunks: list[EvidenceChunk]) -> list[EvidenceChunk]:
    """Intro, conclusion, chunks opening with a heading, then the rest in document order."""
    if not chunks:
        return []
    first, last = chunks[0], chunks[-1]
    headed = [
        chunk
        for chunk in chunks[1:-1]
        if "\n\n" in chunk.text and after_heading(chunk.text, 0, chunk.text.index("\n\n"))
    ]
    ordered = [first, last, *headed, *chunks[1:-1]]
    return list({chunk.index: chunk for chunk in ordered}.values())


def _rstrip(text: str, end: int) -> int:
    while end > 0 and text[end - 1].isspace():
        end -= 1
    return end


def _window_ends(text: str, start: int, limit: int) -> int:
    """Best end in `text[start:limit]`: a sentence end, else a clause end, else a space."""
    half = start + (limit - start) // 2
    window = text[start:limit]
    for pattern in (_SENTENCE_END, _CLAUSE_END):
        ends = [
            start + m.end()
            for m in pattern.finditer(window)
            if start + m.end() >= half
            and not after_heading(text, start, _rstrip(text, start + m.end()))
        ]
        if ends:
            return ends[-1]
    space = text.rfind(" ", half, limit)
    return space if space > start else limit


def _best_window(chunk: EvidenceChunk, wanted: set[str], max_chars: int) -> tuple[int, int]:
    """Relative `(start, end)` inside the chunk of the window that best fits `max_chars`."""
    text = chunk.text
    if len(text) <= max_chars:
        return 0, len(text)
    starts = [0] + [m.end() for m in _SENTENCE_END.finditer(text) if m.end() < len(text)]
    best: tuple[int, int, int] | None = None  # (-hits, start, end)
    for start in starts:
        if start + max_chars >= len(text):
            end = len(text)
        else:
            end = _window_ends(text, start, start + max_chars)
        while end > start and text[end - 1].isspace():
            end -= 1
        hits = sum(1 for token in tokens(text[start:end]) if token in wanted)
        candidate = (-hits, start, end)
        if end > start and (best is None or candidate < best):
            best = candidate
    assert best is not None  # start 0 always yields a non-empty window
    return best[1], best[2]


def _snippet(
    chunk: EvidenceChunk, score: float, wanted: set[str], max_chars: int
) -> SelectedEvidence:
    start, end = _best_window(chunk, wanted, max_chars)
    return SelectedEvidence(
        start=chunk.start + start,
        end=chunk.start + end,
        page=chunk.page,
        text=chunk.text[start:end],
        score=score,
        chunk_index=chunk.index,
    )


def select_evidence(
    chunks: list[EvidenceChunk], query: str, *, max_snippets: int, max_chars: int
) -> EvidenceSelection:
    """The top evidence snippets of a document for `query`."""
    wanted = query_terms(query)
    if max_snippets <= 0 or not chunks:
        return EvidenceSelection(
            snippets=[], mode="query" if wanted else "positional", terms=tuple(wanted)
        )
    if wanted:
        ranked = [item for item in score_chunks(chunks, query) if item.score > 0]
        if ranked:
            snippets = [
                _snippet(item.chunk, item.score, set(wanted), max_chars)
                for item in ranked[:max_snippets]
            ]
            return EvidenceSelection(snippets=snippets, mode="query", terms=tuple(wanted))
    picked = positional_order(chunks)[:max_snippets]
    snippets = [_snippet(chunk, 0.0, set(wanted), max_chars) for chunk in picked]
    return EvidenceSelection(snippets=snippets, mode="positional", terms=tuple(wanted))


def relevance(query: str, text: str) -> float:
    """Share of the query's terms that occur in `text` (whole tokens); 0 for an empty query.
    Used to rank raw documents before choosing which to digest."""
    wanted = query_terms(query)
    if not wanted:
        return 0.0
    present = term_set(text)
    return round(sum(1 for term in wanted if term in present) / len(wanted), 6)
