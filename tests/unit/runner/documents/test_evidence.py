"""Evidence chunking and scoring: sizes and boundaries, no overlap, whole-token matching,
document-frequency weighting, deterministic tie-breaks and the short-query fallback."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from runner.documents.canonical import canonicalize, join_pages
from runner.documents.evidence import relevance, score_chunks, select_evidence
from runner.documents.evidence_chunks import MAX_CHARS, chunk_document
from runner.documents.ingest import ingest_bytes
from runner.documents.terms import query_terms, tokens
from tests.support.documents import HTML_DIR, PDF_DIR, docs_file


def _sentences(count: int, word: str = "alpha") -> str:
    return " ".join(
        f"Sentence {i} talks about {word} and other matters here." for i in range(count)
    )


def test_terms_drop_stopwords_and_match_whole_tokens() -> None:
    assert query_terms("What is the role of AI in maintaining systems?") == [
        "role",
        "ai",
        "maintaining",
        "system",
    ]
    assert "ai" not in tokens("We maintain the daily build.")
    assert tokens("ﬁle budgets, error-budgets") == ["file", "budget", "error", "budget"]


def test_chunks_respect_sizes_and_never_overlap() -> None:
    text = canonicalize("\n\n".join(_sentences(n) for n in (3, 12, 1, 30, 2)))
    chunks = chunk_document(text)
    assert all(len(chunk) <= MAX_CHARS for chunk in chunks)
    assert all(text[c.start : c.end] == c.text and c.text == c.text.strip() for c in chunks)
    assert all(a.end <= b.start for a, b in zip(chunks, chunks[1:], strict=False))
    # Together the chunks cover every non-space character.
    covered = "".join(c.text for c in chunks).replace(" ", "").replace("\n", "")
    assert covered == text.replace(" ", "").replace("\n", "")
    assert chunk_document(text) == chunks  # deterministic


def test_boundary_priorities() -> None:
    paragraph_a, paragraph_b = _sentences(5), _sentences(5, "beta")
    chunks = chunk_document(f"{paragraph_a}\n\n{paragraph_b}")
    assert [c.text for c in chunks] == [paragraph_a, paragraph_b]  # paragraph break first
    long_paragraph = _sentences(20)
    for chunk in chunk_document(long_paragraph)[:-1]:
        assert chunk.text.endswith("here.")  # then sentence ends
    words = " ".join(["word"] * 300)  # no punctuation: word breaks, never mid-word
    assert all(c.text.replace("word", "").strip() == "" for c in chunk_document(words))
    unbroken = "x" * 1200  # nothing to break on: hard cut at MAX
    assert [len(c) for c in chunk_document(unbroken)] == [500, 500, 200]


@given(st.lists(st.text(alphabet="ab .,\n", max_size=300), min_size=1, max_size=5))
@settings(max_examples=60)
def test_pdf_chunks_stay_inside_their_page(pages: list[str]) -> None:
    text, spans = join_pages(pages)
    for chunk in chunk_document(text, spans):
        start, end = spans[chunk.page - 1]  # type: ignore[operator]
        assert start <= chunk.start < chunk.end <= end
        assert "---PAGE" not in chunk.text


def test_score_formula_and_document_frequency_weighting() -> None:
    paragraphs = [
        "Rate limiting protects the service from bursts of traffic and abuse.",
        "Retries with backoff help clients survive transient errors in the service.",
        "The service also logs every request for auditing and later analysis.",
    ]
    chunks = chunk_document("\n\n".join(" ".join([p] * 5) for p in paragraphs))
    assert len(chunks) == 3
    scored = {item.chunk.index: item for item in score_chunks(chunks, "service rate limiting")}
    lengths = [len(tokens(chunk.text)) for chunk in chunks]
    average = sum(lengths) / 3

    def frequency(hits: int, length: int) -> float:  # BM25's k1 = 1.2, b = 0.75, half the score
        return 0.5 + 0.5 * hits / (hits + 1.2 * (0.25 + 0.75 * length / average))

    # "service" is in all 3 chunks (df=3), "rate" and "limiting" only in the first (df=1); each
    # is said 5 times per chunk.
    expected_first = (3 / 3) * ((1 / math.log2(5) + 2 / math.log2(3)) / 3)
    assert scored[0].score == round(expected_first * frequency(15, lengths[0]), 6)
    expected_second = (1 / 3) * (1 / math.log2(5)) * frequency(5, lengths[1])
    assert scored[1].score == round(expected_second, 6)
    assert scored[0].matched == ("service", "rate", "limiting")
    assert all(0 < item.score <= 1 for item in scored.values())


def test_chunks_matching_the_same_terms_score_by_how_often_and_densely() -> None:
    """The design's formula (coverage × rarity) ties chunks that match the same terms; the
    frequency factor tells them apart: more mentions, or as many in fewer words, score higher."""
    text = "\n\n".join(
        [
            "The dataset was annotated by hand. " + _sentences(6, "filler"),
            "The dataset was annotated twice, and the annotated dataset was checked again. "
            + _sentences(5, "other"),
            "The dataset was annotated. " + _sentences(7, "padding"),
        ]
    )
    chunks = chunk_document(text)
    assert len(chunks) == 3
    scored = {item.chunk.index: item for item in score_chunks(chunks, "dataset annotated")}
    assert {item.matched for item in scored.values()} == {("dataset", "annotated")}
    assert scored[1].score > scored[0].score > scored[2].score > 0


def test_acl19irc_evidence_scores_are_distinct() -> None:
    """The five snippets of a real paper for a real question: once all 0.242232."""
    document = ingest_bytes(docs_file(PDF_DIR / "acl19irc.pdf").read_bytes(), "application/pdf")
    chunks = chunk_document(document.canonical_text, document.page_spans)
    selection = select_evidence(
        chunks, "How was the dataset annotated?", max_snippets=5, max_chars=400
    )
    scores = [snippet.score for snippet in selection.snippets]
    assert len(scores) == 5 and len(set(scores)) == 5, scores
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)


def test_whole_token_matching_in_selection() -> None:
    text = "\n\n".join(
        [
            " ".join(["We maintain the daily build and retain the old artifacts for a while."] * 4),
            " ".join(["The AI model helps triage bug reports before humans read them."] * 4),
        ]
    )
    chunks = chunk_document(text)
    assert len(chunks) == 2
    selection = select_evidence(chunks, "AI triage", max_snippets=5, max_chars=400)
    assert [s.text for s in selection.snippets] == [text.split("\n\n")[1]]


def test_ties_break_by_position_then_length() -> None:
    same = " ".join(["Caching reduces latency for repeated reads of the same key."] * 5)
    text = "\n\n".join([same + " Extra words to make this one longer than the rest.", same, same])
    chunks = chunk_document(text)
    assert len(chunks) == 3
    ranked = score_chunks(chunks, "caching latency")
    # The first chunk says as much in more words: it scores lower; the two equal chunks tie
    # and the earlier wins.
    assert [item.chunk.index for item in ranked] == [1, 2, 0]
    assert ranked[0].score == ranked[1].score > ranked[2].score
    assert ranked == score_chunks(chunks, "caching latency")  # deterministic


def test_short_query_falls_back_to_positional_evidence() -> None:
    text = "\n\n".join(
        [
            _sentences(7, "intro"),
            "Methods",
            _sentences(6, "method"),
            _sentences(6, "middle"),
            _sentences(6, "conclusion"),
        ]
    )
    chunks = chunk_document(text)
    for query in ("", "what is it about?", "the of and"):
        selection = select_evidence(chunks, query, max_snippets=3, max_chars=400)
        assert selection.mode == "positional" and not selection.terms
        indexes = [s.chunk_index for s in selection.snippets]
        assert indexes[:2] == [0, chunks[-1].index]  # intro, then conclusion
        assert chunks[indexes[2]].text.startswith("Methods")  # then a headed section
        assert all(s.score == 0.0 for s in selection.snippets)
    one_term = select_evidence(chunks, "conclusion", max_snippets=3, max_chars=400)
    assert one_term.mode == "query"
    assert all("conclusion" in s.text for s in one_term.snippets)


def test_long_chunks_are_cut_around_the_query_terms() -> None:
    text = _sentences(6) + " The needle sentence mentions quokka explicitly here."
    chunk = chunk_document(text)[0]
    assert len(chunk) > 300
    selection = select_evidence([chunk], "quokka needle", max_snippets=1, max_chars=200)
    snippet = selection.snippets[0]
    assert len(snippet.text) <= 200 and "quokka" in snippet.text
    assert text[snippet.start : snippet.end] == snippet.text


def test_two_queries_pick_different_evidence_on_a_real_page() -> None:
    source = docs_file(HTML_DIR / "google-sre-book-1" / "source.html").read_bytes()
    chunks = chunk_document(ingest_bytes(source, "text/html").canonical_text)
    paging = select_evidence(chunks, "paging humans on-call alerts", max_snippets=5, max_chars=400)
    latency = select_evidence(
        chunks, "latency percentiles histogram", max_snippets=5, max_chars=400
    )
    assert {s.chunk_index for s in paging.snippets}.isdisjoint(
        s.chunk_index for s in latency.snippets
    )
    wanted = {"latency", "percentile", "histogram"}
    assert all(wanted & set(tokens(s.text)) for s in latency.snippets)


def test_relevance_for_ranking_raw_documents() -> None:
    assert relevance("error budget policy", "Our error budget is spent.") == round(2 / 3, 6)
    assert relevance("", "anything") == 0.0
