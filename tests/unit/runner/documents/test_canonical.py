"""Canonical text rules: idempotent, paragraph breaks kept as exactly `\\n\\n`, PDF page markers
unambiguous and page spans recomputable from the text alone."""

from __future__ import annotations

import hashlib
import re

from hypothesis import given
from hypothesis import strategies as st

from runner.documents.canonical import (
    canonicalize,
    join_pages,
    page_spans_from_text,
    source_text_hash,
)
from runner.documents.ingest import ingest_text

_texty = st.text(
    alphabet=st.sampled_from(list("ab cé\u0301\t\n\r\u00a0\u2028\u2029\u00ad\u200b-.PAGE0123")),
    max_size=80,
)


def test_rules_on_a_messy_text() -> None:
    messy = (
        "  Caf\u0065\u0301\t  au\u00a0lait \r\n line two\n\n\n"
        "  para\u00adgraph  \u200b two \n \n three "
    )
    assert canonicalize(messy) == "Café au lait line two\n\nparagraph two\n\nthree"


def test_entities_are_not_decoded_in_plain_text() -> None:
    # The HTML parser decodes entities once; plain text about HTML must keep them as written.
    assert canonicalize("write &amp; to get &") == "write &amp; to get &"


@given(_texty)
def test_canonicalize_is_idempotent(text: str) -> None:
    once = canonicalize(text)
    assert canonicalize(once) == once
    assert "\t" not in once and "  " not in once and "\n\n\n" not in once
    assert not re.search(r"(?<!\n)\n(?!\n)", once)  # newlines only in pairs


@given(st.lists(_texty, min_size=1, max_size=6))
def test_page_spans_are_exact_and_recomputable(pages: list[str]) -> None:
    text, spans = join_pages(pages)
    assert canonicalize(text) == text
    assert page_spans_from_text(text) == spans
    for number, (start, end) in enumerate(spans, start=1):
        page = canonicalize(pages[number - 1]) if pages[number - 1] else ""
        # A page's span holds exactly its canonical text; a paragraph that looks like a
        # marker is defused ("--- PAGE n---") so it can never be taken for a page break.
        expected = "\n\n".join(
            "--- PAGE" + p[len("---PAGE") :] if re.fullmatch(r"---PAGE [1-9][0-9]*---", p) else p
            for p in page.split("\n\n")
        )
        assert text[start:end] == expected


def test_pages_are_joined_with_marker_paragraphs() -> None:
    text, spans = join_pages(["first page", "second page", "", "fourth"])
    assert text == (
        "first page\n\n---PAGE 2---\n\nsecond page\n\n---PAGE 3---\n\n---PAGE 4---\n\nfourth"
    )
    assert [text[s:e] for s, e in spans] == ["first page", "second page", "", "fourth"]


def test_marker_lookalike_in_page_text_is_defused() -> None:
    text, spans = join_pages(["intro\n\n---PAGE 2---\n\nfake", "real second"])
    assert text.count("---PAGE 2---") == 1
    assert text[spans[1][0] : spans[1][1]] == "real second"
    assert page_spans_from_text(text) == spans


def test_source_text_hash_is_sha256_of_utf8() -> None:
    document = ingest_text("Grüße\r\n\r\naus Köln")
    digest = hashlib.sha256(document.canonical_text.encode("utf-8")).hexdigest()
    assert document.source_text_hash == f"sha256:{digest}"
    assert source_text_hash(document.canonical_text) == document.source_text_hash
