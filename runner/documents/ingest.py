"""Ingest: bytes, text or a URL → `CanonicalDocument`, the form a document is stored in.

What to store per document: `canonical_text`, `source_text_hash`, `content_type`, `title`,
`page_spans` (PDFs), `warnings`, the document's own author, publisher and date where it states
them (runner.documents.metadata; plain text states none) and the fingerprint of its text that
finds near-duplicates (runner.documents.fingerprint, computed by `as_record`). Everything a digest needs later is derived from these; the
original bytes are not needed again (and are not kept: they may be large and are untrusted).

The title is the one given, else the document's own (HTML: its `<title>` or first heading; PDF:
its metadata, outline or first page's heading), else the name of the file it came from (the
path's, the upload's, or the last segment of the URL's path), so reports and footnotes name a
document as a person would rather than by its id. It is stored on one line (`document_title`,
runner.core.display_names): a title with line breaks would otherwise be shown as several lines
wherever titles are shown (a report's headings and footnotes).
"""

from __future__ import annotations

import asyncio
import codecs
import time
from dataclasses import replace
from urllib.parse import unquote, urlsplit

from runner.core.display_names import clean_name
from runner.core.vocabulary import PipelineWarning
from runner.documents.canonical import CanonicalDocument, canonicalize, source_text_hash
from runner.documents.errors import ExtractionError
from runner.documents.fetch import FetchPolicy, Resolver, fetch_document
from runner.documents.fingerprint import minhash
from runner.documents.html import extract_html
from runner.documents.pdf import PdfExtraction, PdfLimits, extract_pdf
from runner.documents.sniff import DocumentKind, classify_content, media_type
from runner.metrics import count_pdf_extraction

CONTENT_TYPES: dict[DocumentKind, str] = {
    "pdf": "application/pdf",
    "html": "text/html",
    "text": "text/plain",
}


def document_title(title: str | None) -> str | None:
    """A title as stored: canonical text on one line, capped; None when nothing is left."""
    return (clean_name(canonicalize(title)) or None) if title else None


def url_file_name(url: str) -> str | None:
    """The last segment of a URL's path, decoded (`.../papers/acl19irc.pdf` → `acl19irc.pdf`);
    None for a URL whose path ends in `/`."""
    segment = urlsplit(url).path.rsplit("/", 1)[-1]
    return unquote(segment) or None


def decode_text(body: bytes, charset: str | None) -> tuple[str, list[PipelineWarning]]:
    """Text of a plain-text body: BOM, then the declared charset, then UTF-8; undecodable bytes
    become U+FFFD with a warning rather than failing the document."""
    if body.startswith(codecs.BOM_UTF8):
        return body[len(codecs.BOM_UTF8) :].decode("utf-8", errors="replace"), []
    for encoding in filter(None, (charset, "utf-8")):
        try:
            return body.decode(encoding), []
        except (LookupError, UnicodeDecodeError):
            continue
    return body.decode("utf-8", errors="replace"), [
        PipelineWarning("text_decoding", "the text is not valid UTF-8; bad bytes were replaced")
    ]


def _html_input(data: bytes, charset: str | None) -> bytes | str:
    """A charset declared by the server wins over guessing; without one, the parser reads the
    page's own `<meta charset>`."""
    if charset:
        try:
            return data.decode(charset)
        except (LookupError, UnicodeDecodeError):
            pass
    return data


def _fingerprinted(document: CanonicalDocument) -> CanonicalDocument:
    fingerprint = minhash(document.canonical_text)
    return replace(document, fingerprint=tuple(fingerprint) if fingerprint else None)


def ingest_text(
    text: str,
    *,
    title: str | None = None,
    source_url: str | None = None,
    file_name: str | None = None,
) -> CanonicalDocument:
    """A plain-text document (not markup: entities are kept as written), titled `title`, else
    after the file it came from (`file_name`)."""
    canonical = canonicalize(text)
    if not canonical:
        raise ExtractionError("no_text", "the document contains no text")
    return _fingerprinted(
        CanonicalDocument(
            canonical_text=canonical,
            source_text_hash=source_text_hash(canonical),
            content_type="text/plain",
            title=document_title(title) or document_title(file_name),
            source_url=source_url,
        )
    )


def counted_pdf_extraction(
    data: bytes, password: str | None, limits: PdfLimits | None
) -> PdfExtraction:
    """`extract_pdf`, counted on /metrics (`pdf_extraction_*`: time, pages, characters, warning
    codes; a failure's code). Counted here, not in pdf.py, which stays plain data in and out."""
    started = time.perf_counter()
    try:
        extraction = extract_pdf(data, password=password, limits=limits)
    except ExtractionError as error:
        count_pdf_extraction(time.perf_counter() - started, failure=error.code)
        raise
    count_pdf_extraction(
        time.perf_counter() - started,
        pages=len(extraction.page_spans),
        characters=len(extraction.canonical_text),
        warnings=[warning.code for warning in extraction.warnings],
    )
    return extraction


def ingest_bytes(
    data: bytes,
    content_type: str | None = None,
    *,
    title: str | None = None,
    password: str | None = None,
    pdf_limits: PdfLimits | None = None,
    source_url: str | None = None,
    file_name: str | None = None,
) -> CanonicalDocument:
    """Bytes of an HTML page, a PDF or a text file (kind from magic bytes and `content_type`).
    Titled `title`, else by the document itself, else after `file_name` (the module docstring).

    CPU-bound (PDF extraction can take seconds): call it from a thread in async code, as
    `ingest_url` does. Raises `ExtractionError` with a clear code on anything unreadable.
    """
    kind = classify_content(data, content_type)
    given_title = document_title(title)
    if kind == "pdf":
        pdf = counted_pdf_extraction(data, password, pdf_limits)
        return _fingerprinted(
            CanonicalDocument(
                canonical_text=pdf.canonical_text,
                source_text_hash=source_text_hash(pdf.canonical_text),
                content_type=CONTENT_TYPES["pdf"],
                title=given_title or document_title(pdf.title) or document_title(file_name),
                page_spans=pdf.page_spans,
                warnings=pdf.warnings,
                source_url=source_url,
                metadata=pdf.metadata,
            )
        )
    if kind == "html":
        page = extract_html(_html_input(data, media_type(content_type)[1]))
        return _fingerprinted(
            CanonicalDocument(
                canonical_text=page.canonical_text,
                source_text_hash=source_text_hash(page.canonical_text),
                content_type=CONTENT_TYPES["html"],
                title=given_title or document_title(page.title) or document_title(file_name),
                warnings=page.warnings,
                source_url=source_url,
                metadata=page.metadata,
            )
        )
    text, warnings = decode_text(data, media_type(content_type)[1])
    document = ingest_text(text, title=given_title, source_url=source_url, file_name=file_name)
    return replace(document, warnings=warnings)


async def ingest_url(
    url: str,
    *,
    policy: FetchPolicy | None = None,
    title: str | None = None,
    password: str | None = None,
    pdf_limits: PdfLimits | None = None,
    resolver: Resolver | None = None,
) -> CanonicalDocument:
    """Fetch `url` through the hardened fetcher, then ingest the bytes off the event loop."""
    fetched = await fetch_document(url, policy, resolver=resolver)
    declared = CONTENT_TYPES[fetched.kind] + (
        f"; charset={fetched.charset}" if fetched.charset else ""
    )
    return await asyncio.to_thread(
        ingest_bytes,
        fetched.body,
        declared,
        title=title,
        password=password,
        pdf_limits=pdf_limits,
        source_url=fetched.final_url,
        file_name=url_file_name(fetched.final_url),
    )
