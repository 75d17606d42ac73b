"""Sentences of a document's text: numbered headings that PDF extraction joins to the next
sentence are split off, a name's initial ends no sentence, and table fragments, bylines and
running headers are not prose (never a key point, a summary sentence or report evidence)."""

from __future__ import annotations

from runner.documents.digest import digest_document_offline
from runner.documents.ingest import ingest_bytes, ingest_text
from runner.documents.prose import (
    is_prose,
    is_table_fragment,
    repeated_sentences,
    sentence_spans,
)
from runner.reports.evidence import DocumentText, document_evidence
from tests.support.documents import PDF_DIR, docs_file


def sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in sentence_spans(text, 0, len(text))]


def test_a_numbered_heading_joined_to_its_sentence_is_split_from_it() -> None:
    text = (
        "We release the data. 1 Introduction When a group of people communicate in a common "
        "channel there are often several conversations. 3.2 Annotation Guidelines Each message "
        "was linked to the message it replies to."
    )
    assert sentences(text) == [
        "We release the data.",
        "1 Introduction",
        "When a group of people communicate in a common channel there are often several "
        "conversations.",
        "3.2 Annotation Guidelines",
        "Each message was linked to the message it replies to.",
    ]


def test_a_number_opening_a_sentence_is_no_heading() -> None:
    text = "We met twice. 2 people joined the call and 3 Linux users left it."
    assert sentences(text) == [
        "We met twice.",
        "2 people joined the call and 3 Linux users left it.",
    ]


def test_a_name_s_initial_ends_no_sentence() -> None:
    text = "The tool was written by Jonathan K. Kummerfeld and T.J. Watson staff. It is free."
    assert sentences(text) == [
        "The tool was written by Jonathan K. Kummerfeld and T.J. Watson staff.",
        "It is free.",
    ]


def test_table_fragments_and_bylines_are_not_prose() -> None:
    for fragment in (
        "(2017) 1,500 1 48 hr 5 n/a 2 Table 1",
        "Elsner and Charniak (2008) 2,500 12 45 5 Table 2",
        "The corpus has these sizes: 77,563 74,963 2,600 1,250 messages in all.",
    ):
        assert is_table_fragment(fragment) and not is_prose(fragment), fragment
    byline = "Jonathan K. Kummerfeld Sai R. Gouravajhala Joseph J. Peper University of Michigan"
    assert not is_prose(byline)
    statement = "We annotated 77,563 messages of the channel with the messages they reply to."
    assert not is_table_fragment(statement) and is_prose(statement)


def test_a_sentence_on_every_page_is_a_running_header() -> None:
    header = "Proceedings of the Annual Meeting of the Society, pages 10-20."
    said = [header, "We annotated the data twice.", header.upper(), header]
    assert repeated_sentences(said) == {header.casefold()}


def test_a_table_or_running_header_is_no_key_point_nor_report_evidence() -> None:
    header = "Proceedings of the Annual Meeting on Dataset Annotation, pages 10 to 20."
    pages = [
        f"{header}\n\nThe dataset was annotated by two annotators who each read every message.",
        f"{header}\n\nAnnotated dataset sizes (2017) 1,500 1 48 hr 5 n/a 2 Table 1",
        f"{header}\n\nDisagreements in the annotated dataset were settled by a third annotator.",
    ]
    document = ingest_text("\n\n".join(pages), title="Corpus")
    payload = digest_document_offline(document, "How was the dataset annotated?", source_id="d")
    quoted = [*payload.payload.key_points, payload.payload.summary]
    assert any("two annotators" in text for text in quoted)
    assert not any("Table 1" in text or "Proceedings" in text for text in quoted)
    units = document_evidence(
        DocumentText("1", "Corpus", document.canonical_text, document.source_text_hash), 1
    )
    assert units and not any("Table 1" in u.text or "Proceedings" in u.text for u in units)


def test_the_paper_s_headings_tables_and_byline_stay_out_of_its_digest() -> None:
    data = docs_file(PDF_DIR / "acl19irc.pdf").read_bytes()
    document = ingest_bytes(data, "application/pdf")
    texts = sentences(document.canonical_text)
    assert "1 Introduction" in texts
    assert not any(text.startswith("1 Introduction When") for text in texts)
    payload = digest_document_offline(
        document, "How was the dataset annotated?", source_id="p"
    ).payload
    assert payload.key_points and not payload.summary.startswith("A Large-Scale Corpus")
    assert not any(is_table_fragment(point) for point in payload.key_points)
