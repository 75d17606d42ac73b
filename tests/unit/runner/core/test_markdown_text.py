"""The Markdown escaper (runner/core/markdown_text.py): any text, escaped, renders in a real
CommonMark renderer (footnotes, raw HTML, tables, strikethrough on) as one paragraph of exactly
its words, with no markup; the texts that used to get through render as written."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from runner.core.markdown_text import escape_inline, single_line
from runner.grounding.footnotes import FootnotedSentence, Section, Source, footnoted_markdown
from tests.support.database import BASE_TIME
from tests.support.markdown import render, renderer

# Text rich in what Markdown reacts to, so the generator meets it often, plus any character.
MARKDOWN_ALPHABET = st.sampled_from(list("\\[]^()!<>&*_~`|#-+=.:1 \n\t\r\x00\x1b\u2028abc;/"))
ANY_TEXT = st.text(st.one_of(MARKDOWN_ALPHABET, st.characters()), max_size=80)


def words(text: str) -> str:
    """What the renderer must show: the text with whitespace collapsed (control characters,
    which no reader sees, read as spaces)."""
    return single_line(text)


@settings(max_examples=600, deadline=None)
@given(ANY_TEXT)
@example("\\[^1]")
@example("x\n\n[^1]: FORGED")
@example("ops\n\nThe security team approved disabling TLS on prod.[^1]\n\n## In #ops")
@example("<script>alert(1)</script>")
@example("[click](javascript:alert(1))")
@example("&lt;b&gt; &amp; &#65;")
@example("1. one")
@example("2) two")
@example("    code")
@example("---")
@example("| a | b |")
@example("a\\")
@example("![^1]")
@example("pg_upgrade and requests_per_minute")
@example("_a_ __b__ a_b_ _a_b a__b__c")
@example("x_\u0301y_ \u00e9_b_")
def test_escaped_text_renders_as_one_paragraph_of_exactly_its_words(text: str) -> None:
    tokens = renderer().parse(escape_inline(text))
    if not words(text):
        assert tokens == []
        return
    assert [token.type for token in tokens] == [
        "paragraph_open",
        "inline",
        "paragraph_close",
    ]
    children = tokens[1].children or []
    assert {child.type for child in children} == {"text"}, [c.type for c in children]
    assert "".join(child.content for child in children) == words(text)


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        (
            "\\[^1]",
            "\\\\\\[^1\\]",
        ),  # the backslash already there no longer escapes the bracket
        ("x\n\n[^1]: FORGED", "x \\[^1\\]: FORGED"),
        ("<img src=x onerror=alert(1)>", "\\<img src=x onerror=alert(1)\\>"),
        ("# In #ops", "\\# In #ops"),
        ("10. ten", "10\\. ten"),
        ("plain words, 2024-05-01.", "plain words, 2024-05-01."),  # nothing to escape
    ],
)
def test_the_escaped_source_of_known_attacks(text: str, escaped: str) -> None:
    assert escape_inline(text) == escaped


def test_a_heading_and_a_footnote_of_forged_text_hold_their_places() -> None:
    """Heading, sentence, author and quote all forged: one heading, one paragraph, one marker,
    one definition, and each reads as written."""
    forged = "x\n\n[^1]: FORGED\n\n## In #ops"
    source = Source("m1", forged, BASE_TIME, "\\[^2] <svg onload=alert(1)>")
    markdown = footnoted_markdown([Section(forged, (FootnotedSentence(forged, (source,)),))])
    rendered = render(markdown)
    assert rendered.headings == [words(forged)]
    assert rendered.paragraphs == [words(forged)]
    assert rendered.footnote_refs == ["1"] and [n for n, _ in rendered.definitions] == ["1"]
    assert rendered.definitions[0][1] == (
        f'{words(forged)}, 2024-05-01 09:00 UTC, "\\[^2] <svg onload=alert(1)>" (message m1)'
    )
    assert rendered.markup == []
