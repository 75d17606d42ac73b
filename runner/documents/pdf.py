"""PDF → canonical text, page by page, with page spans for `page:N:char:S-E` locators.

pypdf reads one page at a time (memory stays bounded by the largest page, not the file).
pdfminer.six (imported only when needed) reads a page again when pypdf raises on it, returns no
letter or digit for it, or returns garbled text (`garbled_share` above `GARBLED_SHARE`: U+FFFD,
private-use or control characters, what a font without a usable encoding gives); its text is
kept only when it has more letters and digits and is not garbled itself, with a
`pdf_page_fallback` warning naming the page and why (counted on /metrics with the other
warnings). Limits: the first 500 pages,
500,000 characters of text (both with a warning) and 30 seconds (the document is refused: a
half-extracted PDF is not digested).

Every failure is an `ExtractionError` with a clear code, never a crash:
- `not_pdf`: no `%PDF-` header in the first 1024 bytes;
- `encrypted`: encrypted and no (or an empty) password opens it; `wrong_password`;
  `encryption_unsupported`: the cipher needs an optional package (`cryptography` for AES);
- `malformed`: pypdf cannot read it even leniently (a lenient repair that works is a warning);
- `no_text_layer`: scanned or image-only pages without OCR text;
- `timeout`.

Line-end hyphenation (`an-\\nnotated` → `annotated`, only before a lowercase letter) is joined
before canonicalization, so quotes and whole-word matching see real words.

The title is the metadata's, else the first entry of the outline (bookmarks), else the first
page's heading: the first text set in the page's largest font, when that font is larger than
its body text (a page in one size has no heading; the ingest then names the document after its
file).
"""

from __future__ import annotations

import io
import math
import re
import statistics
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError, PyPdfError

from runner.core.vocabulary import PipelineWarning
from runner.documents.canonical import PageSpan, canonicalize, join_pages
from runner.documents.errors import ExtractionError
from runner.documents.metadata import DocumentMetadata, pdf_metadata

PDF_MAGIC = b"%PDF-"
_HYPHENATED_LINE_END = re.compile(r"(\w)-\n(?=[^\W\d_A-Z])")
# Below this many letters or digits per page on average, a PDF whose pages are mostly images is
# treated as having no text layer: the image-only fixture has the single word "Background" on
# four of its six pages. A sparse PDF without images is kept, with a warning.
_MIN_ALNUM_PER_PAGE = 20
# The first page's largest text is its heading only when this much larger than its body text
# (the median size over its characters): a title set in 17pt over 10pt body text is, bold body
# text in the same size is not.
_HEADING_SCALE = 1.15
_HEADING_SIZE_TOLERANCE = 0.5  # points: runs of one heading may differ by rounding


@dataclass(frozen=True)
class PdfLimits:
    max_pages: int = 500
    max_chars: int = 500_000
    timeout_seconds: float = 30.0


@dataclass
class PdfExtraction:
    canonical_text: str
    page_spans: list[PageSpan]
    page_count: int  # pages in the file; len(page_spans) is how many were extracted
    title: str | None
    warnings: list[PipelineWarning] = field(default_factory=list)
    metadata: DocumentMetadata = field(default_factory=DocumentMetadata)


def has_pdf_magic(data: bytes) -> bool:
    """PDF readers accept a header anywhere in the first 1024 bytes; so do we."""
    return PDF_MAGIC in data[:1024]


def _open(data: bytes, password: str | None, warnings: list[PipelineWarning]) -> PdfReader:
    try:
        PdfReader(io.BytesIO(data), strict=True, password=password)
        strict_error: Exception | None = None
    except (FileNotDecryptedError, DependencyError):
        strict_error = None  # encryption is handled below with a clearer message
    except Exception as error:  # noqa: BLE001 - pypdf raises anything on a malformed file; kept to report
        strict_error = error
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
    except DependencyError as error:
        raise _encryption_error(password, error) from None
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, IndexError) as error:
        raise ExtractionError(
            "malformed", f"the PDF cannot be parsed ({type(error).__name__})"
        ) from None
    if strict_error is not None:
        warnings.append(
            PipelineWarning(
                "pdf_repaired",
                f"the PDF is malformed ({str(strict_error)[:120]}); a lenient parse was used",
            )
        )
    if reader.is_encrypted:
        _decrypt(reader, password)
        warnings.append(PipelineWarning("pdf_decrypted", "the PDF was encrypted and decrypted"))
    return reader


def _encryption_error(password: str | None, error: Exception) -> ExtractionError:
    if password is None:
        return ExtractionError(
            "encrypted",
            "the PDF is encrypted; give its password (AES encryption also needs the optional "
            "'cryptography' package)",
        )
    return ExtractionError(
        "encryption_unsupported",
        f"the PDF uses a cipher this installation cannot decrypt: {str(error)[:120]}",
    )


def _decrypt(reader: PdfReader, password: str | None) -> None:
    try:
        # An empty user password is common (only an owner password restricts editing).
        opened = reader.decrypt(password if password is not None else "")
    except DependencyError as error:
        raise _encryption_error(password, error) from None
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError) as error:
        raise ExtractionError(
            "malformed", f"the PDF's encryption dictionary cannot be read ({type(error).__name__})"
        ) from None
    if not opened:
        if password is None:
            raise ExtractionError("encrypted", "the PDF is encrypted; give its password")
        raise ExtractionError("wrong_password", "the given password does not open the PDF")


# A page whose non-space characters are more than this share unreadable (U+FFFD, private use,
# controls) is garbled: a font without a usable encoding maps every glyph to U+FFFD or to its
# private-use code. Real text has next to none of them (0 in every PDF of the shared data).
GARBLED_SHARE = 0.3


def _is_unreadable(char: str) -> bool:
    return char == "\ufffd" or "\ue000" <= char <= "\uf8ff" or unicodedata.category(char) == "Cc"


def garbled_share(text: str) -> float:
    """The share of `text`'s non-space characters that are unreadable (0 for no text)."""
    shown = [char for char in text if not char.isspace()]
    return sum(1 for char in shown if _is_unreadable(char)) / len(shown) if shown else 0.0


def _alnum(text: str) -> int:
    return sum(1 for char in text if char.isalnum())


def fallback_reason(text: str) -> str | None:
    """Why pypdf's text of a page is to be read again by pdfminer.six, or None when it is kept."""
    if _alnum(text) == 0:
        return "no text"
    if garbled_share(text) > GARBLED_SHARE:
        return "garbled text"
    return None


def _pdfminer_page_text(data: bytes, page_index: int, password: str | None) -> str | None:
    """pdfminer.six's text for one page, or None when it fails too. Imported here, on the first
    page that needs it: most PDFs never do, and the import costs a process about 0.15 s."""
    from pdfminer.high_level import extract_text

    try:
        return str(
            extract_text(io.BytesIO(data), page_numbers=[page_index], password=password or "")
        )
    except Exception:  # noqa: BLE001 - pdfminer fails in any way on a broken page
        return None


def _title(reader: PdfReader) -> str | None:
    try:
        metadata = reader.metadata
        title = metadata.title if metadata else None
    except Exception:  # noqa: BLE001 - metadata of a broken file is optional
        return None
    return (canonicalize(str(title)) or None) if title else None


def _metadata(reader: PdfReader) -> DocumentMetadata:
    try:
        info = reader.metadata
    except Exception:  # noqa: BLE001 - metadata of a broken file is optional
        return DocumentMetadata()
    return pdf_metadata(info)


def _outline_title(reader: PdfReader) -> str | None:
    """The first top-level entry of the outline (the bookmarks), if it has text."""
    try:
        entries: Sequence[Any] = reader.outline
        first = next((entry for entry in entries if not isinstance(entry, list)), None)
        title = getattr(first, "title", None) if first is not None else None
    except Exception:  # noqa: BLE001 - the outline of a broken file is optional
        return None
    return (canonicalize(str(title)) or None) if title else None


def _vertical_scale(matrix: Sequence[float] | None) -> float:
    return math.hypot(matrix[2], matrix[3]) if matrix and len(matrix) >= 4 else 1.0


@dataclass
class _FontRuns:
    """The text runs of a page with the size they are drawn at, gathered while pypdf extracts
    the page's text (its `visitor_text`), so finding the heading reads the page only once."""

    runs: list[tuple[float, str]] = field(default_factory=list)

    def visit(
        self,
        text: str,
        cm: Sequence[float] | None,
        tm: Sequence[float] | None,
        font: object,
        size: float,
    ) -> None:
        if text.strip():
            drawn = float(size or 0) * _vertical_scale(tm) * _vertical_scale(cm)
            self.runs.append((round(drawn, 1), text))

    def heading(self) -> str | None:
        """The first text in the page's largest font, when larger than its body text."""
        if not self.runs:
            return None
        sizes = [size for size, text in self.runs for _ in range(len(text.strip()))]
        largest = max(size for size, _ in self.runs)
        if largest < statistics.median(sizes) * _HEADING_SCALE:
            return None
        parts: list[str] = []
        for size, text in self.runs:
            if abs(size - largest) <= _HEADING_SIZE_TOLERANCE:
                parts.append(text)
            elif parts:
                break  # the heading ends where smaller text starts
        heading = canonicalize(" ".join(" ".join(parts).split()))
        return heading if sum(char.isalnum() for char in heading) >= 2 else None


def _page_text(
    reader: PdfReader,
    data: bytes,
    index: int,
    password: str | None,
    warnings: list[PipelineWarning],
    fonts: _FontRuns | None = None,
    deadline: float | None = None,
) -> str:
    """A page's text by pypdf, else (module docstring) by pdfminer.six; none past `deadline`."""
    try:
        page = reader.pages[index]
        text = (
            page.extract_text() if fonts is None else page.extract_text(visitor_text=fonts.visit)
        ) or ""
    except Exception as error:  # noqa: BLE001 - a broken page falls back to pdfminer
        fallback = _pdfminer_page_text(data, index, password)
        if fallback is None or fallback_reason(fallback) is not None:
            warnings.append(
                PipelineWarning(
                    "pdf_page_unreadable",
                    f"page {index + 1} could not be read ({type(error).__name__}); left empty",
                )
            )
            return ""
        warnings.append(_fallback_warning(index, f"pypdf failed: {type(error).__name__}"))
        text = fallback
    else:
        reason = fallback_reason(text)
        if reason is not None and (deadline is None or time.monotonic() < deadline):
            fallback = _pdfminer_page_text(data, index, password)
            if (
                fallback is not None
                and fallback_reason(fallback) is None
                and _alnum(fallback) > _alnum(text)
            ):
                warnings.append(_fallback_warning(index, f"pypdf returned {reason}"))
                text = fallback
    return canonicalize(_HYPHENATED_LINE_END.sub(r"\1", text))


def _fallback_warning(index: int, why: str) -> PipelineWarning:
    return PipelineWarning(
        "pdf_page_fallback", f"page {index + 1} was read with pdfminer.six ({why})"
    )


def _has_image(reader: PdfReader, index: int) -> bool:
    """Does the page draw an image XObject? (Read from its resources, nothing is decoded.)"""
    try:
        resources = reader.pages[index].get("/Resources")
        xobjects = resources.get_object().get("/XObject") if resources else None
        if not xobjects:
            return False
        return any(
            xobject.get_object().get("/Subtype") == "/Image"
            for xobject in xobjects.get_object().values()
        )
    except Exception:  # noqa: BLE001 - image detection is a hint
        return False


def extract_pdf(
    data: bytes, *, password: str | None = None, limits: PdfLimits | None = None
) -> PdfExtraction:
    """Canonical text and page spans of a PDF (see the module docstring for limits and errors)."""
    limits = limits or PdfLimits()
    if not has_pdf_magic(data):
        raise ExtractionError("not_pdf", "the content does not start with a %PDF- header")
    deadline = time.monotonic() + limits.timeout_seconds
    warnings: list[PipelineWarning] = []
    reader = _open(data, password, warnings)
    try:
        page_count = len(reader.pages)
    except Exception as error:  # noqa: BLE001 - reported as an ExtractionError
        raise ExtractionError(
            "malformed", f"the PDF's page tree cannot be read ({type(error).__name__})"
        ) from None
    if page_count == 0:
        raise ExtractionError("malformed", "the PDF has no pages")
    if page_count > limits.max_pages:
        warnings.append(
            PipelineWarning(
                "pdf_pages_truncated",
                f"the PDF has {page_count} pages; only the first {limits.max_pages} were read",
            )
        )

    pages: list[str] = []
    total_chars = 0
    first_page = _FontRuns()
    for index in range(min(page_count, limits.max_pages)):
        if time.monotonic() > deadline:
            raise ExtractionError(
                "timeout",
                f"PDF text extraction took longer than {limits.timeout_seconds:g} s "
                f"({index} of {page_count} pages read)",
            )
        fonts = first_page if index == 0 else None
        text = _page_text(reader, data, index, password, warnings, fonts, deadline)
        room = limits.max_chars - total_chars
        if len(text) > room:
            cut = text.rfind(" ", 0, room + 1)
            pages.append(text[: cut if cut > 0 else room].rstrip())
            warnings.append(
                PipelineWarning(
                    "pdf_text_truncated",
                    f"text was cut at {limits.max_chars} characters on page {index + 1}",
                )
            )
            break
        pages.append(text)
        total_chars += len(text)

    unreadable = sum(1 for warning in warnings if warning.code == "pdf_page_unreadable")
    if pages and unreadable == len(pages):
        raise ExtractionError("malformed", "no page of the PDF could be read")
    alnum = sum(1 for page in pages for char in page if char.isalnum())
    if alnum < _MIN_ALNUM_PER_PAGE * len(pages):
        with_images = sum(1 for index in range(len(pages)) if _has_image(reader, index))
        if alnum == 0 or with_images * 2 >= len(pages):
            raise ExtractionError(
                "no_text_layer",
                f"the PDF has no usable text layer ({alnum} letters or digits on {len(pages)} "
                "pages): it looks scanned or image-only, and OCR is not supported",
            )
        warnings.append(
            PipelineWarning("pdf_sparse_text", f"only {alnum} letters or digits were extracted")
        )
    canonical_text, spans = join_pages(pages)
    return PdfExtraction(
        canonical_text=canonical_text,
        page_spans=spans,
        page_count=page_count,
        title=_title(reader) or _outline_title(reader) or first_page.heading(),
        warnings=warnings,
        metadata=_metadata(reader),
    )
