"""The console's report page in Debian's Chromium (Playwright) against the real app, database and
worker, every non-loopback request aborted: a report across a channel and a text document is
reached from its job page, shows its sections as sentences with the API's footnote numbers
(contiguous, S1..Sn), the source list and the audit; a footnote marker, clicked or activated from
the keyboard, shows a message source among its neighbours and a document source in its canonical
text, each with exactly the cited characters marked, by position (revision text[charStart:charEnd],
canonicalText[S:E] of the `char:S-E` locator)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import asyncpg
import pytest
from playwright.async_api import Locator, Page, expect

from server.settings import Settings
from tests.support.api import gql, sample_messages
from tests.support.browser import Watched
from tests.support.console import (
    DOCUMENT_TEXT,
    EMOJI_MESSAGES,
    INGEST,
    console_app,
    make_report,
    messages_by_id,
    tab_to,
)

pytestmark = pytest.mark.browser

SCREENSHOT = Path("/tmp/digestd-console-report.png")


def sentence_numbers(report: dict[str, Any]) -> list[list[int]]:
    return [
        list(dict.fromkeys(c["footnote"] for c in sentence["citations"]))
        for section in report["sections"]
        for sentence in section["sentences"]
    ]


async def shown_numbers(sentences: Locator) -> list[list[int]]:
    return [
        [
            int(n)
            for n in await s.locator("button.footnote-ref").evaluate_all(
                "bs => bs.map(b => b.textContent)"
            )
        ]
        for s in await sentences.all()
    ]


async def assert_marked_exactly(
    page: Page, source: dict[str, Any], text: str, start: int, end: int
) -> None:
    """The context shows one <mark> holding exactly text[start:end] (= the quote), at that
    position of the shown text, and the mark has focus."""
    context = page.locator("section.citation-context")
    await expect(context).to_have_attribute("data-footnote", str(source["footnote"]))
    mark = context.locator(".cited mark.pointer")
    await expect(mark).to_have_count(1)
    await expect(mark).to_be_focused()
    assert text[start:end] == source["quote"]
    assert await mark.text_content() == source["quote"]
    before, after = await mark.evaluate(
        "m => [m.previousSibling.textContent, m.nextSibling.textContent]"
    )
    assert text[:start].endswith(before.removeprefix("…")) and text[end:].startswith(
        after.removesuffix("…")
    )


async def test_a_report_page_marks_exactly_the_cited_characters_of_messages_and_documents(
    db: asyncpg.Pool, settings: Settings, watched: Watched
) -> None:
    async with console_app(settings) as (base_url, http):
        done = await make_report(http, settings)
        report = done["report"]
        sources = report["sources"]
        kinds = {s["kind"] for s in sources}
        assert kinds == {"message", "document"}, sources
        message_source = next(s for s in sources if s["kind"] == "message")
        document_source = next(s for s in sources if s["kind"] == "document")
        texts = await messages_by_id(http, done["channel_id"], None)
        message = texts[message_source["externalId"]]
        assert message["revision"] == message_source["revision"]
        assert message["normalizedText"] == message_source["revisionText"]
        # The cited message is edited after the report: the page must mark the cited revision.
        record = next(
            m for m in sample_messages() + EMOJI_MESSAGES if m["id"] == message_source["externalId"]
        )
        ingest = {
            "c": {"name": "team-platform", "server": "acme"},
            "m": [{**record, "text": "(edited) " + record["text"]}],
        }
        assert (await gql(http, INGEST, ingest))["ingestMessages"]["accepted"] == 1

        page = watched.page
        # Reached from its job page.
        await page.goto(f"{base_url}/#/job/{done['job_id']}")
        await page.get_by_role("link", name="Open the report").click()
        await expect(page.get_by_role("heading", level=1, name=report["title"])).to_be_focused()
        assert page.url.endswith(f"#/reports/{quote(report['id'], safe='')}")

        # Sentences with the API's numbers; numbering contiguous S1..Sn by first appearance.
        shown = page.locator("main .cited-sentence")
        sentences = [s for section in report["sections"] for s in section["sentences"]]
        await expect(shown).to_have_count(len(sentences))
        assert await shown.locator(".sentence").all_text_contents() == [
            s["text"] for s in sentences
        ]
        assert await shown_numbers(shown) == sentence_numbers(report)
        in_order = list(dict.fromkeys(n for ns in sentence_numbers(report) for n in ns))
        assert in_order == list(range(1, len(sources) + 1)) == [s["footnote"] for s in sources]
        assert [s["id"] for s in sources] == [f"S{n}" for n in in_order]
        notes = page.locator("ol.footnotes > li")
        assert [int(n) for n in await notes.evaluate_all("ls => ls.map(l => l.value)")] == in_order
        for source, note in zip(sources, await notes.all(), strict=True):
            await expect(note.locator(".footnote-source")).to_contain_text(f"{source['id']} · ")
            await expect(note.locator(".footnote-source")).to_contain_text(f"“{source['quote']}”")
        audit = report["audit"]
        await expect(page.locator(".audit-sentences")).to_have_text(
            f"{audit['kept']} kept of {audit['proposed']} proposed, {audit['dropped']} dropped, {audit['reAsked']} re-asked"
        )
        await expect(page.locator(".audit-sources")).to_have_text(str(audit["sources"]))

        # Click a message footnote: the message among its neighbours, its revision's characters marked.
        await page.locator(
            f'button.footnote-ref[data-footnote="{message_source["footnote"]}"]'
        ).first.click()
        await assert_marked_exactly(
            page,
            message_source,
            message["normalizedText"],
            message_source["charStart"],
            message_source["charEnd"],
        )
        context = page.locator("section.citation-context")
        assert await context.locator("article.message").count() >= 2
        await expect(
            context.locator(f'article.cited[data-message-id="{message_source["externalId"]}"]')
        ).to_have_count(1)
        await expect(context).to_contain_text(f"Quoted from revision {message_source['revision']}")

        # Click a document footnote: the canonical text around canonicalText[S:E] of its locator.
        kind, span = document_source["locator"].split(":", 1)
        assert kind == "char", document_source["locator"]
        start, end = (int(n) for n in span.split("-"))
        await page.locator(
            f'button.footnote-ref[data-footnote="{document_source["footnote"]}"]'
        ).first.click()
        await assert_marked_exactly(page, document_source, DOCUMENT_TEXT, start, end)
        await expect(context.locator("mark.pointer")).to_have_attribute(
            "data-char-start", str(start)
        )
        await page.screenshot(path=SCREENSHOT)
        print(f"console report screenshot: {SCREENSHOT}")

        # Keyboard: the source list's button for the message, Enter; "Back to the sentence"
        # returns focus to it; Space on a marker opens the document source again.
        listed = notes.nth(message_source["footnote"] - 1).get_by_role(
            "button", name=f"Show footnote {message_source['footnote']} in context"
        )
        await listed.focus()
        await page.keyboard.press("Enter")
        await assert_marked_exactly(
            page,
            message_source,
            message["normalizedText"],
            message_source["charStart"],
            message_source["charEnd"],
        )
        back = context.get_by_role("button", name="Back to the sentence")
        await tab_to(page, back)
        await page.keyboard.press("Enter")
        await expect(listed).to_be_focused()
        marker = page.locator(
            f'button.footnote-ref[data-footnote="{document_source["footnote"]}"]'
        ).first
        await marker.focus()
        await page.keyboard.press(" ")
        await assert_marked_exactly(page, document_source, DOCUMENT_TEXT, start, end)

        # By URL; an unknown id says so.
        await page.goto(f"{base_url}/#/reports/{report['id']}")
        await expect(page.get_by_role("heading", level=1, name=report["title"])).to_be_focused()
        await expect(page.locator("main img, main b")).to_have_count(0)
    watched.assert_clean()
