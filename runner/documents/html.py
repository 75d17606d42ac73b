"""HTML → canonical text: main content only, paragraphs kept as `\\n\\n`.

trafilatura finds the main content (navigation, cookie banners, footers and comments are not
evidence) and hands back a small XML tree (`p`, `head`, `list`/`item`, `table`/`row`/`cell`,
`quote`, `code`, `lb`, ...). We walk that tree ourselves instead of using trafilatura's text
output because its text keeps the source's hard-wrapped newlines, so a single `\\n` there does not
mean "new paragraph". Here a paragraph break exists only where a block element starts or ends;
whitespace inside text (including source newlines) is one space. Entities were decoded by the
parser, exactly once. Then `canonicalize` applies the shared rules.

When trafilatura finds no main content (tiny or unusual pages), the whole `<body>` minus scripts,
styles and navigation-like elements is used, with a warning.

The title is trafilatura's (the page's metadata, `<title>`, or its main heading), else the
`<title>`, else the first heading with text; a page with none of them has no title here (the
ingest names it after its file). Author, site name and date come from trafilatura's metadata too
(runner.documents.metadata).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import lxml.html
import trafilatura
from lxml import etree

from runner.core.vocabulary import PipelineWarning
from runner.documents.canonical import canonicalize
from runner.documents.errors import ExtractionError
from runner.documents.metadata import DocumentMetadata, html_metadata

# Block-level tags of trafilatura's output format and of plain HTML (for the fallback).
_BLOCK_TAGS = frozenset(
    """doc main body p head list item quote code table graphic note fw div section article header
    footer aside nav h1 h2 h3 h4 h5 h6 ul ol li dl dt dd pre blockquote figure figcaption hr
    form fieldset address details summary""".split()
)
_LINE_BREAK_TAGS = frozenset({"lb", "br"})
_ROW_TAGS = frozenset({"row", "tr"})
_CELL_TAGS = frozenset({"cell", "td", "th"})
_FALLBACK_DROP = (
    "script",
    "style",
    "noscript",
    "template",
    "nav",
    "footer",
    "header",
    "aside",
    "form",
    "iframe",
    "svg",
    "button",
    "select",
)
_PREFORMATTED_TAGS = frozenset({"code", "pre"})
_HEADING_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_SPACE_RUN = re.compile(r"\s+")


@dataclass
class HtmlExtraction:
    canonical_text: str
    title: str | None
    warnings: list[PipelineWarning] = field(default_factory=list)
    metadata: DocumentMetadata = field(default_factory=DocumentMetadata)


def _flat(text: str | None) -> str:
    """Text of one node with every whitespace run (source newlines included) as one space."""
    return _SPACE_RUN.sub(" ", text) if text else ""


def _raw(text: str | None) -> str:
    return text or ""


def _tag(element: etree._Element) -> str | None:
    tag = element.tag
    if not isinstance(tag, str):  # comments and processing instructions
        return None
    return tag.rsplit("}", 1)[-1].lower()


def _has_block_descendant(element: etree._Element) -> bool:
    return any(_tag(child) in _BLOCK_TAGS for child in element.iterdescendants())


def _inline_text(element: etree._Element) -> str:
    parts: list[str] = []
    _walk(element, parts, include_tail=False)
    return _SPACE_RUN.sub(" ", "".join(parts)).strip()


def _walk(
    element: etree._Element, out: list[str], include_tail: bool = True, raw: bool = False
) -> None:
    """Append the text of `element` to `out`, with `\n\n` around blocks. Inside `code`/`pre`
    (`raw`) source newlines are kept, so blank lines there still separate paragraphs."""
    text_of = _raw if raw else _flat
    tag = _tag(element)
    if tag is None:
        pass
    elif tag in _LINE_BREAK_TAGS:
        out.append("\n")  # a line break inside a paragraph is only a space after collapsing
    elif tag in _ROW_TAGS and not _has_block_descendant(element):
        cells = [_inline_text(cell) for cell in element if _tag(cell) in _CELL_TAGS]
        out.append("\n\n" + " | ".join(cell for cell in cells if cell) + "\n\n")
    else:
        block = tag in _BLOCK_TAGS or tag in _ROW_TAGS or tag in _CELL_TAGS
        inner_raw = raw or tag in _PREFORMATTED_TAGS
        if block:
            out.append("\n\n")
        out.append((_raw if inner_raw else _flat)(element.text))
        for child in element:
            _walk(child, out, raw=inner_raw)
        if block:
            out.append("\n\n")
    if include_tail:
        out.append(text_of(element.tail))


def _tree_text(root: etree._Element) -> str:
    parts: list[str] = []
    _walk(root, parts, include_tail=False)
    return canonicalize("".join(parts))


def _fallback_text(html: bytes | str) -> str:
    try:
        document = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return ""
    for element in list(document.iter(*_FALLBACK_DROP)):
        element.drop_tree()
    body = document.find("body")
    return _tree_text(body if body is not None else document)


def _fallback_title(html: bytes | str) -> str | None:
    """The page's `<title>`, else its first heading (`h1` to `h6`, in document order, the first
    one with text): what a reader would call the page when trafilatura's metadata names none."""
    try:
        document = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return None
    title = document.findtext(".//title")
    if title and canonicalize(title):
        return canonicalize(title)
    for heading in document.iter(*_HEADING_TAGS):
        text = canonicalize(_SPACE_RUN.sub(" ", heading.text_content()))
        if text:
            return text
    return None


def extract_html(html: bytes | str) -> HtmlExtraction:
    """Main content of an HTML page as canonical text, plus its title.

    Raises `ExtractionError("no_text")` when the page has no text at all.
    """
    warnings: list[PipelineWarning] = []
    document = trafilatura.bare_extraction(
        html,
        include_comments=False,
        include_tables=True,
        include_images=False,
        include_links=False,
        with_metadata=True,
        # Only dates the page declares: a copyright year is not when the page was published.
        date_extraction_params={"extensive_search": False, "original_date": True},
    )
    text = ""
    title: str | None = None
    metadata = DocumentMetadata()
    if document is not None and not isinstance(document, dict):
        metadata = html_metadata(document)
    if document is not None and not isinstance(document, dict) and document.body is not None:
        text = _tree_text(document.body)
        title = canonicalize(document.title) if document.title else None
    if not text:
        text = _fallback_text(html)
        if text:
            warnings.append(
                PipelineWarning(
                    "main_content_fallback",
                    "no main content block was found; the whole page body was used",
                )
            )
    if not text:
        raise ExtractionError("no_text", "the HTML page contains no readable text")
    return HtmlExtraction(
        canonical_text=text,
        title=title or _fallback_title(html),
        warnings=warnings,
        metadata=metadata,
    )
