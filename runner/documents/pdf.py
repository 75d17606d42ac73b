"""PDF → canonical text, page by page, with page spans for `page:N:char:S-E` locators.

pypdf reads one page at a time (memory stays bounded by the largest page, not the file);
pdfminer.six, when installed, is tried for a page pypdf fails on. Limits: the first 500 pages,
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
"""

from __future__ import annotations

import importlib.util
import io
import re
import time
from dataclasses import dataclass, field

from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError, PyPdfError

from runner.core.vocabulary import PipelineWarning
from runner.documents.canonical import PageSpan, canonicalize, join_pages
from runner.documents.errors import ExtractionError

PDF_MAGIC = b"%PDF-"
_HYPHENATED_LINE_END = re.compile(r"(\w)-\n(?=[^\W\d_A-Z])")
# Below this many letters or digits per page on average, a PDF whose pages are mostly images is
# treated as having no text layer: the image-only fixture has the single word "Background" on
# four of its six pages. A sparse PDF without images is kept, with a warning.
_MIN_ALNUM_PER_PAGE = 20


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


def _pdfminer_page_text(data: bytes, page_index: int, password: str | None) -> str | None:
    """pdfminer.six's text for one page, or None when it is not installed or fails too."""
    if importlib.util.find_spec("pdfminer") is None:
        return None
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


def _page_text(
    reader: PdfReader,
    data: bytes,
    index: int,
    password: str | None,
    warnings: list[PipelineWarning],
) -> str:
    try:
        text = reader.pages[index].extract_text() or ""
    except Exception as error:  # noqa: BLE001 - a broken page falls back to pdfminer
        fallback = _pdfminer_page_text(data, index, password)
        if fallback is None:
            warnings.append(
                PipelineWarning(
                    "pdf_page_unreadable",
                    f"page {index + 1} could not be read ({type(error).__name__}); left empty",
                )
            )
            return ""
        warnings.append(
            PipelineWarning("pdf_page_fallback", f"page {index + 1} was read with pdfminer.six")
        )
        text = fallback
    return canonicalize(_HYPHENATED_LINE_END.sub(r"\1", text))


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
    for index in range(min(page_count, limits.max_pages)):
        if time.monotonic() > deadline:
            raise ExtractionError(
                "timeout",
                f"PDF text extraction took longer than {limits.timeout_seconds:g} s "
                f"({index} of {page_count} pages read)",
            )
        text = _page_text(reader, data, index, password, warnings)
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
        title=_title(reader),
        warnings=warnings,
    )
