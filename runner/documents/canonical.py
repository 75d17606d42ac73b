"""Canonical document text: the one string every hash, locator and archive refers to.

Rules (`canonicalize`), applied to extracted text (HTML after main-content extraction, which has
already decoded entities and dropped tags; plain text as given; each PDF page):
1. Soft hyphens (U+00AD) are removed: invisible, and they would split words for matching.
2. `runner.grounding.normalize.normalize_text`: lone surrogates → U+FFFD, CRLF/CR → LF, NFC, control and
   zero-width characters removed.
3. U+2028 counts as a newline and U+2029 as a paragraph break.
4. Every run of whitespace (Unicode `\\s`) that contains two or more newlines becomes exactly
   `\\n\\n` (a paragraph break); every other run becomes one space.
5. Paragraphs are stripped, empty ones dropped, leading/trailing whitespace of the whole removed.

The result has no tabs, no single newlines and no double spaces, so applying the rules again
changes nothing (idempotent). HTML entities are NOT decoded here: the HTML parser decodes them
exactly once, and decoding again would corrupt text that talks about `&amp;` (and would not be
idempotent). Plain text is text, not markup.

PDFs: each page is canonicalized, then pages are joined as paragraphs with a marker paragraph
`---PAGE {n}---` before page n (n ≥ 2), i.e. the separator `\\n\\n---PAGE {n}---\\n\\n`.
A page paragraph that would look exactly like a marker is defused to `--- PAGE n---` so markers
are unambiguous and page spans can be recomputed from the text alone (`page_spans_from_text`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from runner.core.vocabulary import PipelineWarning
from runner.documents.fingerprint import NEAR_DUPLICATE_MIN_AGREEMENTS, as_signed
from runner.documents.metadata import DocumentMetadata
from runner.grounding.normalize import normalize_text

_WHITESPACE_RUN = re.compile(r"\s+")
_MARKER = re.compile(r"---PAGE ([1-9][0-9]*)---")

PageSpan = tuple[int, int]


def _collapse_run(match: re.Match[str]) -> str:
    return "\n\n" if match.group().count("\n") >= 2 else " "


def canonicalize(text: str) -> str:
    """The canonical form of extracted text (see the module docstring for the rules)."""
    text = normalize_text(text.replace("\u00ad", ""))
    text = text.replace("\u2028", "\n").replace("\u2029", "\n\n")
    text = _WHITESPACE_RUN.sub(_collapse_run, text)
    paragraphs = (paragraph.strip(" ") for paragraph in text.split("\n\n"))
    return "\n\n".join(paragraph for paragraph in paragraphs if paragraph)


def source_text_hash(canonical_text: str) -> str:
    """`sha256:<64 hex>` of the UTF-8 bytes of the canonical text (the archive's file name and the
    payload's `source_text_hash`)."""
    return "sha256:" + hashlib.sha256(canonical_text.encode("utf-8")).hexdigest()


def page_marker(page_number: int) -> str:
    return f"---PAGE {page_number}---"


def _defuse_markers(page_text: str) -> str:
    paragraphs = page_text.split("\n\n")
    return "\n\n".join(
        "--- PAGE" + paragraph[len("---PAGE") :] if _MARKER.fullmatch(paragraph) else paragraph
        for paragraph in paragraphs
    )


def join_pages(page_texts: list[str]) -> tuple[str, list[PageSpan]]:
    """Canonical text of a PDF and the `(start, end)` span of every page's text in it.

    An empty page gets an empty span: at 0 for page 1, right after its marker otherwise.
    """
    pieces: list[str] = []
    spans: list[PageSpan] = []
    position = 0

    def append_paragraph(paragraph: str) -> int:
        nonlocal position
        if pieces:
            pieces.append("\n\n")
            position += 2
        start = position
        pieces.append(paragraph)
        position += len(paragraph)
        return start

    for number, raw in enumerate(page_texts, start=1):
        if number > 1:
            append_paragraph(page_marker(number))
        page = _defuse_markers(canonicalize(raw))
        if page:
            start = append_paragraph(page)
            spans.append((start, position))
        else:
            spans.append((position, position))
    return "".join(pieces), spans


def page_spans_from_text(canonical_text: str) -> list[PageSpan]:
    """Recompute the page spans of a canonical PDF text from its markers (for archives, which
    store only the text). Equal to what `join_pages` returned for the same text."""
    spans: list[PageSpan] = []
    first: int | None = None
    last = 0
    page_start_if_empty = 0
    expected = 2
    position = 0
    for paragraph in canonical_text.split("\n\n") if canonical_text else []:
        end = position + len(paragraph)
        marker = _MARKER.fullmatch(paragraph)
        if marker and int(marker.group(1)) == expected:
            spans.append(
                (first, last) if first is not None else (page_start_if_empty, page_start_if_empty)
            )
            first, page_start_if_empty, expected = None, end, expected + 1
        else:
            if first is None:
                first = position
            last = end
        position = end + 2
    spans.append((first, last) if first is not None else (page_start_if_empty, page_start_if_empty))
    return spans


@dataclass(frozen=True)
class CanonicalDocument:
    """A document as stored: canonical text plus what locators and digests need about it, what
    it says about itself (`metadata`) and, once stored, the earliest stored document it
    near-duplicates (`near_duplicate_of`, found by its `fingerprint`)."""

    canonical_text: str
    source_text_hash: str  # "sha256:<64 hex>" of canonical_text's UTF-8 bytes
    content_type: str  # "application/pdf" | "text/html" | "text/plain"
    title: str | None = None
    page_spans: list[PageSpan] | None = None  # PDFs: (start, end) of each page's text
    warnings: list[PipelineWarning] = field(default_factory=list)
    source_url: str | None = None
    metadata: DocumentMetadata = field(default_factory=DocumentMetadata)
    near_duplicate_of: int | None = None
    # runner.documents.fingerprint.minhash of the text, set at ingest (off the event loop: it
    # costs about a second per megabyte); None: not computed, the document is never matched.
    fingerprint: tuple[int, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def is_pdf(self) -> bool:
        return self.page_spans is not None

    def as_record(self) -> dict[str, Any]:
        """The fields to persist, with the text's fingerprint and the share of its positions a
        stored document must agree on to be its near-duplicate (db/documents.store_document)."""
        return {
            "canonical_text": self.canonical_text,
            "source_text_hash": self.source_text_hash,
            "content_type": self.content_type,
            "title": self.title,
            "page_spans": [list(span) for span in self.page_spans] if self.page_spans else None,
            "warnings": [warning.as_json() for warning in self.warnings],
            "source_url": self.source_url,
            **self.metadata.as_record(),
            "minhash": as_signed(list(self.fingerprint)) if self.fingerprint else None,
            "near_duplicate_min_agreements": NEAR_DUPLICATE_MIN_AGREEMENTS,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> CanonicalDocument:
        spans = record.get("page_spans")
        return cls(
            canonical_text=record["canonical_text"],
            source_text_hash=record["source_text_hash"],
            content_type=record["content_type"],
            title=record.get("title"),
            page_spans=[(int(start), int(end)) for start, end in spans] if spans else None,
            warnings=[PipelineWarning(w["code"], w["message"]) for w in record.get("warnings", [])],
            source_url=record.get("source_url"),
            metadata=DocumentMetadata(
                author=record.get("author"),
                publisher=record.get("publisher"),
                published_at=_as_date(record.get("published_at")),
            ),
            near_duplicate_of=record.get("near_duplicate_of"),
        )


def _as_date(value: object) -> date | None:
    """A stored date (a `date` from the row, or ISO text from JSON)."""
    if isinstance(value, date) or value is None:
        return value
    return date.fromisoformat(str(value))
