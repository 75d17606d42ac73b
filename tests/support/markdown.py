"""Helpers for Markdown tests: what a dashboard's CommonMark renderer (markdown-it with the
footnote plugin, raw HTML enabled, GFM tables and strikethrough on) makes of Markdown digestd
emitted, as plain data to assert on."""

from __future__ import annotations

from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.footnote import footnote_plugin

# Token types that only markup can produce: none may come from a message, a name or a title.
MARKUP_TOKENS = frozenset(
    {
        "html_inline",
        "html_block",
        "link_open",
        "image",
        "code_inline",
        "code_block",
        "fence",
        "em_open",
        "strong_open",
        "s_open",
        "blockquote_open",
        "table_open",
        "hr",
        "bullet_list_open",
        "ordered_list_open",
        "hardbreak",
    }
)


def renderer() -> MarkdownIt:
    """Raw HTML on, as the most permissive dashboard would have it. The footnote plugin's tail
    rule (which moves definitions to the end and keeps one per label) is off, so every
    definition the text holds shows where it was written: an injected one cannot hide behind
    a genuine one of the same label."""
    md = MarkdownIt("commonmark", {"html": True}).use(footnote_plugin)
    return md.enable(["table", "strikethrough"]).disable("footnote_tail")


@dataclass
class Rendered:
    """The parts of a rendered document, each with its visible text on one line."""

    headings: list[str] = field(default_factory=list)
    paragraphs: list[str] = field(default_factory=list)  # outside footnote definitions
    footnote_refs: list[str] = field(default_factory=list)  # labels, in order
    definitions: list[tuple[str, str]] = field(default_factory=list)  # (label, visible text)
    markup: list[str] = field(default_factory=list)  # MARKUP_TOKENS found, with what they held
    links: list[str] = field(default_factory=list)  # hrefs of links and images

    @property
    def text(self) -> str:
        return " ".join([*self.headings, *self.paragraphs, *(t for _, t in self.definitions)])


def visible(inline: Token, rendered: Rendered) -> str:
    """The text a reader sees in an inline token (footnote markers left out), noting markup."""
    parts: list[str] = []
    for child in inline.children or []:
        if child.type in MARKUP_TOKENS:
            rendered.markup.append(f"{child.type}: {child.content or child.attrs}")
        if child.type in ("link_open", "image"):
            rendered.links.append(str(child.attrs.get("href") or child.attrs.get("src")))
        if child.type == "footnote_ref":
            rendered.footnote_refs.append(str(child.meta["label"]))
        elif child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split())


def render(markdown: str, bullets_are_markup: bool = False) -> Rendered:
    """`markdown` as the renderer reads it. The lists digestd writes itself (a report's open
    points, a digest's highlights) are markup only when `bullets_are_markup`."""
    rendered = Rendered()
    heading = definition = False
    label = ""
    for token in renderer().parse(markdown):
        if token.type in MARKUP_TOKENS and not (
            token.type == "bullet_list_open" and not bullets_are_markup
        ):
            rendered.markup.append(f"{token.type}: {token.content}")
        if token.type == "heading_open":
            heading = True
        elif token.type == "heading_close":
            heading = False
        elif token.type == "footnote_reference_open":
            definition, label = True, str(token.meta["label"])
            rendered.definitions.append((label, ""))
        elif token.type == "footnote_reference_close":
            definition = False
        elif token.type == "inline":
            text = visible(token, rendered)
            if heading:
                rendered.headings.append(text)
            elif definition:
                last = rendered.definitions[-1]
                rendered.definitions[-1] = (
                    last[0],
                    " ".join(filter(None, (last[1], text))),
                )
            else:
                rendered.paragraphs.append(text)
    return rendered
