"""A report's footnotes and its `## Sources` list, one entry per source with its cited spans.

The body is the digest's footnoted Markdown (`runner.grounding.footnotes.marked_blocks`): a
sentence ends with the `[^n]` of each source it cites, and `[^n]` is source `Sn`. Then:

- `## Sources`: one line per source, `S1 Title — Ann Lee, LWN.net, 2015-03-25 <URL>
  (document 7): 3 passages; cited in: Answer, In Title; relevance 0.82, credibility 0.95`: a
  message reads `#channel, author, time (message 12)`; the scores (two decimals) are those of
  `runner.reports.source_scores`, absent from a report stored before them;
- one footnote per source, its spans listed under it in the order first cited:
  `[^1]: Title — Ann Lee, 2015-03-25, <URL>, page:2:char:10-60, "the words"; char:90-120,
  "more words" (document 7)`, `[^2]: #ops, ann, 2024-05-01 10:02 UTC, "the words" (message 12)`.

A title is the document's own, else its first heading or file name (the document pipeline stores
one of them); the author, publisher and date after the dash are those the document states (PDF
metadata, a page's metadata), each only when known. Near-duplicate documents are one source
(runner.reports.sources): the first cited names it, a span of another says so (`char:0-80 of
document 9, "the words"`), and the end lists every document (`(documents 7, 9)`). A URL is
shown only as an http(s) autolink that cannot be anything else; every other text (titles,
authors and publishers are untrusted) is escaped by `runner.core.markdown_text.escape_inline`.
"""

from __future__ import annotations

from datetime import UTC
from urllib.parse import urlsplit

from runner.core.markdown_text import escape_inline, is_break_or_control
from runner.reports.sources import (
    DocumentSource,
    MessageSource,
    RegisteredSource,
    SourceRegistry,
    source_number,
)

SOURCES_HEADING = "Sources"


def markdown_url(url: str) -> str:
    """`<url>` when it is an http(s) URL a CommonMark autolink holds as it is, else the URL as
    escaped text (never a link a renderer would build out of something else)."""
    parts = urlsplit(url)
    if parts.scheme.lower() in {"http", "https"} and parts.netloc and _autolinkable(url):
        return f"<{url}>"
    return escape_inline(url)


def _autolinkable(url: str) -> bool:
    return not any(c in "<> " or c.isspace() or is_break_or_control(c) for c in url)


def _when(source: MessageSource) -> str:
    return source.ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _quoted(text: str) -> str:
    return f'"{escape_inline(text)}"'


def source_label(entry: RegisteredSource) -> str:
    """What the source is, in a line: a document's title, URL and id; a message's channel,
    author, time and id."""
    first = entry.first
    if isinstance(first, MessageSource):
        return (
            f"#{escape_inline(first.channel)}, {escape_inline(first.author)}, {_when(first)} "
            f"(message {escape_inline(first.message_id)})"
        )
    url = f" {markdown_url(first.url)}" if first.url else ""
    return f"{first.named()}{url} {_documents(entry)}"


def _documents(entry: RegisteredSource) -> str:
    """`(document 7)`, or `(documents 7, 9)` for near-duplicates cited as one source."""
    ids = list(
        dict.fromkeys(span.document_id for span in entry.spans if isinstance(span, DocumentSource))
    )
    noun = "document" if len(ids) == 1 else "documents"
    return f"({noun} {', '.join(escape_inline(i) for i in ids)})"


def _span_text(span: DocumentSource, first: DocumentSource) -> str:
    where = escape_inline(span.locator)
    if span.document_id != first.document_id:
        where += f" of document {escape_inline(span.document_id)}"
    return f"{where}, {_quoted(span.quote)}"


def footnote_text(entry: RegisteredSource) -> str:
    """The footnote of a source (after `[^n]: `): what it is, then each cited span."""
    first = entry.first
    if isinstance(first, MessageSource):
        quotes = "; ".join(_quoted(span.quote) for span in entry.spans)
        return (
            f"#{escape_inline(first.channel)}, {escape_inline(first.author)}, {_when(first)}, "
            f"{quotes} (message {escape_inline(first.message_id)})"
        )
    head = first.named() + (f", {markdown_url(first.url)}" if first.url else "")
    spans = "; ".join(
        _span_text(span, first) for span in entry.spans if isinstance(span, DocumentSource)
    )
    return f"{head}, {spans} {_documents(entry)}"


def sources_list(registry: SourceRegistry) -> str:
    """The `## Sources` block: each source, how many passages of it are cited, the sections
    citing it and, once scored, its relevance and credibility."""
    lines: list[str] = []
    for entry in registry.entries():
        passages = len(entry.spans)
        parts = [f"{passages} passage{'s' if passages != 1 else ''}"]
        if entry.sections:
            parts.append("cited in: " + ", ".join(escape_inline(s) for s in entry.sections))
        if entry.scores is not None:
            scores = entry.scores
            parts.append(f"relevance {scores.relevance:.2f}, credibility {scores.credibility:.2f}")
        lines.append(f"- {entry.identifier} {source_label(entry)}: {'; '.join(parts)}")
    return f"## {SOURCES_HEADING}\n\n" + "\n".join(lines)


def footnote_lines(registry: SourceRegistry) -> str:
    """`[^n]: ...` for every source, n the number of its `Sn`."""
    return "\n".join(
        f"[^{source_number(entry.identifier)}]: {footnote_text(entry)}"
        for entry in registry.entries()
    )


def footnote_numbers(registry: SourceRegistry) -> dict[str, int]:
    """Canonical key → footnote number (the n of the source's `Sn`)."""
    return {entry.key: source_number(entry.identifier) or 0 for entry in registry.entries()}
