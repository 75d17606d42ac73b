"""HTML canonicalization against Readability's gold: the three extractors on a tiny page with
known token counts, the UTF-8 reading of the gold, and a run on the real pages (no fixed
figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.evaluation.html_canonical import (
    EXTRACTORS,
    evaluate_html,
    gold_text,
    naive_text,
    score_page,
)
from tests.support.paths import shared_data

# 43 tokens of article text; the page around it adds a title (2 tokens), navigation (2), a
# heading that the gold leaves out (2) and a footer (3), plus a script and a style.
ARTICLE = (
    "The harbour authority approved the new ferry timetable on Monday after a long public "
    "consultation. Residents asked for earlier crossings in winter, and the operator agreed to "
    "add two morning sailings. The changes start in March and will be reviewed after one year."
)
SOURCE = f"""<html><head><title>Ferry news</title><style>p {{ color: red }}</style>
<script>var tracking = 1;</script></head>
<body><nav><a href="/">Home</a><a href="/about">About</a></nav>
<article><h1>Ferry timetable</h1><p>{ARTICLE}</p></article>
<footer>Copyright Harbour Times</footer></body></html>""".encode()
EXPECTED = f"<div><p>{ARTICLE}</p></div>".encode()


def test_naive_keeps_all_rendered_words_and_drops_scripts() -> None:
    text = naive_text(SOURCE)
    assert "tracking" not in text and "color" not in text
    assert "Home" in text.split() and "About" in text.split()  # not glued into "HomeAbout"


def test_scores_on_a_tiny_page() -> None:
    scores = score_page(SOURCE, EXPECTED)
    assert set(scores) == set(EXTRACTORS)
    naive = scores["naive"]
    assert naive.recall == 1.0
    assert naive.precision == pytest.approx(43 / (43 + 9))
    assert naive.f1 == pytest.approx(2 * naive.precision / (naive.precision + 1))
    # digestd keeps the article and drops navigation and footer; the heading is its only extra.
    ours = scores["digestd"]
    assert ours.recall == 1.0
    assert ours.precision == pytest.approx(43 / 45)
    assert ours.f1 > naive.f1


def test_gold_is_read_as_utf8() -> None:
    # Without a charset declaration lxml would read these bytes as Latin-1 ("itâ€™s").
    assert gold_text("<p>it’s café</p>".encode()) == "it’s café"


def test_evaluate_html_on_a_tiny_data_dir(tmp_path: Path) -> None:
    page = tmp_path / "docs" / "html" / "readability" / "ferry"
    page.mkdir(parents=True)
    (page / "source.html").write_bytes(SOURCE)
    (page / "expected.html").write_bytes(EXPECTED)
    (page.parent / "incomplete").mkdir()  # no gold file: not a page
    section = evaluate_html(tmp_path)
    assert [row[0] for row in section.rows] == ["ferry", "mean"]
    assert all(len(row) == len(section.columns) for row in section.rows)
    assert section.rows[0][1] == 43
    assert section.rows[1][2:] == section.rows[0][2:]  # the mean of one page is that page


def test_real_pages_give_a_row_per_page_with_ratios() -> None:
    pages_dir = shared_data("docs/html/readability")
    data_dir = pages_dir.parents[2]
    pages = sorted(p.parent.name for p in pages_dir.glob("*/expected.html"))
    section = evaluate_html(data_dir)
    assert [row[0] for row in section.rows] == [*pages, "mean"]
    for row in section.rows:
        assert isinstance(row[1], int) and row[1] > 0
        assert all(isinstance(value, float) and 0.0 <= value <= 1.0 for value in row[2:])
