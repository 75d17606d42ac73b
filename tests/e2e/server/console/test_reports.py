"""The console's Reports page in Debian's Chromium (Playwright) against the real app, database and
worker, every non-loopback request aborted: reached from the navigation, it lists a report made
in the test (title linking to its page, question, sources, audit coverage); its form shows the
API's refusals (an empty question, no source, since after until) as the API words them, then
triggers a report over a channel imported in the test within a since/until window given in the
browser's time zone, follows the job while a real worker runs it, and lands on the report's page
with its footnotes."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from urllib.parse import quote, unquote

import asyncpg
import pytest
from playwright.async_api import expect

from server.settings import Settings
from tests.support.api import gql
from tests.support.browser import Watched
from tests.support.console import QUESTION, console_app, make_report, run_queued_jobs

pytestmark = pytest.mark.browser

SCREENSHOT = Path("/tmp/digestd-console-reports.png")
CHANNEL_QUESTION = "How do people restart the ingest worker with kubectl?"
REPORT = """query($id: ID!) { report(id: $id) { title question request
  sections { sentences { citations { footnote } } } sources { id footnote } } }"""


async def test_reports_page_lists_reports_and_its_form_triggers_one_and_shows_refusals(
    db: asyncpg.Pool, settings: Settings, watched: Watched
) -> None:
    async with console_app(settings) as (base_url, http):
        made = await make_report(http, settings)
        report = made["report"]
        page = watched.page
        await page.goto(f"{base_url}/#/channels")
        await page.get_by_role("navigation").get_by_role("link", name="Reports").click()
        await expect(page.get_by_role("heading", level=1, name="Reports")).to_be_focused()
        await expect(page.get_by_role("link", name="Reports")).to_have_attribute(
            "aria-current", "page"
        )

        # The list: the report made above, with its question, sources and audit coverage.
        row = page.locator(f'tr[data-report="{report["id"]}"]')
        await expect(row).to_have_count(1)
        await expect(row.get_by_role("link", name=report["title"])).to_have_attribute(
            "href", f"#/reports/{quote(report['id'], safe='')}"
        )
        await expect(row.locator(".report-question")).to_have_text(QUESTION)
        audit = report["audit"]
        await expect(row.locator(".report-sources")).to_have_text(str(audit["sources"]))
        await expect(row.locator(".report-coverage")).to_have_text(
            f"{round(audit['coverage'] * 100)}% supported · {audit['kept']} of {audit['proposed']} kept"
        )

        # The form: the API's refusals, as the API words them.
        submit = page.get_by_role("button", name="Write the report")
        await submit.click()
        await expect(page.get_by_role("alert")).to_have_text("question must not be empty")
        await page.get_by_label("Question").fill(CHANNEL_QUESTION)
        await submit.click()
        await expect(page.get_by_role("alert")).to_have_text(
            "choose at least one channel or document"
        )

        await page.get_by_label("acme / team-platform", exact=False).check()
        since, until = page.get_by_label("Messages since"), page.get_by_label("until (optional)")
        await since.fill("2026-01-01T00:00")
        await until.fill("2025-01-01T00:00")
        await submit.click()
        await expect(page.get_by_role("alert")).to_have_text(
            "sources.since must be before sources.until"
        )

        # A report over the channel imported above (its messages are from March 2025), in a
        # window given in the browser's time zone: queued, followed while a worker runs it,
        # then its page with footnotes.
        await since.fill("2025-01-01T00:00")
        await until.fill("2026-01-01T00:00")
        window = await page.evaluate(
            "[new Date('2025-01-01T00:00'), new Date('2026-01-01T00:00')].map(d => d.toISOString())"
        )
        await submit.click()
        status = page.locator(".report-job-status")
        await expect(status).to_contain_text("QUEUED")
        await expect(page.get_by_role("alert")).to_have_count(0)
        await run_queued_jobs(settings)
        await page.wait_for_url(lambda url: "#/reports/" in url, timeout=15_000)
        report_id = unquote(page.url.split("#/reports/", 1)[1])
        new = (await gql(http, REPORT, {"id": report_id}))["report"]
        assert new["question"] == CHANNEL_QUESTION
        assert new["request"]["channel_ids"] and new["request"]["document_ids"] == []
        asked = [datetime.fromisoformat(new["request"][bound]) for bound in ("since", "until")]
        assert asked == [
            datetime.fromisoformat(instant.replace("Z", "+00:00")) for instant in window
        ]
        await expect(page.get_by_role("heading", level=1, name=new["title"])).to_be_focused()
        numbers = [
            c["footnote"] for s in new["sections"] for x in s["sentences"] for c in x["citations"]
        ]
        assert numbers, new
        await expect(page.locator("main button.footnote-ref")).to_have_count(len(numbers))
        await expect(page.locator("ol.footnotes > li")).to_have_count(len(new["sources"]))

        # Back on the list, the new report is first.
        await page.get_by_role("navigation").get_by_role("link", name="Reports").click()
        titles = page.locator("table.reports tbody th a")
        await expect(titles).to_have_count(2)
        await expect(titles.first).to_have_text(new["title"])
        await page.screenshot(path=SCREENSHOT, full_page=True)
        print(f"console reports screenshot: {SCREENSHOT}")
    watched.assert_clean()
