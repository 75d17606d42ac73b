"""What a document says about itself: author, publisher and publication date, read at ingest.

PDFs: the document information dictionary's `/Author` and `/CreationDate` (pypdf); `/Producer`
is the software that wrote the file, not a publisher, so a PDF has none. HTML: trafilatura's
metadata (`author`, `sitename` as the publisher, `date`), with its date search limited to what
the page declares (meta tags, structured data, the byline): a year guessed from a copyright
footer would cite a page as written when its site was founded.

Every value is untrusted (anyone can write a PDF's metadata or a page's meta tags), so
`clean_text` puts it on one line without control characters (NUL included) and caps it at
`MAX_METADATA_CHARS`, and `parse_date` keeps only a date it can read in full, between
`EARLIEST_DATE` and tomorrow (a clock a day ahead is not a lie; a PDF "created" in 2099 is). What
cannot be read is dropped, never an error: metadata is optional, the text is what is cited.
Markdown is escaped where it is written (runner.reports.footnotes), as for titles.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from runner.core.display_names import clean_name

MAX_METADATA_CHARS = 200
# Read at most this much of a value: a 1 MB "author" is cut before it is normalized.
_MAX_RAW_CHARS = 4 * MAX_METADATA_CHARS
EARLIEST_DATE = date(1900, 1, 1)

# ISO 8601 (2019-06-03, 2019-06-03T13:17:05Z, 2019-06) and PDF dates (D:20190603131705-04'00'):
# the date part is all that is kept. A bare year is not a date a footnote should print as one.
_ISO = re.compile(r"(\d{4})-(\d{2})(?:-(\d{2})(?!\d)|(?![-\d]))")
_PDF = re.compile(r"^(?:D:)?(\d{4})(\d{2})?(\d{2})?")


@dataclass(frozen=True)
class DocumentMetadata:
    """Author, publisher and publication date of a document; None where it does not say."""

    author: str | None = None
    publisher: str | None = None
    published_at: date | None = None

    def as_record(self) -> dict[str, Any]:
        return {
            "author": self.author,
            "publisher": self.publisher,
            "published_at": self.published_at,
        }


def clean_text(value: object) -> str | None:
    """A metadata value as stored: text on one line, capped; None for nothing printable."""
    if value is None:
        return None
    text = str(value)[:_MAX_RAW_CHARS].replace("\x00", "")
    return clean_name(text, MAX_METADATA_CHARS) or None


def _valid(year: int, month: int, day: int) -> date | None:
    try:
        found = date(year, month, day)
    except ValueError:
        return None
    tomorrow = datetime.now(UTC).date() + timedelta(days=1)
    return found if EARLIEST_DATE <= found <= tomorrow else None


def parse_date(value: object) -> date | None:
    """The date in an ISO 8601 string, a PDF date string (`D:YYYYMMDDHHmmSS...`), a `date` or a
    `datetime`; None for anything else or out of range. A month without a day is its first."""
    if isinstance(value, datetime):
        return _valid(value.year, value.month, value.day)
    if isinstance(value, date):
        return _valid(value.year, value.month, value.day)
    if not isinstance(value, str):
        return None
    text = value.strip()[:64]
    iso = _ISO.match(text)
    if iso:
        return _valid(int(iso[1]), int(iso[2]), int(iso[3] or 1))
    pdf = _PDF.match(text)
    if pdf and (pdf[2] or text.startswith("D:")):
        return _valid(int(pdf[1]), int(pdf[2] or 1), int(pdf[3] or 1))
    return None


def _resolved(value: Any) -> Any:
    """A value of the dictionary, following an indirect reference (`dict.get` does not)."""
    get_object = getattr(value, "get_object", None)
    return get_object() if callable(get_object) else value


def pdf_metadata(info: Mapping[str, Any] | None) -> DocumentMetadata:
    """From a PDF's document information dictionary (`PdfReader.metadata`); a broken one gives
    nothing rather than failing the document."""
    if not info:
        return DocumentMetadata()
    try:
        author = _resolved(info.get("/Author"))
        created = _resolved(info.get("/CreationDate"))
    except Exception:  # noqa: BLE001 - an unreadable dictionary of a broken file is no metadata
        return DocumentMetadata()
    return DocumentMetadata(author=clean_text(author), published_at=parse_date(created))


def html_metadata(document: Any) -> DocumentMetadata:
    """From trafilatura's `Document` (what `bare_extraction(..., with_metadata=True)` returns)."""
    if document is None:
        return DocumentMetadata()
    return DocumentMetadata(
        author=clean_text(getattr(document, "author", None)),
        publisher=clean_text(getattr(document, "sitename", None)),
        published_at=parse_date(getattr(document, "date", None)),
    )
