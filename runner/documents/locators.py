"""Evidence locators: where a snippet is in the canonical text.

- `char:S-E`: `canonical_text[S:E]`;
- `page:N:char:S-E`: page N (1-based), `page_text[S:E]` where `page_text` is that page's span of
  the canonical text (`canonical.join_pages`).
Offsets are 0-based, end-exclusive code-point offsets, written without leading zeros, and a
snippet is never empty. A locator is only ever produced together with the check that it slices to
its snippet (`make_locator`); there is no fallback such as `char:0-0`: a snippet that cannot be
located is an error, because a citation that points nowhere is worse than none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from runner.documents.canonical import PageSpan
from runner.documents.errors import LocatorError

_NUMBER = r"(0|[1-9][0-9]*)"
_CHAR_LOCATOR = re.compile(rf"char:{_NUMBER}-{_NUMBER}")
_PAGE_LOCATOR = re.compile(rf"page:([1-9][0-9]*):char:{_NUMBER}-{_NUMBER}")


@dataclass(frozen=True)
class Locator:
    start: int
    end: int
    page: int | None = None  # 1-based; offsets are then within the page

    def __str__(self) -> str:
        span = f"char:{self.start}-{self.end}"
        return f"page:{self.page}:{span}" if self.page is not None else span


def parse_locator(locator: str) -> Locator:
    """`Locator` of a string, or `LocatorError("bad_locator")`."""
    if match := _PAGE_LOCATOR.fullmatch(locator):
        page, start, end = (int(group) for group in match.groups())
        parsed = Locator(start=start, end=end, page=page)
    elif match := _CHAR_LOCATOR.fullmatch(locator):
        parsed = Locator(start=int(match.group(1)), end=int(match.group(2)))
    else:
        raise LocatorError(
            "bad_locator", f"not a char:S-E or page:N:char:S-E locator: {locator[:60]!r}"
        )
    if parsed.end <= parsed.start:
        raise LocatorError("bad_locator", f"empty or reversed span in {locator!r}")
    return parsed


def resolve_locator(
    locator: str | Locator, canonical_text: str, page_spans: list[PageSpan] | None = None
) -> tuple[int, int]:
    """Absolute `(start, end)` in the canonical text, after checking the bounds."""
    parsed = parse_locator(locator) if isinstance(locator, str) else locator
    if parsed.page is None:
        base, limit = 0, len(canonical_text)
    else:
        if not page_spans or parsed.page > len(page_spans):
            raise LocatorError("bad_locator", f"{parsed} names a page the document does not have")
        base, limit = page_spans[parsed.page - 1]
    start, end = base + parsed.start, base + parsed.end
    if end > limit:
        raise LocatorError(
            "out_of_range", f"{parsed} ends beyond its {'page' if parsed.page else 'text'}"
        )
    return start, end


def verify_locator(
    locator: str | Locator,
    snippet: str,
    canonical_text: str,
    page_spans: list[PageSpan] | None = None,
) -> None:
    """Raise `LocatorError("locator_mismatch")` unless the locator slices exactly to `snippet`."""
    start, end = resolve_locator(locator, canonical_text, page_spans)
    if canonical_text[start:end] != snippet:
        raise LocatorError("locator_mismatch", f"{locator} does not slice to its snippet")


def make_locator(
    canonical_text: str,
    start: int,
    end: int,
    snippet: str,
    page: int | None = None,
    page_spans: list[PageSpan] | None = None,
) -> str:
    """The locator of `canonical_text[start:end]` (absolute offsets), page-relative when `page` is
    given, verified against `snippet` before it is returned."""
    if page is None:
        locator = Locator(start=start, end=end)
    else:
        if not page_spans or not 1 <= page <= len(page_spans):
            raise LocatorError("bad_locator", f"page {page} is not a page of the document")
        page_start, page_end = page_spans[page - 1]
        if not page_start <= start < end <= page_end:
            raise LocatorError("out_of_range", f"span {start}-{end} is not inside page {page}")
        locator = Locator(start=start - page_start, end=end - page_start, page=page)
    if end <= start:
        raise LocatorError("bad_locator", "a snippet cannot be empty")
    text = str(locator)
    verify_locator(text, snippet, canonical_text, page_spans)
    return text


def locator_context(
    locator: str,
    canonical_text: str,
    page_spans: list[PageSpan] | None = None,
    chars: int = 200,
) -> tuple[str, str]:
    """Up to `chars` characters before and after a located snippet, within its page for PDFs,
    for showing a citation in its surroundings (cut at a space where possible)."""
    start, end = resolve_locator(locator, canonical_text, page_spans)
    parsed = parse_locator(locator)
    low, high = (0, len(canonical_text))
    if parsed.page is not None and page_spans:
        low, high = page_spans[parsed.page - 1]
    before = canonical_text[max(low, start - chars) : start]
    after = canonical_text[end : min(high, end + chars)]
    if start - chars > low and " " in before:
        before = before[before.index(" ") + 1 :]
    if end + chars < high and " " in after:
        after = after[: after.rindex(" ")]
    return before, after
