"""The console's cited overview in Debian's Chromium (Playwright) against the real app, database
and worker, every non-loopback request aborted: the overview and highlights show as sentences
with the API's footnote numbers (contiguous, each source once), a footnote list and the citation
audit; a footnote marker, clicked or activated from the keyboard, shows the cited message among
its neighbours with exactly revisionText[charStart:charEnd] of that citation marked (by
position, in the cited revision even after the message was edited)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from playwright.async_api import Locator, Page, expect

from runner.grounding.citations import sentence_spans
from runner.grounding.normalize import normalize_text
from server.settings import Settings
from tests.support.api import gql, sample_messages
from tests.support.browser import Watched
from tests.support.console import (
    INGEST,
    console_app,
    messages_by_id,
    run_queued_jobs,
    seed_channel,
    tab_to,
    trigger_digest,
)
from tests.support.database import row_id

pytestmark = pytest.mark.browser

PROSE = """query($id: ID!) { digest(id: $id) { title
  overviewSentences { text citations { messageId quote charStart charEnd revision footnote } }
  highlightSentences { text citations { messageId quote charStart charEnd revision footnote } }
  citationAudit { sentencesKept sentencesDropped overviewCitedShare fields { field proposed kept } } } }"""

SCREENSHOT = Path("/tmp/digestd-console-citations.png")


def numbers_per_sentence(sentences: list[dict[str, Any]]) -> list[list[int]]:
    """The markers a sentence shows: its footnote numbers, each once, in citation order."""
    return [list(dict.fromkeys(c["footnote"] for c in s["citations"])) for s in sentences]


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


async def assert_marked_exactly(page: Page, citation: dict[str, Any], revision_text: str) -> None:
    """The context shows the cited message with one <mark> holding exactly
    revisionText[charStart:charEnd], placed at that position, and the mark has focus."""
    context = page.locator("section.citation-context")
    await expect(context).to_be_visible()
    await expect(context).to_have_attribute("data-footnote", str(citation["footnote"]))
    cited = context.locator(f'article.cited[data-message-id="{citation["messageId"]}"]')
    mark = cited.locator("mark.pointer")
    await expect(mark).to_have_count(1)
    await expect(mark).to_be_focused()
    start, end = citation["charStart"], citation["charEnd"]
    assert revision_text[start:end] == citation["quote"]
    assert await mark.text_content() == citation["quote"]
    around = await mark.evaluate(
        "m => [m.previousSibling.textContent, m.nextSibling.textContent, m.parentElement.childNodes.length]"
    )
    assert around == [revision_text[:start], revision_text[end:], 3]
    # Its neighbours in the conversation are shown around it.
    assert await context.locator("article.message").count() >= 2


async def cite_a_message_again(db: asyncpg.Pool, digest_id: int) -> None:
    """Add a highlight that cites a message the overview already cites, by another of its
    sentences: a source cited twice with different words, which the console must show with
    each sentence's own span (the offline digest of the sample need not contain one)."""
    async with db.acquire() as connection:
        row = await connection.fetchrow(
            "SELECT overview_sentences, highlight_sentences FROM digests WHERE id = $1", digest_id
        )
        assert row is not None
        texts = {m["id"]: normalize_text(m["text"]) for m in sample_messages()}
        stored = row["overview_sentences"]  # the pool decodes jsonb
        for sentence in stored if isinstance(stored, list) else json.loads(stored):
            for citation in sentence["citations"]:
                text = texts[citation["external_id"]]
                others = [
                    (a, b)
                    for a, b in sentence_spans(text)
                    if (a, b) != (citation["char_start"], citation["char_end"])
                ]
                if others:
                    start, end = others[-1]
                    again = {**citation, "char_start": start, "char_end": end}
                    added = [{"sentence": text[start:end], "citations": [again]}]
                    await connection.execute(
                        "UPDATE digests SET highlight_sentences = highlight_sentences || $2::jsonb "
                        "WHERE id = $1",
                        digest_id,
                        added,
                    )
                    return
    raise AssertionError("no overview citation of a message with two sentences")


async def test_footnotes_show_each_cited_message_with_exactly_the_cited_characters_marked(
    db: asyncpg.Pool, settings: Settings, watched: Watched
) -> None:
    async with console_app(settings) as (base_url, http):
        channel_id, _ = await seed_channel(http, None)
        job_id = await trigger_digest(http, channel_id, None)
        await run_queued_jobs(settings)
        job = (
            await gql(http, "query($id: ID!) { job(id: $id) { status digestId } }", {"id": job_id})
        )["job"]
        assert job["status"] == "SUCCEEDED", job
        await cite_a_message_again(db, row_id(job["digestId"]))
        digest = (await gql(http, PROSE, {"id": job["digestId"]}))["digest"]
        overview, highlights = digest["overviewSentences"], digest["highlightSentences"]
        citations = [c for s in overview + highlights for c in s["citations"]]
        first_quote: dict[int, str] = {}
        for citation in citations:
            first_quote.setdefault(citation["footnote"], citation["quote"])
        # The test needs a source cited twice with different words (the marker shows the
        # sentence's own span, the footnote list the first) and one cited past its start.
        again = next(c for c in citations if c["quote"] != first_quote[c["footnote"]])
        inside = next(
            c
            for c in reversed(citations)
            if c["charStart"] > 0 and c["messageId"] != again["messageId"]
        )
        before_edit = await messages_by_id(http, channel_id, None)
        cited_text = before_edit[inside["messageId"]]["normalizedText"]
        assert before_edit[inside["messageId"]]["revision"] == inside["revision"]
        again_text = before_edit[again["messageId"]]["normalizedText"]

        # The message `inside` cites is edited after the digest: the console must mark the
        # cited revision (Citation.revisionText), not the current text.
        record = next(m for m in sample_messages() if m["id"] == inside["messageId"])
        ingest = {
            "c": {"name": "team-platform", "server": "acme"},
            "m": [{**record, "text": "(edited) " + record["text"]}],
        }
        assert (await gql(http, INGEST, ingest))["ingestMessages"]["accepted"] == 1
        after_edit = await messages_by_id(http, channel_id, None)
        assert after_edit[inside["messageId"]]["revision"] == inside["revision"] + 1
        assert after_edit[again["messageId"]]["revision"] == again["revision"]

        page = watched.page
        await page.goto(f"{base_url}/#/digest/{job['digestId']}")
        await expect(page.get_by_role("heading", level=1, name=digest["title"])).to_be_focused()
        section = page.locator("section.overview")

        # Sentences with the API's numbers, in order; numbering contiguous by first appearance.
        shown = section.locator(".cited-sentence")
        await expect(shown).to_have_count(len(overview) + len(highlights))
        assert await shown.locator(".sentence").all_text_contents() == [
            s["text"] for s in overview + highlights
        ]
        await expect(section.locator(".overview-text .cited-sentence")).to_have_count(len(overview))
        await expect(section.locator("ul.highlights > li .cited-sentence")).to_have_count(
            len(highlights)
        )
        assert await shown_numbers(shown) == numbers_per_sentence(overview + highlights)
        in_order = list(
            dict.fromkeys(n for ns in numbers_per_sentence(overview + highlights) for n in ns)
        )
        assert in_order == list(range(1, len(in_order) + 1)), in_order
        notes = section.locator("ol.footnotes > li")
        assert [int(n) for n in await notes.evaluate_all("ls => ls.map(l => l.value)")] == in_order
        assert len(first_quote) == len(in_order)
        for number, note in zip(in_order, await notes.all(), strict=True):
            assert f"“{first_quote[number]}”" in (
                await note.locator(".footnote-source").text_content() or ""
            )

        # The audit, compactly, as the API gives it.
        audit = digest["citationAudit"]
        await expect(section.locator(".audit-sentences")).to_have_text(
            f"{audit['sentencesKept']} kept, {audit['sentencesDropped']} dropped"
        )
        for field in audit["fields"]:
            await expect(section.locator(".audit-fields")).to_contain_text(
                f"{field['field']} {field['kept']} of {field['proposed']}"
            )

        # Click: the marker of the sentence that cites a source again shows that sentence's words.
        sentence_of = next(
            i for i, s in enumerate(overview + highlights) if again in s["citations"]
        )
        clicked = shown.nth(sentence_of).locator(
            f'button.footnote-ref[data-footnote="{again["footnote"]}"]'
        )
        await clicked.click()
        await assert_marked_exactly(page, again, again_text)
        await page.screenshot(path=SCREENSHOT)
        print(f"console citations screenshot: {SCREENSHOT}")
        # The footnote list shows the same source with its first citation's words.
        note = notes.nth(in_order.index(again["footnote"]))
        await note.get_by_role(
            "button", name=f"Show footnote {again['footnote']} in context"
        ).click()
        first = next(c for c in citations if c["footnote"] == again["footnote"])
        await assert_marked_exactly(page, first, again_text)

        # Keyboard: focus a marker, Enter shows the edited message's cited revision, focus moves to
        # the mark; Tab reaches "Back to the sentence", which returns focus to the marker.
        sentence_of = next(
            i for i, s in enumerate(overview + highlights) if inside in s["citations"]
        )
        marker = shown.nth(sentence_of).locator(
            f'button.footnote-ref[data-footnote="{inside["footnote"]}"]'
        )
        await marker.focus()
        await page.keyboard.press("Enter")
        await assert_marked_exactly(page, inside, cited_text)
        context = page.locator("section.citation-context")
        await expect(context).to_contain_text(f"Quoted from revision {inside['revision']}")
        back = context.get_by_role("button", name="Back to the sentence")
        await tab_to(page, back)
        await page.keyboard.press("Enter")
        await expect(marker).to_be_focused()
        await page.keyboard.press(" ")  # Space activates it as well
        await expect(context.locator("mark.pointer")).to_be_focused()
        await expect(page.locator("main img, main b")).to_have_count(0)

        # A digest stored before citations were checked shows its overview as it was.
        async with db.acquire() as connection:
            await connection.execute(
                "UPDATE digests SET overview = 'An old overview.', overview_sentences = '[]', "
                "highlight_sentences = '[]', highlights = '[]', citation_audit = NULL"
            )
        await page.reload()
        await expect(section.locator(".overview-text")).to_have_text("An old overview.")
        await expect(section.locator("button.footnote-ref")).to_have_count(0)
        await expect(section.locator(".citation-audit")).to_contain_text("No citation audit")
    watched.assert_clean()
