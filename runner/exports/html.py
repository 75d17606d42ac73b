"""An exported digest, report or catch-up as one self-contained HTML file: it loads nothing (inline CSS,
no script, no image, no font; a Content-Security-Policy of `default-src 'none'` says so to the
browser too), and reads offline from disk.

Built directly from the export's plain data (runner.exports.model) with `html.escape`, never by
converting Markdown: every stored text (titles, sentences, quotes, names, channel, URLs) is
untrusted and becomes text, so a message holding `<script>`, `# heading`, `[^1]` or
`](javascript:...)` shows those characters and nothing else. The only markup is written here.
A footnote reference is a link to its footnote (`#fn-N`); each footnote holds the cited words,
who said them, when and where, and links back to every place citing it (`#ref-N-K`). A URL is a
link only when it is plain http(s); anything else is shown as text.
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from datetime import UTC, datetime
from urllib.parse import urlsplit

from runner.exports.model import ExportDocument, Footnote, Item, ItemGroup, Section, Sentence

# C0 and C1 controls but tab and line feed, DEL, and lone surrogates: nothing a page may hold.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
# Self-contained: nothing may be fetched, whatever a renderer bug let through.
CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'"

STYLE = """
body { font: 16px/1.55 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d1d1f;
       background: #fff; margin: 0; }
main { max-width: 48rem; margin: 0 auto; padding: 2rem 1.25rem 4rem; }
h1 { font-size: 1.7rem; line-height: 1.25; margin: 0 0 .75rem; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 2rem 0 .5rem; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.02rem; margin: 1.25rem 0 .35rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem;
           margin: 0 0 1.5rem; color: #555; font-size: .9rem; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
p, li { overflow-wrap: anywhere; }
sup.ref a { text-decoration: none; padding: 0 .1em; }
.meta, .cites, .flags { color: #666; font-size: .88rem; }
.flags { color: #8a4b00; }
.detail { display: block; color: #444; font-size: .92rem; white-space: pre-wrap; }
section.footnotes ol { padding-left: 2rem; }
section.footnotes li { margin: 0 0 1rem; padding: .25rem .5rem; border-radius: 4px; }
section.footnotes li:target { background: #fff6d5; outline: 2px solid #e0b800; }
blockquote { margin: .25rem 0; padding: .25rem .75rem; border-left: 3px solid #bbb;
             white-space: pre-wrap; }
.locator { color: #666; font-size: .85rem; }
a.back { text-decoration: none; margin-left: .25rem; }
:target { scroll-margin-top: 1rem; }
""".strip()


def text(value: object) -> str:
    """Untrusted text as HTML text: controls dropped, `& < > " '` escaped."""
    return html.escape(_CONTROLS.sub("", str(value)), quote=True)


def safe_url(url: str | None) -> str | None:
    """`url` when it is a plain http(s) URL with a host and nothing a browser would clean up
    into something else (spaces, controls, quotes, angle brackets), else None."""
    if not url or _CONTROLS.search(url) or any(c.isspace() or c in "<>\"'`\\" for c in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return url if parts.scheme.lower() in {"http", "https"} and parts.hostname else None


def _link(url: str | None, label: str) -> str:
    """An anchor to `url` showing `label` (already HTML) when the URL is safe, else the label."""
    safe = safe_url(url)
    if safe is None:
        return label
    return f'<a href="{text(safe)}" rel="noopener noreferrer nofollow">{label}</a>'


def _when(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if moment else ""


class _References:
    """Ids of footnote references, in reading order: the K-th citation of footnote N is
    `ref-N-K`, so each footnote links back to every place citing it."""

    def __init__(self) -> None:
        self.seen: defaultdict[int, list[str]] = defaultdict(list)

    def marker(self, number: int) -> str:
        anchor = f"ref-{number}-{len(self.seen[number]) + 1}"
        self.seen[number].append(anchor)
        return (
            f'<sup class="ref"><a id="{anchor}" href="#fn-{number}" '
            f'aria-describedby="footnotes-heading">[{number}]</a></sup>'
        )


def _sentence(sentence: Sentence, references: _References) -> str:
    return text(sentence.text) + "".join(references.marker(n) for n in sentence.footnotes)


def _section(section: Section, references: _References) -> str:
    parts = ["<section>"]
    if section.heading:
        level = 3 if section.level == 3 else 2
        parts.append(f"<h{level}>{text(section.heading)}</h{level}>")
    marked = [_sentence(sentence, references) for sentence in section.sentences]
    if section.bullets:
        parts.append("<ul>" + "".join(f"<li>{m}</li>" for m in marked) + "</ul>")
    else:
        parts.append("<p>" + " ".join(marked) + "</p>")
    parts.append("</section>")
    return "\n".join(parts)


def _item(item: Item) -> str:
    label = f"[{text(item.label)}] " if item.label else ""
    body = label + _link(item.url, text(item.text))
    if item.owner:
        body += f' <span class="meta">— {text(item.owner)}</span>'
    if item.where:
        body += f' <span class="cites">({text(item.where)})</span>'
    if item.message_ids:
        shown = ", ".join(text(i) for i in item.message_ids[:4])
        more = " …" if len(item.message_ids) > 4 else ""
        body += f' <span class="cites">[msg {shown}{more}]</span>'
    if item.flags:
        body += f' <span class="flags">(flags: {", ".join(text(f) for f in item.flags)})</span>'
    if item.detail:
        body += f'<span class="detail">{text(item.detail)}</span>'
    return f"<li>{body}</li>"


def _group(group: ItemGroup) -> str:
    items = "".join(_item(item) for item in group.items)
    return f"<section>\n<h2>{text(group.heading)}</h2>\n<ul>{items}</ul>\n</section>"


def _source_line(note: Footnote) -> str:
    """Who, when and where: `ann · 2024-05-01 10:02 UTC · #ops · message 12`, or a document's
    title, author, publisher, date, URL and ids."""
    if note.kind == "message":
        parts = [
            text(note.author or ""),
            _when(note.at),
            f"#{text(note.channel)}" if note.channel else "",
            f"message {text(note.message_id or '')}",
        ]
    else:
        ids = ", ".join(text(i) for i in note.document_ids)
        noun = "document" if len(note.document_ids) == 1 else "documents"
        parts = [
            f"<cite>{text(note.title or '')}</cite>",
            text(note.author or ""),
            text(note.publisher or ""),
            text(note.published or ""),
            _link(note.url, text(note.url)) if note.url else "",
            f"{noun} {ids}" if ids else "",
        ]
    return " · ".join(part for part in parts if part)


def _footnote(note: Footnote, backlinks: list[str]) -> str:
    quotes = "".join(
        (f'<span class="locator">{text(quote.where)}</span>' if quote.where else "")
        + f"<blockquote>{text(quote.text)}</blockquote>"
        for quote in note.quotes
    )
    backs = "".join(
        f' <a class="back" href="#{anchor}" aria-label="back to citation {k}">↩{k if k > 1 else ""}</a>'
        for k, anchor in enumerate(backlinks, start=1)
    )
    return (
        f'<li id="fn-{note.number}" value="{note.number}">{quotes}'
        f'<p class="source">{_source_line(note)}{backs}</p></li>'
    )


def render(document: ExportDocument) -> str:
    """The whole HTML file of a digest, report or catch-up."""
    references = _References()
    body = [f"<h1>{text(document.title)}</h1>"]
    facts = "".join(f"<dt>{text(k)}</dt><dd>{text(v)}</dd>" for k, v in document.facts)
    body.append(f'<dl class="facts">{facts}</dl>')
    body += [_section(section, references) for section in document.sections]
    body += [_group(group) for group in document.item_groups if group.items]
    body += [f'<p class="meta">{text(note)}</p>' for note in document.notes]
    if document.footnotes:
        notes = "\n".join(
            _footnote(note, references.seen.get(note.number, []))
            for note in sorted(document.footnotes, key=lambda n: n.number)
        )
        body.append(
            '<section class="footnotes">\n<h2 id="footnotes-heading">Sources</h2>\n'
            f"<ol>\n{notes}\n</ol>\n</section>"
        )
    body.append(
        f'<p class="meta">digestd {text(document.kind)}{" " + text(document.id) if document.id else ""} · '
        f"{_when(document.created_at)} · {text(document.format)}</p>"
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">',
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{text(document.title)}</title>",
            f"<style>\n{STYLE}\n</style>",
            "</head>",
            "<body>",
            "<main>",
            *body,
            "</main>",
            "</body>",
            "</html>",
            "",
        ]
    )
