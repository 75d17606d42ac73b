"""The console's report page when one document is quoted in several places: it is one source
(one footnote number, one entry of the source list saying how many passages of it are cited
and which sections cite it), and each sentence's marker opens the span
of it that this sentence rests on, marked exactly, not the document's first cited span. Debian's
Chromium (Playwright) against the real app, database and worker."""

from __future__ import annotations

import httpx
import pytest
from playwright.async_api import expect

from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.api import gql
from tests.support.browser import Watched
from tests.support.console import INGEST_DOCUMENT, TRIGGER_REPORT, run_queued_jobs
from tests.support.servers import running_server

pytestmark = pytest.mark.browser

QUESTION = "How are database migration rollbacks approved?"
HANDBOOK = (
    "Every database migration ships with a rollback plan that the on-call lead approves.\n\n"
    "A rollback of a database migration is approved in the incident channel before it starts.\n\n"
    "Approved rollbacks of a migration are recorded in the incident log with the approver.\n\n"
    "The coffee machine on the third floor is cleaned every Monday morning."
)
REPORT = """query($id: ID!) { job(id: $id) { status report { id title
  sections { sentences { text citations { sourceId footnote span { quote locator } } } }
  sources { id footnote kind citedInSections spans { quote locator } } } } }"""


async def test_each_marker_of_a_document_quoted_in_several_places_opens_its_own_span(
    settings: Settings, watched: Watched
) -> None:
    app = create_app(settings, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as http,
    ):
        document = await gql(
            http, INGEST_DOCUMENT, {"input": {"text": HANDBOOK, "title": "Operations handbook"}}
        )
        sources = {"documentIds": [document["ingestDocument"]["id"]]}
        job = (await gql(http, TRIGGER_REPORT, {"q": QUESTION, "sources": sources}))[
            "triggerReport"
        ]
        await run_queued_jobs(settings)
        report = (await gql(http, REPORT, {"id": job["id"]}))["job"]["report"]
        (source,) = report["sources"]
        assert len(source["spans"]) == 3
        sentences = [s for section in report["sections"] for s in section["sentences"]]
        assert [c["span"]["quote"] for s in sentences for c in s["citations"]] == [
            s["text"] for s in sentences
        ]

        page = watched.page
        await page.goto(f"{base_url}/#/reports/{report['id']}")
        await expect(page.get_by_role("heading", level=1, name=report["title"])).to_be_focused()
        listed = page.locator("ol.footnotes > li")
        await expect(listed).to_have_count(1)
        await expect(listed.locator(".source-usage")).to_have_text(
            f"3 passages · cited in {', '.join(source['citedInSections'])}"
        )
        shown = page.locator("main .cited-sentence")
        await expect(shown).to_have_count(len(sentences))
        context = page.locator("section.citation-context")
        for index, sentence in enumerate(sentences):
            await shown.nth(index).locator("button.footnote-ref").click()
            mark = context.locator(".cited mark.pointer")
            await expect(mark).to_have_count(1)
            await expect(mark).to_have_text(sentence["citations"][0]["span"]["quote"])
            await expect(context.locator(".badge")).to_have_text(
                sentence["citations"][0]["span"]["locator"]
            )
    watched.assert_clean()
