"""A digest page's layout in Debian's Chromium (Playwright) against the real app, database and
worker, every non-loopback request aborted: a table of contents names every section and takes
the reader to it (opened, focused); each section folds on its heading; a footnote's cited
context opens right under the sentence whose marker was activated (and under the footnote when
opened from the footnote list), not at the end of the overview."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest
from playwright.async_api import expect

from server.settings import Settings
from tests.support.api import gql
from tests.support.browser import Watched
from tests.support.console import DIGEST_SECTIONS, console_app, digested_sample

pytestmark = pytest.mark.browser

SCREENSHOT = Path("/tmp/digestd-console-digest-layout.png")
PERIODS_SCREENSHOT = Path("/tmp/digestd-console-digest-periods.png")
DIGEST = """query($id: ID!) { digest(id: $id) { title
  topics { title } decisions { text } knowledgeItems { title } rejections { reason }
  periods { label overview { text citations { footnote } } }
  overviewSentences { text citations { footnote } }
  highlightSentences { text citations { footnote } } } }"""
UNDER_SENTENCE = """panel => {
  const sentence = panel.previousElementSibling;
  return sentence && sentence.classList.contains('cited-sentence')
    ? sentence.querySelector('.sentence').textContent : null;
}"""


async def test_contents_folding_sections_and_context_under_the_sentence(
    db: asyncpg.Pool, settings: Settings, watched: Watched
) -> None:
    async with console_app(settings) as (base_url, http):
        channel_id, digest_id = await digested_sample(http, settings)
        digest = (await gql(http, DIGEST, {"id": digest_id}))["digest"]
        overview = digest["overviewSentences"]
        assert len(overview) >= 2 and digest["highlightSentences"], digest
        page = watched.page
        await page.goto(f"{base_url}/#/digest/{digest_id}")
        await expect(page.get_by_role("heading", level=1, name=digest["title"])).to_be_focused()

        # The contents: one link per section, in order, each with its heading's words.
        contents = page.get_by_role("navigation", name="Contents")
        links = contents.get_by_role("link")
        # The sample spans two days: told day by day after the overview.
        periods = digest["periods"]
        assert [p["label"] for p in periods] == ["2025-03-10", "2025-03-11"], periods
        sections = [DIGEST_SECTIONS[0], "By day", *DIGEST_SECTIONS[1:]]
        await expect(links).to_have_count(len(sections))
        names = await links.all_text_contents()
        assert [name.split(" (")[0] for name in names] == sections
        assert names[1] == f"By day ({len(periods)})"
        assert names[2] == f"Topics ({len(digest['topics'])})"

        # Sections with entries start open, empty ones closed; a heading folds its section.
        rejections = page.locator("section.rejections > details")
        assert not digest["rejections"]
        await expect(rejections).not_to_have_attribute("open", "")
        decisions = page.locator("section.decisions > details")
        await expect(decisions).to_have_attribute("open", "")
        first_decision = page.locator("li.decision").first
        await expect(first_decision).to_be_visible()
        await decisions.locator("summary").click()
        await expect(first_decision).to_be_hidden()
        # Following the contents opens the section again and moves focus to its heading.
        await contents.get_by_role("link", name="Decisions").click()
        await expect(first_decision).to_be_visible()
        await expect(decisions.locator("summary")).to_be_focused()
        # The page stays where it is: the route is unchanged.
        assert page.url.endswith(f"#/digest/{digest_id}")
        # From the keyboard: Enter on a focused summary folds it.
        await page.keyboard.press("Enter")
        await expect(first_decision).to_be_hidden()
        await page.keyboard.press("Enter")
        await expect(first_decision).to_be_visible()

        # A footnote marker of the second overview sentence: the context opens right under that
        # sentence, before the sentence that follows it.
        sentences = page.locator("section.overview .overview-text > .cited-sentence")
        second = sentences.nth(1)
        await second.locator("button.footnote-ref").first.click()
        context = page.locator("section.citation-context")
        await expect(context.locator("mark.pointer")).to_be_focused()
        assert await context.evaluate(UNDER_SENTENCE) == overview[1]["text"]
        sentence_box = await second.bounding_box()
        context_box = await context.bounding_box()
        third_box = await sentences.nth(2).bounding_box() if len(overview) > 2 else None
        assert sentence_box and context_box
        assert 0 <= context_box["y"] - (sentence_box["y"] + sentence_box["height"]) < 40
        if third_box:
            assert third_box["y"] > context_box["y"] + context_box["height"] - 1
        await page.screenshot(path=SCREENSHOT)
        print(f"console digest layout screenshot: {SCREENSHOT}")
        assert SCREENSHOT.stat().st_size > 30_000

        # A highlight's marker: under that highlight, inside its list item.
        highlight = page.locator("ul.highlights > li").first
        await highlight.locator("button.footnote-ref").first.click()
        await expect(highlight.locator("section.citation-context mark.pointer")).to_be_focused()
        assert await context.evaluate(UNDER_SENTENCE) == digest["highlightSentences"][0]["text"]
        # "Back to the sentence" returns focus to the marker that opened it.
        await context.get_by_role("button", name="Back to the sentence").click()
        await expect(highlight.locator("button.footnote-ref").first).to_be_focused()
        # From the footnote list: under that footnote.
        note = page.locator("ol.footnotes > li").first
        await note.get_by_role("button", name="Show footnote 1 in context").click()
        await expect(note.locator("section.citation-context")).to_be_visible()
        await expect(page.locator("section.citation-context")).to_have_count(1)

        # A period's sentence: its label and counts, and its marker opens the one context region
        # right under it, with the footnote number the API gave it.
        day = next(p for p in periods if p["overview"])
        period = page.locator("ol.periods > li.period").filter(has_text=day["label"])
        await expect(period.locator("h3")).to_have_text(day["label"])
        told = period.locator(".cited-sentence").first
        await expect(told.locator(".sentence")).to_have_text(day["overview"][0]["text"])
        await told.locator("button.footnote-ref").first.click()
        await expect(period.locator("section.citation-context mark.pointer")).to_be_focused()
        number = day["overview"][0]["citations"][0]["footnote"]
        await expect(context).to_have_attribute("data-footnote", str(number))
        assert await context.evaluate(UNDER_SENTENCE) == day["overview"][0]["text"]
        await expect(page.locator("section.citation-context")).to_have_count(1)
        await page.locator("section.periods").screenshot(path=PERIODS_SCREENSHOT)
        print(f"console digest periods screenshot: {PERIODS_SCREENSHOT}")
    watched.assert_clean()
