"""pdfminer.six as pypdf's fallback, page by page: real PDFs pypdf reads come out byte-identical,
a page pypdf raises on or garbles is read by pdfminer.six with a warning (counted on /metrics),
and a page both fail on leaves the existing clear error. The broken PDFs are built here, byte by
byte, so each failure is deterministic."""

from __future__ import annotations

import hashlib
import io
import zlib

import pytest
from prometheus_client import REGISTRY

from runner.documents.errors import ExtractionError
from runner.documents.ingest import counted_pdf_extraction
from runner.documents.pdf import GARBLED_SHARE, extract_pdf, fallback_reason, garbled_share
from tests.support.documents import PDF_DIR

SENTENCE = b"The rollback plan is approved by the on-call lead."
HELVETICA = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"

# sha256 of each real PDF's canonical text as pypdf alone extracted it, before the fallback.
PYPDF_TEXT_SHA256 = {
    "acl19irc.pdf": "a0acfab1c2b336f8a49d5dac4acc1528f094680e17f0d1fcaeaa0b9bef5a4e7e",
    "crazyones.pdf": "12ba599e61d34823cc3eeca9c296e0a335a46c32df20a6c2cc7cafe8f7dd558c",
    "multicolumn.pdf": "a65c3b47ee3319e5399abd0743cfac49961836ebd08f40cd165ad204dd13cf9a",
    "pdflatex-4-pages.pdf": "c11ca5f4dd9e761d5da0f1522f5676958a93bff49e4987cea9aafc6ac5e9c4c8",
    "tricky_malformed_broken_xref_issue-297.pdf": (
        "fcacc4c6fc78a8a1429ed41c59bbca3b1052eeb3f9323725ce198d1ea8c32e06"
    ),
    "tricky_scanned_ocr_Seige_of_Vicksburg.pdf": (
        "db071325f392bf8439eb79856f9056a0c631c29c55b1d395251e6a0d753a150d"
    ),
}


def one_page_pdf(contents: bytes, font: bytes = HELVETICA) -> bytes:
    """A one-page PDF with a correct cross-reference table: `contents` is the page's content
    stream object (dictionary and stream), `font` the object its `/F1` names."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        contents,
        font,
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.writelines(b"%010d 00000 n \n" % offset for offset in offsets)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    return out.getvalue()


def stream(data: bytes, entries: bytes = b"") -> bytes:
    return b"<< /Length %d %s>>\nstream\n%s\nendstream" % (len(data), entries, data)


def shows(font: bytes = b"/F1") -> bytes:
    return b"BT " + font + b" 12 Tf 72 700 Td (" + SENTENCE + b") Tj ET"


def fallback_warnings() -> float:
    value = REGISTRY.get_sample_value(
        "pdf_extraction_warnings_total", {"code": "pdf_page_fallback"}
    )
    return value or 0.0


@pytest.mark.parametrize("name", sorted(PYPDF_TEXT_SHA256))
def test_a_real_pdf_pypdf_reads_is_extracted_byte_identical(name: str) -> None:
    path = PDF_DIR / name
    if not path.exists():
        pytest.skip(f"{path} is absent (real data lives beside the repo)")
    extraction = extract_pdf(path.read_bytes())
    assert hashlib.sha256(extraction.canonical_text.encode()).hexdigest() == PYPDF_TEXT_SHA256[name]
    assert "pdf_page_fallback" not in {warning.code for warning in extraction.warnings}


def test_a_page_pypdf_raises_on_is_read_by_pdfminer_with_a_warning() -> None:
    # `/Fl` is the abbreviated FlateDecode name, valid for inline images only: pypdf 7 raises on
    # it for a stream, pdfminer.six decodes it.
    data = one_page_pdf(stream(zlib.compress(shows()), b"/Filter /Fl "))
    before = fallback_warnings()
    extraction = counted_pdf_extraction(data, None, None)
    assert extraction.canonical_text == SENTENCE.decode()
    assert [(w.code, w.message) for w in extraction.warnings] == [
        ("pdf_page_fallback", "page 1 was read with pdfminer.six (pypdf failed: DeprecationError)")
    ]
    assert fallback_warnings() == before + 1


def test_a_page_pypdf_garbles_is_read_by_pdfminer() -> None:
    # The text names a font the page's resources lack: pypdf gives U+FFFD for every glyph (no letter at all),
    # pdfminer.six its default font's letters (each a zero-width glyph, so one to a line).
    data = one_page_pdf(stream(shows(b"/F9")))
    extraction = extract_pdf(data)
    assert [w.message for w in extraction.warnings] == [
        "page 1 was read with pdfminer.six (pypdf returned no text)"
    ]
    letters = "".join(extraction.canonical_text.split())
    assert letters == "".join(SENTENCE.decode().split())


def test_a_page_both_fail_on_gives_the_existing_clear_error() -> None:
    data = one_page_pdf(stream(shows(), b"/Filter /NoSuchFilter "))
    with pytest.raises(ExtractionError) as failed:
        extract_pdf(data)
    assert failed.value.code == "malformed"
    assert str(failed.value) == "malformed: no page of the PDF could be read"


def test_garbled_text_and_empty_text_are_read_again_and_real_text_is_kept() -> None:
    assert fallback_reason("") == "no text" and fallback_reason(" \n- . ") == "no text"
    assert fallback_reason("\ufffd" * 40) == "no text"
    assert fallback_reason("\ufffd" * 40 + " ok") == "garbled text"
    assert fallback_reason("Tab\ue001le \ue002\ue003\ue004 of \ue005\ue006") == "garbled text"
    real = "Rollbacks need the on-call lead’s approval (see § 4.2) — always."
    assert fallback_reason(real) is None and garbled_share(real) == 0.0
    # A few replacement characters in a page of text are a bad glyph or two, not a bad font.
    assert garbled_share("Rollback \ufffd plan approved") < GARBLED_SHARE
