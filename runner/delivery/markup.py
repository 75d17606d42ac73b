"""The digest's Markdown re-rendered for each receiver: Slack mrkdwn, Discord Markdown and a
safe HTML body for e-mail, each a list of units (a line with its continuation lines) that
runner.delivery.splitting packs into messages.

The Markdown digestd emits (runner.exports.markdown, runner.grounding.footnotes) is line-shaped:
`#`/`##` headings, `- ` bullets (a bullet may continue on indented lines), paragraphs, footnote
definitions `[^n]: ...`, and in the running text `[^n]` markers; every stored text in it was
escaped by runner.core.markdown_text.escape_inline. So a line is read as its block kind plus
spans: a backslash escape is its literal character, an unescaped `[^n]` is a footnote marker, and
everything else is literal text. Only the block kinds and markers are ours; every literal span
(untrusted or not) is escaped again for the receiver, so no message can become a mention, a link
or markup there:

- Slack: `&`, `<`, `>` become `&amp;` `&lt;` `&gt;` (its control characters: links, mentions,
  `<!here>`); mrkdwn has no escape for `* _ ~ `` `, so those become look-alike characters
  (an `_` between two letters or digits cannot format and stays).
- Discord: a backslash before every Markdown character (`\\ * _ ~ ` | [ ] < > ( ) #`), and
  before the `:` of `://` so no bare URL is linked; `@everyone`, `@here` and `@` before an id get
  a zero-width space after the `@` (the payload also allows no mentions at all).
- HTML: `html.escape` of every text; markers link to their footnotes.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import quote, urlsplit


class LineKind(StrEnum):
    BLANK = "blank"
    HEADING = "heading"
    BULLET = "bullet"
    FOOTNOTE = "footnote"  # a footnote definition `[^n]: ...`
    CONTINUATION = "continuation"  # an indented line that belongs to the line before it
    PARAGRAPH = "paragraph"


@dataclass(frozen=True)
class Span:
    """Literal text (`footnote` None) or a footnote marker (`text` empty)."""

    text: str = ""
    footnote: int | None = None


@dataclass(frozen=True)
class Line:
    kind: LineKind
    spans: tuple[Span, ...] = ()
    level: int = 0  # a heading's level
    number: int = 0  # a footnote definition's number


_HEADING = re.compile(r"^(#{1,6}) +(.*)$")
_FOOTNOTE_DEFINITION = re.compile(r"^\[\^(\d{1,6})\]: ?(.*)$")
_BULLET = re.compile(r"^[-*+] +(.*)$")
_CONTINUATION = re.compile(r"^\s+(\S.*)$")
# An escaped ASCII punctuation character, or a footnote marker.
_INLINE = re.compile(r"\\([!-/:-@\[-`{-~])|\[\^(\d{1,6})\]")


def parse_inline(text: str) -> tuple[Span, ...]:
    spans: list[Span] = []
    literal: list[str] = []
    position = 0
    for match in _INLINE.finditer(text):
        literal.append(text[position : match.start()])
        position = match.end()
        if match[1] is not None:
            literal.append(match[1])
            continue
        if "".join(literal):
            spans.append(Span("".join(literal)))
        literal = []
        spans.append(Span(footnote=int(match[2])))
    literal.append(text[position:])
    if "".join(literal):
        spans.append(Span("".join(literal)))
    return tuple(spans)


def parse_line(line: str) -> Line:
    if not line.strip():
        return Line(LineKind.BLANK)
    if match := _HEADING.match(line):
        return Line(LineKind.HEADING, parse_inline(match[2]), level=len(match[1]))
    if match := _FOOTNOTE_DEFINITION.match(line):
        return Line(LineKind.FOOTNOTE, parse_inline(match[2]), number=int(match[1]))
    if match := _BULLET.match(line):
        return Line(LineKind.BULLET, parse_inline(match[1]))
    if match := _CONTINUATION.match(line):
        return Line(LineKind.CONTINUATION, parse_inline(match[1]))
    return Line(LineKind.PARAGRAPH, parse_inline(line))


def parse_markdown(markdown: str) -> list[Line]:
    return [parse_line(line) for line in markdown.splitlines()]


# The words of a delivery's link when its sender is given none (runner/delivery/links.py).
READ_DIGEST = "Read the full digest"


def safe_link(url: str | None) -> str | None:
    """An http(s) URL with the characters that could end a Slack `<url|text>`, a Discord
    `[text](url)` or an HTML attribute percent-encoded; None for anything else."""
    if not url:
        return None
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return quote(url.strip(), safe="/:?#[]@!$&'*+,;=%-._~")


# Slack ----------------------------------------------------------------------------------------

_SLACK_LOOKALIKES = str.maketrans({"*": "\u2217", "~": "\u223c", "`": "\u02cb"})
_LONE_UNDERSCORES = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def slack_text(text: str) -> str:
    """Literal text as Slack mrkdwn that shows those words and nothing else."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _LONE_UNDERSCORES.sub("\uff3f", escaped.translate(_SLACK_LOOKALIKES))


def _slack_spans(spans: tuple[Span, ...]) -> str:
    return "".join(
        f"[{span.footnote}]" if span.footnote is not None else slack_text(span.text)
        for span in spans
    )


def slack_units(markdown: str, link: str | None = None, label: str = READ_DIGEST) -> list[str]:
    """The Markdown as Slack mrkdwn: headings bold lines, bullets `•`, footnotes `[n] ...`."""
    units: list[str] = []
    for line in parse_markdown(markdown):
        body = _slack_spans(line.spans)
        if line.kind is LineKind.HEADING:
            rendered = f"*{body}*" if body.strip() else ""
        elif line.kind is LineKind.BULLET:
            rendered = f"• {body}"
        elif line.kind is LineKind.FOOTNOTE:
            rendered = f"[{line.number}] {body}"
        elif line.kind is LineKind.CONTINUATION and units:
            units[-1] += f"\n      {body}"
            continue
        else:
            rendered = body
        units.append(rendered)
    if target := safe_link(link):
        units += ["", f"<{target.replace('|', '%7C')}|{slack_text(label)}>"]
    return units


# Discord --------------------------------------------------------------------------------------

_DISCORD_MARKUP = re.compile(r"([\\*_~`|\[\]<>()#])")
_SCHEME_SEPARATOR = re.compile(r"(?<=[A-Za-z0-9]):(?=//)")
_MENTION = re.compile(r"@(?=everyone|here|[!&]?\d)", re.IGNORECASE)
# What opens a block in Discord when it starts a line: a list, a quote, a heading or subtext.
_DISCORD_LINE_START = re.compile(r"^(?:([-+>])|(\d{1,9})([.)]))")
ZERO_WIDTH_SPACE = "\u200b"


def discord_text(text: str) -> str:
    """Literal text as Discord Markdown that shows those words and pings nobody."""
    escaped = _DISCORD_MARKUP.sub(r"\\\1", text)
    escaped = _SCHEME_SEPARATOR.sub(r"\\:", escaped)
    return _MENTION.sub("@" + ZERO_WIDTH_SPACE, escaped)


def _discord_spans(spans: tuple[Span, ...]) -> str:
    """The spans as Discord Markdown; what would open a block where the text begins (a list
    item's own text included: `- - x` nests a list) is escaped too."""
    body = "".join(
        f"\\[{span.footnote}\\]" if span.footnote is not None else discord_text(span.text)
        for span in spans
    )
    return _DISCORD_LINE_START.sub(
        lambda match: "\\" + match[1] if match[1] else f"{match[2]}\\{match[3]}", body, count=1
    )


def discord_units(markdown: str, link: str | None = None, label: str = READ_DIGEST) -> list[str]:
    """The Markdown as Discord Markdown: headings `#` to `###`, bullets, footnotes `[n] ...`."""
    units: list[str] = []
    for line in parse_markdown(markdown):
        if line.kind is LineKind.HEADING:
            body = _discord_spans(line.spans)
            rendered = f"{'#' * min(line.level, 3)} {body}" if body.strip() else ""
        elif line.kind is LineKind.BULLET:
            rendered = f"- {_discord_spans(line.spans)}"
        elif line.kind is LineKind.FOOTNOTE:
            rendered = f"\\[{line.number}\\] {_discord_spans(line.spans)}"
        elif line.kind is LineKind.CONTINUATION and units:
            units[-1] += f"\n  {_discord_spans(line.spans)}"
            continue
        else:
            rendered = _discord_spans(line.spans)
        units.append(rendered)
    if target := safe_link(link):
        target = target.replace("(", "%28").replace(")", "%29")
        units += ["", f"[{discord_text(label)}]({target})"]
    return units


# HTML -----------------------------------------------------------------------------------------


def _html_spans(spans: tuple[Span, ...]) -> str:
    return "".join(
        f'<sup><a href="#fn-{span.footnote}">[{span.footnote}]</a></sup>'
        if span.footnote is not None
        else html.escape(span.text)
        for span in spans
    )


def html_body(markdown: str, title: str, link: str | None = None, label: str = READ_DIGEST) -> str:
    """A whole HTML document for an e-mail: headings, lists, paragraphs and a footnote list
    whose entries the markers link to. Every text is escaped; the only tags are these."""
    parts = [
        '<!DOCTYPE html><html><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title></head><body>",
    ]
    open_list: str | None = None

    def close_list() -> None:
        nonlocal open_list
        if open_list:
            parts.append(f"</{open_list}>")
            open_list = None

    for line in parse_markdown(markdown):
        body = _html_spans(line.spans)
        if line.kind is LineKind.CONTINUATION and parts[-1].endswith(("</li>", "</p>")):
            tail = "</li>" if parts[-1].endswith("</li>") else "</p>"
            parts[-1] = parts[-1][: -len(tail)] + f"<br>{body}{tail}"
            continue
        wanted = {LineKind.BULLET: "ul", LineKind.FOOTNOTE: "ol"}.get(line.kind)
        if wanted != open_list:
            close_list()
            if wanted:
                parts.append(f"<{wanted}>")
                open_list = wanted
        if line.kind is LineKind.HEADING:
            level = min(line.level, 6)
            parts.append(f"<h{level}>{body}</h{level}>")
        elif line.kind is LineKind.BULLET:
            parts.append(f"<li>{body}</li>")
        elif line.kind is LineKind.FOOTNOTE:
            parts.append(f'<li id="fn-{line.number}" value="{line.number}">{body}</li>')
        elif line.kind is not LineKind.BLANK:
            parts.append(f"<p>{body}</p>")
    close_list()
    if target := safe_link(link):
        parts.append(f'<p><a href="{html.escape(target)}">{html.escape(label)}</a></p>')
    parts.append("</body></html>")
    return "\n".join(parts)
