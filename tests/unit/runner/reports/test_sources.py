"""The source registry: one id per canonical source (a message revision, a document, the page at
a URL) with its cited spans under it, ids contiguous by first appearance, the sections citing
each; and what the Markdown makes of it: the `## Sources` list and one footnote per source."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

from hypothesis import given
from hypothesis import strategies as st

from runner.grounding.footnotes import FootnotedSentence, Section
from runner.reports.audit import accept_sentences, audit_marked
from runner.reports.evidence import shown_title
from runner.reports.footnotes import footnote_text, markdown_url, source_label
from runner.reports.records import report_from_json, report_json
from runner.reports.report import Report, marked_sentence, report_markdown
from runner.reports.sources import (
    DocumentAttribution,
    DocumentSource,
    MessageSource,
    SourceRegistry,
    canonical_url,
    registry_of_sections,
)

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
TEXT = "Rollbacks need the on-call lead. The deploy window moved to Friday evening."


def span(start: int, end: int, document_id: str = "7", url: str | None = None) -> DocumentSource:
    return DocumentSource(
        document_id, "handbook.pdf", "sha256:1", f"char:{start}-{end}", TEXT[start:end], url
    )


def message(start: int, end: int, revision: int = 1) -> MessageSource:
    return MessageSource("ops", "12", revision, "ann", T0, TEXT, start, end, row_id=3)


def test_a_document_cited_in_eight_places_is_one_source_with_eight_spans() -> None:
    registry = SourceRegistry()
    spans = [span(i, i + 5) for i in range(0, 40, 5)]
    ids = [
        registry.register(s, "Answer" if i < 2 else "In handbook.pdf") for i, s in enumerate(spans)
    ]
    ids.append(registry.register(spans[3], "Open points"))  # the same span again: no new span
    assert ids == ["S1"] * 9 and len(registry) == 1
    entry = registry.entry("S1")
    assert entry is not None and entry.spans == spans and entry.citations == 9
    assert entry.sections == ["Answer", "In handbook.pdf", "Open points"]
    assert registry.span_of(spans[5]) == ("S1", 5) and registry.get("S1") == spans[0]
    assert registry.span_of(span(0, 3)) is None  # a span never registered
    assert registry.entry("S2") is None and registry.entry("S0") is None
    assert registry.entry("s1") is None


def test_messages_are_one_source_per_revision_and_documents_one_per_url() -> None:
    registry = SourceRegistry()
    first, other_span, edited = message(0, 10), message(11, 30), message(0, 10, revision=2)
    assert [registry.register(s) for s in (first, other_span, edited)] == ["S1", "S1", "S2"]
    entry = registry.entry("S1")
    assert entry is not None and [s.quote for s in entry.spans] == [TEXT[0:10], TEXT[11:30]]
    # The page at a URL is one source whatever row holds it; scheme and host case and the
    # fragment do not make another, the path's case does.
    a = span(0, 5, "7", "HTTPS://Docs.Example.org/Guide.pdf#page=2")
    b = span(5, 10, "8", "https://docs.example.org/Guide.pdf")
    c = span(0, 5, "9", "https://docs.example.org/guide.pdf")
    assert [registry.register(s) for s in (a, b, c)] == ["S3", "S3", "S4"]
    assert canonical_url("HTTPS://Docs.Example.org") == "https://docs.example.org/"
    # Without a URL, a document is its row and text.
    assert span(0, 5, "7").key != span(0, 5, "8").key


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3)), max_size=60))
def test_ids_are_contiguous_and_each_span_is_kept_once(cited: list[tuple[int, int]]) -> None:
    registry = SourceRegistry()
    for document, position in cited:
        registry.register(span(position, position + 4, str(document)))
    documents = list(dict.fromkeys(document for document, _ in cited))
    assert [entry.identifier for entry in registry.entries()] == [
        f"S{n}" for n in range(1, len(documents) + 1)
    ]
    for entry, document in zip(registry.entries(), documents, strict=True):
        positions = list(dict.fromkeys(p for d, p in cited if d == document))
        locators = [s.locator for s in entry.spans if isinstance(s, DocumentSource)]
        assert locators == [f"char:{p}-{p + 4}" for p in positions]
    assert registry.citations == len(cited)


def _report() -> Report:
    rollback, deploy = span(0, 32), span(33, len(TEXT))
    who = message(0, 32)
    return Report(
        "q",
        "Q",
        (
            Section(
                "Answer",
                (
                    FootnotedSentence("Rollbacks need the on-call lead.", (rollback, who)),
                    FootnotedSentence("The deploy window moved to Friday evening.", (deploy,)),
                ),
            ),
            Section("In handbook.pdf", (FootnotedSentence(TEXT[33:], (deploy,)),)),
        ),
    )


def test_markdown_lists_sources_with_their_sections_and_footnotes_with_their_spans() -> None:
    report, audit = accept_sentences(_report())
    assert audit.kept == 3 and audit.sources == 2 and audit.citations == 4
    assert audit.as_json()["orphan_sources"] == 0 and audit.as_json()["audit_failures"] == 0
    markdown = report_markdown(report)
    assert "lead.[^1][^2] The deploy window moved to Friday evening.[^1]" in markdown
    assert "\n\n## Sources\n\n" in markdown
    assert (
        "- S1 handbook.pdf (document 7): 2 passages; cited in: Answer, In handbook.pdf\n"
        "- S2 #ops, ann, 2024-05-01 10:00 UTC (message 12): 1 passage; cited in: Answer"
    ) in markdown
    footnotes = re.findall(r"^\[\^(\d+)\]: (.*)$", markdown, re.M)
    assert footnotes == [
        (
            "1",
            'handbook.pdf, char:0-32, "Rollbacks need the on-call lead."; '
            f'char:33-{len(TEXT)}, "The deploy window moved to Friday evening." (document 7)',
        ),
        ("2", '#ops, ann, 2024-05-01 10:00 UTC, "Rollbacks need the on-call lead." (message 12)'),
    ]


def test_marked_text_of_a_later_span_is_supported_by_the_spans_of_its_source() -> None:
    report, _ = accept_sentences(_report())
    registry = report.registry()
    marked = [marked_sentence(s, registry) for s in report.sentences()]
    assert marked[1] == "The deploy window moved to Friday evening. [S1]"
    assert audit_marked(marked, registry) == []
    assert [
        p.code for p in audit_marked([*marked, "Kubernetes runs in March. [S1]"], registry)
    ] == ["low_support"]


def test_stored_json_reads_back_with_each_sentence_citing_its_span() -> None:
    report, _ = accept_sentences(_report())
    sections, sources = report_json(report)
    assert sections[0]["sentences"][1]["citations"] == [{"source_id": "S1", "span": 1}]
    assert sources[0]["spans"][1] == {
        "quote": TEXT[33:],
        "locator": f"char:33-{len(TEXT)}",
        "document_id": "7",
        "title": "handbook.pdf",
        "url": None,
        "source_text_hash": "sha256:1",
    }
    assert (
        sources[0]["sections"] == ["Answer", "In handbook.pdf"]
        and sources[0]["citation_count"] == 3
    )
    rebuilt = report_from_json("q", "Q", sections, sources, {(3, 1): TEXT})
    assert rebuilt == report and report_markdown(rebuilt) == report_markdown(report)


def test_a_report_stored_before_sources_had_spans_reads_back() -> None:
    old_sources = [
        {
            "id": "S1",
            "kind": "document",
            "quote": TEXT[:32],
            "document_id": "7",
            "title": "Runbook",
            "source_text_hash": "sha256:1",
            "locator": "char:0-32",
        }
    ]
    old_sections = [
        {
            "heading": "Answer",
            "bullets": False,
            "sentences": [{"text": TEXT[:32], "source_ids": ["S1"]}],
        }
    ]
    report = report_from_json("q", "Q", old_sections, old_sources, {})
    (sentence,) = report.sentences()
    assert sentence.sources == (DocumentSource("7", "Runbook", "sha256:1", "char:0-32", TEXT[:32]),)
    assert registry_of_sections(report.sections).entry("S1") is not None


def test_urls_are_autolinks_only_when_nothing_else_can_be_made_of_them() -> None:
    assert markdown_url("https://docs.example.org/a_b?x=1") == "<https://docs.example.org/a_b?x=1>"
    assert markdown_url("javascript:alert(1)") == "javascript:alert(1)"
    assert markdown_url("https://x.org/a> [^9]: forged") == r"https://x.org/a\> \[^9\]: forged"


def test_a_document_without_a_title_is_named_by_its_first_line() -> None:
    assert shown_title("handbook.pdf", "Text", "7") == "handbook.pdf"
    assert shown_title(None, "\n\nOperations handbook\n\nEvery migration ...", "7") == (
        "Operations handbook"
    )
    assert shown_title(None, "", "7") == "document 7"


def _attributed(document_id: str, start: int, end: int, group: str | None) -> DocumentSource:
    attribution = DocumentAttribution("Ann Lee", "Ops Weekly", date(2024, 4, 30), group)
    return DocumentSource(
        document_id,
        "Handbook",
        f"sha256:{document_id}",
        f"char:{start}-{end}",
        TEXT[start:end],
        f"https://example.org/{document_id}",
        attribution,
    )


def test_near_duplicates_are_one_source_listing_each_span_with_its_document() -> None:
    """Documents 7 and 9 are near-duplicates (group 7): one `S1` whose spans keep their own
    document, hash and locator, even at equal offsets; document 8 is a source of its own."""
    registry = SourceRegistry()
    cited = [
        _attributed("7", 0, 32, "7"),
        _attributed("9", 0, 32, "7"),
        _attributed("8", 0, 9, "8"),
    ]
    assert [registry.register(source) for source in cited] == ["S1", "S1", "S2"]
    merged = registry.entry("S1")
    assert merged is not None and [
        s.document_id for s in merged.spans if isinstance(s, DocumentSource)
    ] == ["7", "9"]
    assert footnote_text(merged) == (
        'Handbook — Ann Lee, Ops Weekly, 2024-04-30, <https://example.org/7>, char:0-32, "'
        + TEXT[:32]
        + '"; char:0-32 of document 9, "'
        + TEXT[:32]
        + '" (documents 7, 9)'
    )
    assert source_label(merged) == (
        "Handbook — Ann Lee, Ops Weekly, 2024-04-30 <https://example.org/7> (documents 7, 9)"
    )
    # Stored and read back: each span is its own document's again, under the same source.
    report = Report(
        "q", "Q", (Section("Answer", tuple(FootnotedSentence(s.quote, (s,)) for s in cited)),)
    )
    sections, sources = report_json(report)
    again = report_from_json("q", "Q", sections, sources, {})
    assert [s for sentence in again.sentences() for s in sentence.sources] == cited


def test_a_byline_names_only_what_the_document_states() -> None:
    registry = SourceRegistry()
    bare = DocumentSource(
        "7", "Handbook", "sha256:1", "char:0-9", TEXT[:9], None, DocumentAttribution(group="7")
    )
    registry.register(bare)
    (entry,) = registry.entries()
    assert footnote_text(entry) == f'Handbook, char:0-9, "{TEXT[:9]}" (document 7)'
