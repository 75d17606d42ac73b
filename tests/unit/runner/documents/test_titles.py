"""A document is titled as a person would name it: the title given, else its own (an HTML
`<title>` or first heading; a PDF's metadata, outline or the first page's largest text), else
the name of the file it came from; never nothing when a file name is known."""

from __future__ import annotations

import pytest

from runner.documents.html import extract_html
from runner.documents.ingest import ingest_bytes, url_file_name
from runner.documents.pdf import extract_pdf
from tests.support.documents import PDF_DIR, docs_file

BODY = "<p>" + "The cache keeps every answer for an hour and then asks again. " * 20 + "</p>"


@pytest.mark.parametrize(
    ("html", "title"),
    [
        (f"<html><body><h2>Release notes</h2>{BODY}</body></html>", "Release notes"),
        (f"<html><body><h3>A third level</h3>{BODY}<h4>later</h4></body></html>", "A third level"),
        (f"<html><body><h2> </h2><h3>Cache <i>rules</i></h3>{BODY}</body></html>", "Cache rules"),
        (f"<html><head><title>The page</title></head><body>{BODY}</body></html>", "The page"),
        (f"<html><body>{BODY}</body></html>", None),
    ],
)
def test_an_html_page_without_a_title_is_named_by_its_first_heading(
    html: str, title: str | None
) -> None:
    assert extract_html(html).title == title


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("acl19irc.pdf", "A Large-Scale Corpus for Conversation Disentanglement"),
        ("crazyones.pdf", "The Crazy Ones"),
        ("multicolumn.pdf", "Two-Column Document with Lorem Ipsum"),
        ("pdflatex-4-pages.pdf", None),  # one font size throughout: no heading to find
    ],
)
def test_a_pdf_without_a_metadata_title_is_named_by_its_first_pages_heading(
    name: str, title: str | None
) -> None:
    assert extract_pdf(docs_file(PDF_DIR / name).read_bytes()).title == title


def test_a_document_naming_nothing_is_titled_after_its_file() -> None:
    plain = docs_file(PDF_DIR / "pdflatex-4-pages.pdf").read_bytes()
    named = ingest_bytes(plain, None, file_name="pdflatex-4-pages.pdf")
    assert named.title == "pdflatex-4-pages.pdf"
    given = ingest_bytes(plain, None, title="Layout test", file_name="pdflatex-4-pages.pdf")
    assert given.title == "Layout test"
    headed = ingest_bytes(docs_file(PDF_DIR / "acl19irc.pdf").read_bytes(), None, file_name="x.pdf")
    assert headed.title == "A Large-Scale Corpus for Conversation Disentanglement"
    page = f"<html><body>{BODY}</body></html>".encode()
    assert ingest_bytes(page, "text/html", file_name="notes.html").title == "notes.html"
    text = ingest_bytes(b"Plain notes about the cache.", "text/plain", file_name="notes.txt")
    assert text.title == "notes.txt"
    assert ingest_bytes(page, "text/html").title is None  # nothing to name it by


def test_the_file_name_of_a_url() -> None:
    assert url_file_name("https://example.org/papers/acl19irc.pdf?x=1") == "acl19irc.pdf"
    assert url_file_name("https://example.org/a%20b.pdf") == "a b.pdf"
    assert url_file_name("https://example.org/papers/") is None
    assert url_file_name("https://example.org") is None
