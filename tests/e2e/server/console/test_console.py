"""The web console at / in Debian's Chromium (Playwright) against the real app, database and
worker, with every request to a host other than loopback aborted and recorded: it asks for a
token and works with one, lists channels with their message counts, shows a digest with every
section, marks exactly a pointer's characters (code points, with emoji before them), finds a
knowledge item, marks a document's evidence at its charRange, and follows a job live."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from urllib.parse import quote

import asyncpg
import httpx
import pytest
from playwright.async_api import expect

from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.api import DIGEST_QUERY, gql
from tests.support.browser import Watched, secured
from tests.support.console import (
    DIGEST_SECTIONS,
    EMOJI_MESSAGE_ID,
    console_app,
    messages_by_id,
    run_queued_jobs,
    seed_channel,
    seed_document,
    trigger_digest,
    worker_runtime,
)
from tests.support.servers import running_server

pytestmark = pytest.mark.browser

WRITER = "writer-token-1"
READER = "reader-token-1"
RECORD_TEXTS = """status => {
  window.statusTexts = [status.textContent];
  new MutationObserver(() => {
    if (window.statusTexts.at(-1) !== status.textContent) window.statusTexts.push(status.textContent);
  }).observe(status, {childList: true, characterData: true, subtree: true});
}"""
SCREENSHOT = Path("/tmp/digestd-console-digest.png")


async def test_the_console_shows_a_digest_and_marks_exactly_the_pointed_characters(
    db: asyncpg.Pool, settings: Settings, watched: Watched
) -> None:
    secure = secured(settings)
    app = create_app(secure, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as http,
    ):
        channel_id, message_count = await seed_channel(http, WRITER)
        job_id = await trigger_digest(http, channel_id, WRITER)
        await run_queued_jobs(secure)
        job = (
            await gql(
                http, "query($id: ID!) { job(id: $id) { status digestId } }", {"id": job_id}, READER
            )
        )["job"]
        assert job["status"] == "SUCCEEDED", job
        digest = (await gql(http, DIGEST_QUERY, {"id": job["digestId"]}, READER))["digest"]
        texts = await messages_by_id(http, channel_id, READER)
        page = watched.page

        # Tokens are on: the page loads, the API refuses, the console asks for a token.
        await page.goto(f"{base_url}/")
        await expect(page.get_by_role("heading", name="A token is needed")).to_be_visible()
        await expect(page.get_by_label("API token")).to_be_focused()
        await page.keyboard.type(READER)
        await page.keyboard.press("Enter")
        row = page.locator("tr", has=page.get_by_role("link", name="team-platform"))
        await expect(row.locator(".message-count")).to_have_text(str(message_count))
        assert await page.evaluate("sessionStorage.length") == 1

        # The channel's last digest opens with every section.
        await row.get_by_role("link", name=digest["title"]).click()
        await expect(page.get_by_role("heading", level=1, name=digest["title"])).to_be_focused()
        for section in DIGEST_SECTIONS:
            await expect(page.get_by_role("heading", level=2, name=section)).to_be_visible()
        counts = digest["itemCounts"]
        await expect(page.locator("li.decision")).to_have_count(counts["decisions"])
        await expect(page.locator("li.knowledge-item")).to_have_count(counts["knowledgeItems"])

        # The knowledge item pointing after the emoji: its <mark> holds exactly
        # normalizedText[charStart:charEnd] (Python slicing: code points), at that position.
        position, item = next(
            (i, k)
            for i, k in enumerate(digest["knowledgeItems"])
            if k["pointer"] and k["pointer"]["messageId"] == EMOJI_MESSAGE_ID
        )
        pointer = item["pointer"]
        text = texts[EMOJI_MESSAGE_ID]["normalizedText"]
        before = text[: pointer["charStart"]]
        assert any(ord(c) > 0xFFFF for c in before), (
            "the test needs astral characters before the pointer"
        )
        quote = text[pointer["charStart"] : pointer["charEnd"]]
        entry = page.locator("li.knowledge-item").nth(position)
        await entry.get_by_role("button", name="Sources").click()
        await expect(entry.get_by_role("button", name="Hide sources")).to_have_attribute(
            "aria-expanded", "true"
        )
        mark = entry.locator("article.cited mark.pointer")
        await expect(mark).to_have_count(1)
        assert await mark.text_content() == quote
        shown = await mark.evaluate(
            "m => [m.previousSibling.textContent, m.nextSibling.textContent, m.parentElement.childNodes.length]"
        )
        assert shown == [before, text[pointer["charEnd"] :], 3]
        # Its neighbours in the conversation are shown around it.
        await expect(entry.locator("article.message")).to_have_count(3)
        # The neighbour's markup is text: no element was made from it.
        after = entry.locator('article.message[data-message-id="emoji-2"] .message-text')
        assert await after.text_content() == texts["emoji-2"]["normalizedText"]
        assert "<b>really</b>" in texts["emoji-2"]["normalizedText"]
        await expect(page.locator("main img, main b")).to_have_count(0)
        # The policy enforces it: an HTML string sink throws.
        sink = "() => { try { document.body.innerHTML = '<b>x</b>'; return 'parsed'; } catch (e) { return e.name; } }"
        assert await page.evaluate(sink) == "TypeError"
        await watched.expect_problem("requires 'TrustedHTML' assignment")  # the probe's own report
        await entry.locator("article.message").last.scroll_into_view_if_needed()
        await page.screenshot(path=SCREENSHOT)
        print(f"console digest screenshot: {SCREENSHOT}")
        assert SCREENSHOT.stat().st_size > 30_000

        # A decision opened from the keyboard shows its cited messages.
        decision = page.locator("li.decision").first
        await decision.get_by_role("button", name="Sources").focus()
        await page.keyboard.press("Enter")
        cited = digest["decisions"][0]["messageIds"]
        await expect(decision.locator("article.cited")).to_have_count(len(cited))
        assert (
            await decision.locator("article.cited").first.get_attribute("data-message-id")
            == cited[0]
        )

        # Knowledge search finds the item and marks the same characters.
        await page.get_by_role("link", name="Knowledge search").click()
        await page.get_by_label("Words").fill("kubectl")
        await page.get_by_label("Words").press("Enter")
        found = page.locator("li.knowledge-item", has_text=item["title"])
        await expect(found).to_have_count(1)
        await found.get_by_role("button", name="Sources").click()
        assert await found.locator("mark.pointer").text_content() == quote

        await page.get_by_role("button", name="Forget").click()
        await expect(page.get_by_role("heading", name="A token is needed")).to_be_visible()
    watched.assert_clean()


async def test_a_document_shows_its_evidence_marked_at_its_char_range_and_its_audit(
    db: asyncpg.Pool, settings: Settings, watched: Watched
) -> None:
    # A short document, digested anyway (the default policy digests only long ones).
    settings = settings.model_copy(update={"digestd_doc_min_chars": 0})
    async with console_app(settings) as (base_url, http):
        document_id = await seed_document(http, settings, "how are ingest timeouts retried")
        read = """query($id: ID!) { document(id: $id) { canonicalText
          latestDigests(first: 1) { evidenceSnippets { text charRange }
            citationAudit { sentencesKept sentencesDropped overviewCitedShare fields { field proposed kept cited } } } } }"""
        document = (await gql(http, read, {"id": document_id}))["document"]
        snippets = document["latestDigests"][0]["evidenceSnippets"]
        assert snippets and all(s["charRange"] for s in snippets), snippets
        canonical = document["canonicalText"]
        page = watched.page
        await page.goto(f"{base_url}/#/documents")
        await page.get_by_role("link", name="Ingest release notes").click()
        marks = page.locator("pre.canonical mark.evidence")
        await expect(marks).to_have_count(len(snippets))
        ranges = sorted(tuple(s["charRange"]) for s in snippets)
        shown = sorted(
            (int(m["start"]), int(m["end"]), m["text"])
            for m in await marks.evaluate_all(
                "ms => ms.map(m => ({start: m.dataset.charStart, end: m.dataset.charEnd, text: m.textContent}))"
            )
        )
        assert shown == [(start, end, canonical[start:end]) for start, end in ranges]
        await page.get_by_role("button", name="Show in the text").first.click()
        await expect(page.locator("mark.evidence:focus")).to_have_count(1)
        # The digest's citation audit: the API's figures (which claims its evidence supports).
        audit = document["latestDigests"][0]["citationAudit"]
        shown_audit = page.locator(".citation-audit")
        await expect(shown_audit.locator(".audit-sentences")).to_have_text(
            f"{audit['sentencesKept']} kept, {audit['sentencesDropped']} dropped"
        )
        await expect(shown_audit.locator(".audit-share")).to_have_text(
            f"{round(audit['overviewCitedShare'] * 100)}%"
        )
        await expect(shown_audit.locator(".audit-fields")).to_have_text(
            " · ".join(
                f"{f['field']} {f['kept']} of {f['proposed']}, {f['cited']} cited"
                for f in audit["fields"]
            )
        )
    watched.assert_clean()


async def test_a_job_page_follows_the_job_live_to_its_end(
    db: asyncpg.Pool, settings: Settings, watched: Watched
) -> None:
    """The job is queued with no worker; the page shows it queued, a worker starts, and the same
    page (never reloaded) reaches SUCCEEDED: over the subscription when the API has one, else by
    polling."""
    secure = secured(settings)  # with tokens on, the subscription gets the token too
    app = create_app(secure, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as http,
    ):
        channel_id, _ = await seed_channel(http, WRITER)
        page = watched.page
        await page.goto(f"{base_url}/#/channel/{quote(channel_id, safe='')}")
        await page.get_by_label("API token").fill(WRITER)
        await page.get_by_role("button", name="Use token").click()
        await page.get_by_role("button", name="Digest new messages").click()
        status = page.locator(".job-status")
        await expect(status).to_have_text("QUEUED")
        await expect(status).to_have_attribute("aria-live", "polite")
        # The page records every text its status line shows (and would lose the list on a reload).
        await status.evaluate(RECORD_TEXTS)
        await asyncio.sleep(1.5)  # a second or so of "queued", live
        async with worker_runtime(secure) as runtime:
            assert await runtime.new_worker().run_once()
        await expect(status).to_have_text(
            re.compile(r"^SUCCEEDED · \d+ of \d+ chunks$"), timeout=15_000
        )
        seen = await page.evaluate("window.statusTexts")
        assert seen[0] == "QUEUED" and seen[-1].startswith("SUCCEEDED"), seen
        # A running state names its phase and the whole job's share done.
        running = [text for text in seen if text.startswith("RUNNING")]
        assert all(re.match(r"^RUNNING · [A-Z]+ · \d+%", text) for text in running), seen
        # The bar is the job's overall fraction; the heading names the channel and the job's
        # number, not its global id.
        assert await page.locator("progress").evaluate("bar => bar.value") == 1
        await expect(page.get_by_role("heading", level=1)).to_have_text(
            re.compile(r"^team-platform digest · job \d+$")
        )
        via = await page.locator(".via").text_content()
        assert via in ("Finished (followed by subscription).", "Finished (followed by polling)."), (
            via
        )
        print(f"job progress followed via: {seen} ({via})")
        await expect(page.get_by_role("link", name="Open the digest")).to_be_visible()
    watched.assert_clean()


async def test_the_jobs_list_follows_its_jobs_live(
    db: asyncpg.Pool, settings: Settings, watched: Watched
) -> None:
    """A queued job in the list (its kind in words, its channel and number as its name) reaches
    SUCCEEDED with how long it took, on the same page, never reloaded."""
    async with console_app(settings) as (base_url, http):
        channel_id, _ = await seed_channel(http, None)
        await trigger_digest(http, channel_id, None)
        page = watched.page
        await page.goto(f"{base_url}/#/jobs")
        row = page.locator("table.jobs tbody tr").first
        await expect(row.locator("td.status")).to_have_text("QUEUED")
        await expect(row.locator("td").first).to_have_text("channel digest")
        await expect(row.get_by_role("link")).to_have_text(
            re.compile(r"^team-platform digest · job \d+$")
        )
        await expect(row.locator("td.took")).to_have_text("—")
        await run_queued_jobs(settings)
        await expect(row.locator("td.status")).to_have_text("SUCCEEDED", timeout=15_000)
        await expect(row.locator("td.took")).to_have_text(re.compile(r"^\d+ s$"))
        await expect(row.locator("td.progress-text")).to_have_text(
            re.compile(r"^SUCCEEDED · \d+ of \d+ chunks$")
        )
    watched.assert_clean()
