"""BM25 scores of texts for a query: plain `bm25s` with its defaults (Lucene variant, k1=1.5,
b=0.75) over `bm25s.tokenize` (lower case, `\\w\\w+` tokens, its English stopwords, no stemmer).

The one BM25 of the code base: the evaluator's baseline ranking of document chunks
(`runner.evaluation.evidence`) and the report's evidence ranking (`runner.reports.evidence`)
both read it, so "BM25" means the same thing in a figure and in a report.
"""

from __future__ import annotations

import logging


def bm25_scores(texts: list[str], query: str) -> list[float]:
    """One score per text (0.0 for every text when the query shares no token with them)."""
    import bm25s  # imported here: only callers that rank need it (and numpy behind it)

    # bm25s sets its logger to DEBUG on import, which prints "Building index" on every call;
    # hand the level back to the process's logging configuration (`digestd -v` shows it).
    logging.getLogger("bm25s").setLevel(logging.NOTSET)
    if not texts:
        return []
    corpus = bm25s.tokenize(texts, stopwords="en", show_progress=False, return_ids=False)
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    wanted = bm25s.tokenize(query, stopwords="en", show_progress=False, return_ids=False)[0]
    known = [token for token in wanted if token in retriever.vocab_dict]
    return [float(s) for s in retriever.get_scores(known)] if known else [0.0] * len(texts)
