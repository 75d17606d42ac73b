"""The digest's Markdown as Slack mrkdwn, Discord Markdown and e-mail HTML: every heading, item and
footnote kept, in order; what a chat message says shows as its words and never becomes a
mention, a link or markup in any of them."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html.parser import HTMLParser

from runner.core.markdown_text import escape_inline as md
from runner.delivery.markup import (
    ZERO_WIDTH_SPACE,
    LineKind,
    Span,
    discord_units,
    html_body,
    parse_line,
    safe_link,
    slack_units,
)
from runner.grounding.footnotes import FootnotedSentence, Section, Source, footnoted_markdown

HOSTILE = (
    "@everyone @here <@123456789012345678> <@&98765432109876543> <!channel> <#C123|general> "
    "[click](https://evil.example/x) <https://evil.example|ok> *bold* **strong** _it_ `code` "
    "~gone~ ||spoiler|| > quote # heading a&b &amp; pg_upgrade https://bare.example/path"
)


def hostile_digest() -> str:
    """A digest shaped as runner.exports.markdown writes it, every stored text hostile."""
    at = datetime(2024, 5, 1, 10, 2, tzinfo=UTC)
    cited = Source("m1", "@everyone", at, HOSTILE)
    other = Source("m2", "<@123456789012345678>", at, "- [^9]: not a footnote")
    prose = footnoted_markdown(
        [
            Section(None, (FootnotedSentence(HOSTILE, (cited,)),)),
            Section(
                "Highlights",
                (FootnotedSentence("# not a heading", (cited, other)),),
                bullets=True,
            ),
        ]
    )
    return "\n".join(
        [
            f"# {md('Release *party* @here')}",
            "digest 7 · 2 messages · signal high (clear) · extractor offline",
            "",
            prose,
            "",
            "## Action items",
            f"- {md('> ship it')} — owner: {md('@everyone')}  [msg m1]",
            f"- knowledge: {md('[x](javascript:alert(1))')} (msg m2 0:5)\n    {md('1. body')}",
        ]
    )


def test_lines_read_as_block_kinds_and_escapes_as_their_characters() -> None:
    assert parse_line("## Highlights").kind is LineKind.HEADING
    assert parse_line("[^3]: ann, said") == parse_line("[^3]: ann, said")
    assert parse_line("[^3]: ann").number == 3
    line = parse_line(f"- {md('*x* [^1]')}[^2]")
    assert line.kind is LineKind.BULLET
    # The escaped `[^1]` is text, the unescaped `[^2]` a marker.
    assert line.spans == (Span("*x* [^1]"), Span(footnote=2))
    assert parse_line("    body").kind is LineKind.CONTINUATION
    assert parse_line(md("# title")).kind is LineKind.PARAGRAPH


def test_slack_shows_every_line_as_text_with_only_our_bold_and_footnotes() -> None:
    units = slack_units(hostile_digest())
    text = "\n".join(units)
    # Slack's control characters only ever come escaped: no link, mention or <!here>.
    assert "<" not in text and ">" not in text
    assert "&lt;@123456789012345678&gt;" in text and "&lt;!channel&gt;" in text
    assert "a&amp;b &amp;amp;" in text
    # Formatting characters from messages are look-alikes; ours are the heading's asterisks.
    bold = [unit for unit in units if unit.startswith("*")]
    assert bold == ["*Release ∗party∗ @here*", "*Highlights*", "*Action items*"]
    assert all("*" not in unit for unit in units if unit not in bold)
    assert "`" not in text and "~" not in text and "pg_upgrade" in text
    assert not re.search(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])", text)
    # Footnote markers and definitions as numbered lines, in order.
    assert any(unit.startswith("@everyone @here &lt;@") and unit.endswith("[1]") for unit in units)
    assert "• # not a heading[1][2]" in units
    footnotes = [unit for unit in units if re.match(r"\[\d\] ", unit)]
    assert [f[:3] for f in footnotes] == ["[1]", "[2]"]
    assert "- [^9]: not a footnote" in footnotes[1]


def _unescaped(text: str, characters: str) -> list[str]:
    """Markup characters of `text` that no backslash escapes (our own line starts excepted)."""
    found = []
    for match in re.finditer(f"[{re.escape(characters)}]", text):
        backslashes = len(text[: match.start()]) - len(text[: match.start()].rstrip("\\"))
        if backslashes % 2 == 0:
            found.append(text[max(0, match.start() - 10) : match.end() + 10])
    return found


def test_discord_escapes_every_markup_character_and_pings_nobody() -> None:
    units = discord_units(hostile_digest())
    bodies = [re.sub(r"^(#{1,3} |- |  )", "", line) for u in units for line in u.split("\n")]
    for body in bodies:
        assert _unescaped(body, "*_~`|[]<>()#") == [], body
    text = "\n".join(units)
    assert "@everyone" not in text and "@here" not in text
    assert f"@{ZERO_WIDTH_SPACE}everyone" in text
    assert f"\\<@{ZERO_WIDTH_SPACE}123456789012345678\\>" in text
    assert f"\\<@{ZERO_WIDTH_SPACE}&98765432109876543\\>" in text
    # No bare URL is linked: the scheme's `:` is escaped.
    assert "https://" not in text and "https\\://bare.example/path" in text
    headings = [unit for unit in units if unit.startswith("#")]
    assert headings == [
        f"# Release \\*party\\* @{ZERO_WIDTH_SPACE}here",
        "## Highlights",
        "## Action items",
    ]
    # A message that starts like a list or quote does not open one inside our bullet.
    assert "- \\> ship it" in text and "\n  1\\. body" in text


def test_html_has_only_our_tags_and_every_text_escaped() -> None:
    class Tags(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tags: set[str] = set()
            self.hrefs: list[str] = []
            self.text: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.tags.add(tag)
            self.hrefs += [value or "" for name, value in attrs if name == "href"]

        def handle_data(self, data: str) -> None:
            self.text.append(data)

    parser = Tags()
    parser.feed(html_body(hostile_digest(), "<b>title</b>", "https://digestd.example/d/7"))
    assert parser.tags <= {"html", "head", "meta", "title", "body", "h1", "h2", "p", "ul", "ol"} | {
        "li",
        "sup",
        "a",
        "br",
    }
    assert parser.hrefs == ["#fn-1", "#fn-1", "#fn-2", "https://digestd.example/d/7"]
    visible = "".join(parser.text)
    assert HOSTILE in visible and "<b>title</b>" in visible


def test_only_http_links_of_ours_are_made() -> None:
    assert safe_link("javascript:alert(1)") is None
    assert safe_link("https://x.example/a b|c>") == "https://x.example/a%20b%7Cc%3E"
    assert slack_units("# t", "https://x.example/d")[-1] == (
        "<https://x.example/d|Read the full digest>"
    )
    assert discord_units("# t", "https://x.example/(d)")[-1] == (
        "[Read the full digest](https://x.example/%28d%29)"
    )
