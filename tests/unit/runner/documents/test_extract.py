"""HTML and PDF extraction on the real fixtures in ../shared/data/docs, tricky PDFs included:
each one gives canonical text or fails with a clear, typed reason."""

from __future__ import annotations

import io

import pytest
from pypdf import PdfWriter

from runner.documents.canonical import canonicalize, page_spans_from_text
from runner.documents.errors import ExtractionError
from runner.documents.html import extract_html
from runner.documents.ingest import ingest_bytes
from runner.documents.pdf import PdfLimits, extract_pdf
from runner.documents.text_f1 import html_reference_text, token_f1
from tests.support.documents import HTML_DIR, PDF_DIR, docs_file, html_pages

# Token F1 of our canonical text against readability's gold main content. mathjax is formulas
# in MathML, which trafilatura drops (recall 0.30); every prose page is above 0.88.
MIN_F1 = {"mathjax": 0.4}


@pytest.mark.parametrize("page", html_pages() or ["(no data)"])
def test_html_main_content_matches_the_gold_text(page: str) -> None:
    source = docs_file(HTML_DIR / page / "source.html").read_bytes()
    extraction = extract_html(source)
    text = extraction.canonical_text
    assert canonicalize(text) == text  # already canonical
    assert extraction.title
    gold = html_reference_text((HTML_DIR / page / "expected.html").read_bytes())
    assert token_f1(text, gold).f1 >= MIN_F1.get(page, 0.88)


def test_html_paragraphs_are_kept_and_boilerplate_dropped() -> None:
    source = docs_file(HTML_DIR / "wikipedia" / "source.html").read_bytes()
    text = extract_html(source).canonical_text
    paragraphs = text.split("\n\n")
    assert len(paragraphs) > 100
    assert paragraphs[0] == "Mozilla"
    assert any(p.startswith("Mozilla is a free-software community") for p in paragraphs)
    for boilerplate in ("Jump to navigation", "Privacy policy", "Personal tools"):
        assert boilerplate not in text


def test_html_source_newlines_inside_a_paragraph_are_spaces() -> None:
    html = b"<html><body><article><p>one\n  two</p><p>three<br>four</p></article></body></html>"
    assert extract_html(html).canonical_text == "one two\n\nthree four"


def test_html_without_text_is_a_clear_error() -> None:
    with pytest.raises(ExtractionError) as caught:
        extract_html(b"<html><body><script>var x = 1;</script></body></html>")
    assert caught.value.code == "no_text"


@pytest.mark.parametrize(
    ("name", "pages", "needle"),
    [
        ("acl19irc.pdf", 11, "Disentanglement"),
        ("crazyones.pdf", 1, "The Crazy Ones"),
        ("multicolumn.pdf", 3, "Two-Column Document"),
        ("pdflatex-4-pages.pdf", 4, "Hello, here is some text"),
        ("tricky_scanned_ocr_Seige_of_Vicksburg.pdf", 6, "VICKSBURG"),
    ],
)
def test_pdf_text_and_page_spans(name: str, pages: int, needle: str) -> None:
    pdf = extract_pdf(docs_file(PDF_DIR / name).read_bytes())
    assert pdf.page_count == pages and len(pdf.page_spans) == pages
    assert needle in pdf.canonical_text
    assert page_spans_from_text(pdf.canonical_text) == pdf.page_spans
    for number, (start, end) in enumerate(pdf.page_spans[1:], start=2):
        assert pdf.canonical_text[:start].endswith(f"---PAGE {number}---\n\n") or start == end


def test_crazyones_matches_pypdfs_expected_text() -> None:
    pdf = extract_pdf(docs_file(PDF_DIR / "crazyones.pdf").read_bytes())
    expected = canonicalize((PDF_DIR / "crazyones.expected.txt").read_text(encoding="utf-8"))
    assert token_f1(pdf.canonical_text, expected).f1 > 0.98


def test_encrypted_pdf_without_password_is_a_clear_error() -> None:
    data = docs_file(PDF_DIR / "tricky_encrypted_libreoffice-writer-password.pdf").read_bytes()
    with pytest.raises(ExtractionError) as caught:
        extract_pdf(data)
    assert caught.value.code == "encrypted"


def test_encrypted_pdf_with_its_password() -> None:
    data = docs_file(PDF_DIR / "tricky_encrypted_libreoffice-writer-password.pdf").read_bytes()
    pdf = extract_pdf(data, password="openpassword")
    assert pdf.canonical_text.startswith("Lorem ipsum dolor sit amet")
    assert "pdf_decrypted" in [w.code for w in pdf.warnings]
    with pytest.raises(ExtractionError) as caught:
        extract_pdf(data, password="not-it")
    assert caught.value.code == "wrong_password"


def test_aes256_pdf_opens_with_user_password_and_empty_owner_password() -> None:
    # Made with `qpdf --encrypt asdfzxcv "" 256`: the owner password is empty, so
    # the file opens without a password too (as in any PDF viewer).
    data = docs_file(PDF_DIR / "tricky_encrypted_aes256_r6-user-password.pdf").read_bytes()
    for password in ("asdfzxcv", None):
        pdf = extract_pdf(data, password=password)
        assert "pdf encryption test" in pdf.canonical_text
        assert "pdf_decrypted" in [w.code for w in pdf.warnings]
    with pytest.raises(ExtractionError) as caught:
        extract_pdf(data, password="not-it")
    assert caught.value.code == "wrong_password"


def test_broken_xref_is_repaired_with_a_warning() -> None:
    pdf = extract_pdf(
        docs_file(PDF_DIR / "tricky_malformed_broken_xref_issue-297.pdf").read_bytes()
    )
    assert pdf.canonical_text == "test example"
    assert "pdf_repaired" in [w.code for w in pdf.warnings]


@pytest.mark.parametrize(
    "name", ["tricky_image_only_no_text_layer.pdf", "tricky_fax_scan_no_text_CCITTFaxDecode.pdf"]
)
def test_pdf_without_text_layer_is_a_clear_error(name: str) -> None:
    with pytest.raises(ExtractionError) as caught:
        extract_pdf(docs_file(PDF_DIR / name).read_bytes())
    assert caught.value.code == "no_text_layer"
    assert "OCR" in caught.value.reason


def test_not_a_pdf_and_garbage_after_the_header() -> None:
    with pytest.raises(ExtractionError) as caught:
        extract_pdf(b"<html>nope</html>")
    assert caught.value.code == "not_pdf"
    with pytest.raises(ExtractionError) as caught:
        extract_pdf(b"%PDF-1.7\n" + bytes(range(256)) * 4)
    assert caught.value.code == "malformed"


def test_page_and_character_limits_warn() -> None:
    data = docs_file(PDF_DIR / "pdflatex-4-pages.pdf").read_bytes()
    few_pages = extract_pdf(data, limits=PdfLimits(max_pages=2))
    assert len(few_pages.page_spans) == 2 and few_pages.page_count == 4
    assert "pdf_pages_truncated" in [w.code for w in few_pages.warnings]
    few_chars = extract_pdf(data, limits=PdfLimits(max_chars=5000))
    assert "pdf_text_truncated" in [w.code for w in few_chars.warnings]
    assert len(few_chars.canonical_text) <= 5000 + 40  # + page markers


def test_time_limit_refuses_the_document() -> None:
    data = docs_file(PDF_DIR / "acl19irc.pdf").read_bytes()
    with pytest.raises(ExtractionError) as caught:
        extract_pdf(data, limits=PdfLimits(timeout_seconds=0.0))
    assert caught.value.code == "timeout"


def test_blank_generated_pdf_has_no_text_layer() -> None:
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    buffer = io.BytesIO()
    writer.write(buffer)
    with pytest.raises(ExtractionError) as caught:
        ingest_bytes(buffer.getvalue(), "application/pdf")
    assert caught.value.code == "no_text_layer"


def test_ingest_bytes_detects_kinds() -> None:
    pdf = ingest_bytes(docs_file(PDF_DIR / "crazyones.pdf").read_bytes(), None)
    assert pdf.content_type == "application/pdf" and pdf.page_spans == [
        (0, len(pdf.canonical_text))
    ]
    html = ingest_bytes(
        (HTML_DIR / "rtl-1" / "source.html").read_bytes(), "application/octet-stream"
    )
    assert html.content_type == "text/html" and html.title == "Lorem"
    text = ingest_bytes("Ünïcode text".encode(), "text/plain; charset=utf-8")
    assert text.content_type == "text/plain" and text.canonical_text == "Ünïcode text"
    latin = ingest_bytes("café".encode("latin-1"), "text/plain")
    assert "text_decoding" in [w.code for w in latin.warnings]


def test_tiny_page_falls_back_to_the_body_with_a_warning() -> None:
    extraction = extract_html(b"<p>hi there</p>")  # too little for trafilatura
    assert extraction.canonical_text == "hi there"
    assert [w.code for w in extraction.warnings] == ["main_content_fallback"]
