"""Query-conditioned evidence on QMSum meetings: evidence recall@5 of digestd's ranking, side by
side with plain BM25 (`bm25s`) and position-only ranking of the same chunks.

Canonical text of a meeting: one paragraph per turn, `"{speaker}: {content}"`, each canonicalized
on its own (`canonicalize`) and joined with `"\\n\\n"`. Canonicalizing a turn never produces an
empty paragraph (the speaker label is always there), so the join is itself canonical and every
turn keeps a known `(start, end)` char span. The speaker label is kept because a transcript
digested by digestd carries it, and queries name speakers ("What did Barry Hughes think ...").

Gold: each specific query of a meeting lists turn spans `[first, last]` (inclusive, as in QMSum:
the topic spans of a 435-turn meeting end at 434). A gold span's char range runs from the start
of its first turn to the end of its last turn. General queries ("Summarize the whole meeting")
have no spans and are skipped.

Hit rule: a snippet hits a gold span when their half-open char ranges overlap
(`snippet.start < gold.end and gold.start < snippet.end`), even by one character. Per query,
recall@k = gold spans hit by any of the top-k snippets / gold spans. A meeting's figure and the
overall figure are means over queries (every query weighs the same, whatever its span count).

The three rankings see the same chunks (`chunk_document`, 400/500/50-character chunking):
- digestd: `select_evidence` with the production settings (5 snippets, snippets cut to the
  configured `evidence_max_chars`). It returns fewer than 5 snippets when fewer chunks match.
- bm25: `bm25s.BM25()` with its defaults (Lucene variant, k1=1.5, b=0.75) over `bm25s.tokenize`
  (lower case, `\\w\\w+` tokens, its English stopwords, no stemmer); chunks by score, then
  document order; the top 5 whole chunks, even when fewer than 5 score above zero.
- position: the first 5 chunks of the meeting, whole.
A fourth column, random, is not a run but the exact expectation of recall@5 for 5 chunks drawn
uniformly without replacement: it shows how easy the gold spans are to hit by chance (QMSum's
spans are long: some cover a third of a meeting).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from statistics import fmean
from typing import Any

from runner.documents.canonical import canonicalize
from runner.documents.evidence import select_evidence
from runner.documents.evidence_chunks import EvidenceChunk, chunk_document
from runner.documents.ingest import ingest_text
from runner.documents.policy import DigestConfig
from runner.evaluation.tables import EvalSection, render_table
from runner.grounding.bm25 import bm25_scores

Span = tuple[int, int]  # half-open char range in the canonical text
Ranker = Callable[[list[EvidenceChunk], str, int], list[Span]]

TOP_K = 5
MEETINGS_DIR = Path("meetings") / "qmsum"
RANKINGS = ("digestd", "bm25", "position")
RANDOM = "random"
TURN_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class GoldQuery:
    text: str
    turn_spans: list[tuple[int, int]]  # QMSum's [first, last] turn indices, inclusive
    spans: list[Span]  # the same as char ranges of the canonical text


@dataclass(frozen=True)
class Meeting:
    name: str
    canonical_text: str
    turn_spans: list[Span]  # char span of every turn, by turn index
    queries: list[GoldQuery]


@dataclass(frozen=True)
class QueryResult:
    meeting: str
    query: GoldQuery
    recall: dict[str, float]  # ranking name → recall@k
    snippets: dict[str, list[Span]]  # ranking name → its top-k snippet ranges


def meeting_text(turns: Sequence[tuple[str, str]]) -> tuple[str, list[Span]]:
    """Canonical text of `(speaker, content)` turns and the char span of each turn in it."""
    pieces: list[str] = []
    spans: list[Span] = []
    position = 0
    for speaker, content in turns:
        paragraph = canonicalize(f"{speaker.strip() or 'Unknown'}: {content}")
        if pieces:
            pieces.append(TURN_SEPARATOR)
            position += len(TURN_SEPARATOR)
        pieces.append(paragraph)
        spans.append((position, position + len(paragraph)))
        position += len(paragraph)
    return "".join(pieces), spans


def turns_to_chars(turn_spans: list[Span], first: int, last: int) -> Span:
    """Char range of the inclusive turn range `[first, last]`."""
    if not 0 <= first <= last < len(turn_spans):
        raise ValueError(f"turn span [{first}, {last}] is outside 0..{len(turn_spans) - 1}")
    return turn_spans[first][0], turn_spans[last][1]


def load_meeting(path: Path) -> Meeting:
    """A QMSum meeting file with its specific queries mapped to char spans."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    turns = [
        (str(turn.get("speaker", "")), str(turn.get("content", "")))
        for turn in data["meeting_transcripts"]
    ]
    text, turn_spans = meeting_text(turns)
    # The evaluation is only meaningful if digestd stores exactly this text (no re-normalization
    # would shift the gold offsets); ingest_text must leave it unchanged.
    if ingest_text(text).canonical_text != text:
        raise ValueError(f"{path.name}: the joined transcript is not canonical")
    queries = []
    for item in data.get("specific_query_list", []):
        ranges = [(int(first), int(last)) for first, last in item.get("relevant_text_span", [])]
        if not ranges:
            continue
        spans = [turns_to_chars(turn_spans, first, last) for first, last in ranges]
        queries.append(GoldQuery(text=str(item["query"]), turn_spans=ranges, spans=spans))
    return Meeting(name=path.stem, canonical_text=text, turn_spans=turn_spans, queries=queries)


def overlaps(a: Span, b: Span) -> bool:
    """Do two half-open char ranges share at least one character?"""
    return a[0] < b[1] and b[0] < a[1]


def recall_at_k(snippets: Sequence[Span], gold: Sequence[Span], k: int = TOP_K) -> float:
    """Share of `gold` spans overlapped by at least one of the first `k` snippets."""
    if not gold:
        raise ValueError("recall is undefined without gold spans")
    top = snippets[:k]
    return sum(1 for span in gold if any(overlaps(s, span) for s in top)) / len(gold)


def digestd_ranking(chunks: list[EvidenceChunk], query: str, k: int) -> list[Span]:
    """digestd's evidence snippets for `query`, as produced for a stored digest."""
    config = DigestConfig()
    selection = select_evidence(chunks, query, max_snippets=k, max_chars=config.evidence_max_chars)
    return [(snippet.start, snippet.end) for snippet in selection.snippets]


def position_ranking(chunks: list[EvidenceChunk], query: str, k: int) -> list[Span]:
    """The first `k` chunks: what a reader skimming from the top sees. `query` is ignored."""
    del query
    return [(chunk.start, chunk.end) for chunk in chunks[:k]]


def bm25_ranking(chunks: list[EvidenceChunk], query: str, k: int) -> list[Span]:
    """Top `k` chunks by plain BM25 (bm25s defaults); ties broken by document order so runs
    are reproducible (numpy's top-k does not promise an order among equal scores)."""
    if not chunks:
        return []
    scores = bm25_scores([chunk.text for chunk in chunks], query)
    order = sorted(range(len(chunks)), key=lambda i: (-scores[i], i))
    return [(chunks[i].start, chunks[i].end) for i in order[:k]]


def random_recall(chunks: list[EvidenceChunk], gold: Sequence[Span], k: int = TOP_K) -> float:
    """Expected recall@k of `k` chunks drawn uniformly without replacement: per gold span, one
    minus the chance that all `k` draws miss the chunks it overlaps."""
    n = len(chunks)
    draws = min(k, n)
    expected = []
    for span in gold:
        hitting = sum(1 for chunk in chunks if overlaps((chunk.start, chunk.end), span))
        expected.append(1 - math.comb(n - hitting, draws) / math.comb(n, draws) if n else 0.0)
    return fmean(expected)


def bm25_version() -> str | None:
    """Installed `bm25s` version, or None when the optional dependency is missing."""
    try:
        return version("bm25s")
    except PackageNotFoundError:
        return None


def meeting_paths(data_dir: Path) -> list[Path]:
    directory = data_dir / MEETINGS_DIR
    if not directory.is_dir():
        raise FileNotFoundError(f"no QMSum meetings at {directory}")
    return sorted(directory.glob("*.json"))


def evaluate_queries(data_dir: Path, k: int = TOP_K) -> tuple[list[QueryResult], list[int]]:
    """Per-query results of every available ranking, and the chunk count of each meeting."""
    rankers: dict[str, Ranker] = {"digestd": digestd_ranking, "position": position_ranking}
    if bm25_version() is not None:
        rankers["bm25"] = bm25_ranking
    results: list[QueryResult] = []
    chunk_counts: list[int] = []
    for path in meeting_paths(data_dir):
        meeting = load_meeting(path)
        chunks = chunk_document(meeting.canonical_text)
        chunk_counts.append(len(chunks))
        for query in meeting.queries:
            snippets = {name: rank(chunks, query.text, k) for name, rank in rankers.items()}
            recall = {name: recall_at_k(spans, query.spans, k) for name, spans in snippets.items()}
            recall[RANDOM] = random_recall(chunks, query.spans, k)
            results.append(QueryResult(meeting.name, query, recall, snippets))
    return results, chunk_counts


def _figure(results: list[QueryResult], ranking: str) -> float | str:
    values = [r.recall[ranking] for r in results if ranking in r.recall]
    return fmean(values) if values else "n/a"


def evaluate_evidence(data_dir: Path) -> EvalSection:
    """Evidence recall@5 per meeting and overall for digestd, BM25 and position-only ranking."""
    paths = meeting_paths(data_dir)
    results, chunk_counts = evaluate_queries(data_dir)
    rows: list[list[str | float | int]] = []
    figures = (*RANKINGS, RANDOM)
    for path, chunks in zip(paths, chunk_counts, strict=True):
        mine = [r for r in results if r.meeting == path.stem]
        spans = sum(len(r.query.spans) for r in mine)
        rows.append([path.stem, len(mine), spans, chunks, *(_figure(mine, n) for n in figures)])
    total_spans = sum(len(r.query.spans) for r in results)
    rows.append(
        [
            "overall",
            len(results),
            total_spans,
            sum(chunk_counts),
            *(_figure(results, name) for name in figures),
        ]
    )
    short = sum(1 for r in results if len(r.snippets["digestd"]) < TOP_K)
    bm25 = bm25_version()
    notes = [
        "recall@5 = share of a query's gold turn spans whose char range overlaps the char range "
        "of at least one top-5 snippet; meeting and overall = mean over queries",
        "canonical text = one paragraph per turn ('Speaker: content'), joined with a blank "
        "line; QMSum turn spans are inclusive; general queries (no spans) are skipped",
        f"digestd = select_evidence, 5 snippets of at most {DigestConfig().evidence_max_chars} "
        f"chars; {short} of {len(results)} queries got fewer than 5 snippets",
        (
            f"bm25 = bm25s {bm25} defaults (lucene, k1=1.5, b=0.75), bm25s.tokenize with English "
            "stopwords, no stemming; whole chunks"
            if bm25
            else "bm25 = n/a: the optional bm25s package is not installed (pip install bm25s)"
        ),
        "position = the first 5 chunks, whole; all rankings share chunk_document's chunks",
        "random = expected recall@5 of 5 chunks drawn at random (computed, not sampled)",
    ]
    return EvalSection(
        title="Evidence recall@5 on QMSum meetings",
        columns=["meeting", "queries", "gold spans", "chunks", *figures],
        rows=rows,
        notes=notes,
    )


def describe_queries(results: list[QueryResult]) -> str:
    """One line per query and ranking: recall and which turns the snippets landed in."""
    lines = []
    for result in results:
        lines.append(f"{result.meeting}: {result.query.text}  gold turns {result.query.turn_spans}")
        for name, spans in result.snippets.items():
            lines.append(f"    {name:<8} {result.recall[name]:.2f}  snippets {spans}")
        lines.append(f"    {RANDOM:<8} {result.recall[RANDOM]:.2f}  (expected)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m runner.evaluation.evidence", description=__doc__.splitlines()[0]
    )
    parser.add_argument("data_dir", type=Path, help="the shared data directory (../shared/data)")
    parser.add_argument("--queries", action="store_true", help="also print every query's result")
    args = parser.parse_args(argv)
    print(render_table(evaluate_evidence(args.data_dir)))
    if args.queries:
        print()
        print(describe_queries(evaluate_queries(args.data_dir)[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
