"""The self-contained HTML export: untrusted text never becomes markup, footnote references
link to footnotes that quote the cited words and link back, and the page loads nothing."""

from __future__ import annotations

from runner.exports.html import render, safe_url
from tests.support.exports import HOSTILE, hostile_digest, parse_page

# Every element the renderer writes; anything else came out of a stored text.
WRITTEN_TAGS = {
    "html", "head", "meta", "title", "style", "body", "main", "h1", "h2", "dl", "dt", "dd",
    "section", "p", "ul", "ol", "li", "sup", "a", "span", "blockquote", "cite",
}  # fmt: skip


def test_hostile_text_stays_text_everywhere_it_is_shown() -> None:
    page = parse_page(render(hostile_digest()))
    assert {tag for tag, _ in page.tags} <= WRITTEN_TAGS
    assert page.named("script") == [] and page.named("img") == []
    # One h1 (the title) and the headings written here: `# heading` made none.
    assert len(page.named("h1")) == 1
    # Highlights, Decisions, Action items, Links, Sources (Topics is empty, so not shown).
    assert len(page.named("h2")) == 5
    assert not any(name.startswith("on") for _, attrs in page.tags for name in attrs)
    hrefs = [attrs["href"] for attrs in page.named("a")]
    assert all(h and (h.startswith("#") or h.startswith("https://")) for h in hrefs), hrefs
    assert not any("javascript" in (h or "") for h in hrefs)
    # The words are all there, as words: each place that holds HOSTILE shows it (the escape
    # character of the terminal sequence dropped).
    visible = HOSTILE.replace("\x1b", "")
    assert page.text.count(visible) >= 8
    assert "\x1b" not in render(hostile_digest())


def test_footnote_markers_only_come_from_citations() -> None:
    page = parse_page(render(hostile_digest()))
    references = [a for a in page.named("a") if (a.get("href") or "").startswith("#fn-")]
    # Overview cites 1 and 2, the highlight 1 and 2: four references; `[^1]` in the text
    # made none.
    assert [a["href"] for a in references] == ["#fn-1", "#fn-2", "#fn-1", "#fn-2"]
    assert [a["id"] for a in references] == ["ref-1-1", "ref-2-1", "ref-1-2", "ref-2-2"]
    footnotes = [attrs for attrs in page.named("li") if (attrs.get("id") or "").startswith("fn-")]
    assert [f["id"] for f in footnotes] == ["fn-1", "fn-2"]
    backs = [a["href"] for a in page.named("a") if "back" in (a.get("class") or "")]
    assert backs == ["#ref-1-1", "#ref-1-2", "#ref-2-1", "#ref-2-2"]


def test_footnotes_quote_the_cited_words_with_author_time_and_channel() -> None:
    html = render(hostile_digest())
    second = html[html.index('<li id="fn-2"') :]
    second = second[: second.index("</li>")]
    assert "<blockquote>the staging deploy passed</blockquote>" in second
    assert "bob · 2024-05-01 10:02 UTC · #ops · message m2" in second


def test_the_page_loads_nothing_and_forbids_loading() -> None:
    html = render(hostile_digest())
    page = parse_page(html)
    policy = [m for m in page.named("meta") if m.get("http-equiv") == "Content-Security-Policy"]
    assert policy and "default-src 'none'" in (policy[0]["content"] or "")
    assert not any(attrs.get("src") for _, attrs in page.tags)
    assert page.named("link") == [] and "url(" not in html and "@import" not in html


def test_only_plain_http_urls_become_links() -> None:
    assert safe_url("https://example.org/a?b=1") == "https://example.org/a?b=1"
    for bad in (
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "data:text/html,<script>",
        'https://example.org/"onmouseover="x',
        "http:///no-host",
        "https://exa mple.org",
        "//example.org",
        "https://example.org/\x00",
    ):
        assert safe_url(bad) is None, bad
