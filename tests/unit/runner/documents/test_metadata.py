"""Document metadata as read at ingest: untrusted values are put on one capped line without
control characters, dates are read leniently (ISO, PDF `D:` dates, datetimes) and anything
unreadable or impossible is dropped rather than failing the document."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from runner.documents.metadata import (
    MAX_METADATA_CHARS,
    DocumentMetadata,
    clean_text,
    html_metadata,
    parse_date,
    pdf_metadata,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("D:20190603131705-04'00'", date(2019, 6, 3)),
        ("D:2015", date(2015, 1, 1)),
        ("20220415120659", date(2022, 4, 15)),
        ("2014-12-15", date(2014, 12, 15)),
        ("2015-03-25T10:00:00+00:00", date(2015, 3, 25)),
        ("2019-06", date(2019, 6, 1)),
        (datetime(2010, 8, 2, 9, 9, tzinfo=UTC), date(2010, 8, 2)),
        ("2019-13-45", None),
        ("D:99991399", None),
        ("D:20991231", None),  # the future: a forged or broken clock
        ("1850-01-01", None),
        ("2015", None),  # a bare year is not a date to print as one
        ("last Tuesday", None),
        ("", None),
        (None, None),
        (20190603, None),
        ("2019-06-03" + "9" * 1_000_000, None),
    ],
)
def test_dates_are_read_leniently_and_garbage_is_dropped(value: object, expected: object) -> None:
    assert parse_date(value) == expected


def test_tomorrow_is_still_a_date() -> None:
    tomorrow = datetime.now(UTC).date() + timedelta(days=1)
    assert parse_date(tomorrow.isoformat()) == tomorrow


def test_hostile_text_is_one_capped_line_without_control_characters() -> None:
    hostile = "# Owned\x00\x07\n\n## <script>alert(1)</script>\u2028" + "A" * 1_000_000
    cleaned = clean_text(hostile)
    assert cleaned is not None and len(cleaned) <= MAX_METADATA_CHARS
    assert cleaned.startswith("# Owned ## <script>")  # escaped where written, not here
    assert not any(ord(c) < 32 or c == "\u2028" for c in cleaned)
    assert clean_text(" \x00\n\t ") is None and clean_text(None) is None


def test_a_broken_pdf_dictionary_gives_no_metadata() -> None:
    class Broken(dict[str, object]):
        def get(self, key: str, default: object = None) -> object:
            raise ValueError("bad xref")

    assert pdf_metadata(Broken(x=1)) == DocumentMetadata()
    assert pdf_metadata(None) == DocumentMetadata()
    assert pdf_metadata({"/Author": "  ", "/CreationDate": "D:20100802090958-05'00'"}) == (
        DocumentMetadata(published_at=date(2010, 8, 2))
    )


def test_html_metadata_takes_author_site_name_and_date() -> None:
    class Page:
        author = "Ann Lee"
        sitename = "LWN.net"
        date = "2015-03-25"

    assert html_metadata(Page()) == DocumentMetadata("Ann Lee", "LWN.net", date(2015, 3, 25))
    assert html_metadata(None) == DocumentMetadata()
