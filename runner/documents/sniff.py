"""What kind of document a body is: the declared content type checked against the bytes.

A declared type is a claim, the magic bytes are evidence: a body that starts with `%PDF-` is a PDF
whatever the header says (servers often send PDFs as `application/octet-stream`), a body declared
as PDF without that header is refused, and binary data declared as text is refused.
"""

from __future__ import annotations

import re
from typing import Literal

from runner.documents.errors import ExtractionError
from runner.documents.pdf import has_pdf_magic

DocumentKind = Literal["pdf", "html", "text"]

_HTML_START = re.compile(
    rb"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body|title|meta|"
    rb"div|p|article|section|h[1-6]|table|script|style|link)[\s>/]",
    re.IGNORECASE | re.DOTALL,
)
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_SNIFF_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream"})
_TEXT_LIKE_APPLICATION_TYPES = frozenset({"application/json", "application/xml"})


def media_type(content_type: str | None) -> tuple[str, str | None]:
    """`("text/html", "utf-8")` from `"text/html; charset=UTF-8"`; `("", None)` from nothing."""
    if not content_type:
        return "", None
    parts = [part.strip() for part in content_type.split(";")]
    charset = None
    for parameter in parts[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value:
            charset = value.strip().strip("\"'").lower() or None
    return parts[0].lower(), charset


def looks_like_html(body: bytes) -> bool:
    head = body[:2048].removeprefix(b"\xef\xbb\xbf")
    return bool(_HTML_START.match(head))


def looks_binary(body: bytes) -> bool:
    """NUL bytes in the first KiB: no text encoding we accept produces them (UTF-16 is not
    accepted for documents)."""
    return b"\x00" in body[:1024]


def classify_content(body: bytes, declared: str | None) -> DocumentKind:
    """The kind of `body`, or an `ExtractionError` saying why it is not a document we read."""
    mime, _ = media_type(declared)
    if not body:
        raise ExtractionError("empty", "the document is empty")
    if has_pdf_magic(body):
        return "pdf"
    if mime == "application/pdf":
        raise ExtractionError(
            "bad_magic", "declared application/pdf but the body has no %PDF- header"
        )
    if looks_binary(body):
        raise ExtractionError(
            "unsupported_content_type", f"binary content ({mime or 'no content type'})"
        )
    if mime in _HTML_TYPES:
        return "html"
    if mime.startswith("text/") or mime in _TEXT_LIKE_APPLICATION_TYPES:
        return "text"
    if mime in _SNIFF_TYPES:
        return "html" if looks_like_html(body) else "text"
    raise ExtractionError("unsupported_content_type", f"content type {mime!r} is not a document")
