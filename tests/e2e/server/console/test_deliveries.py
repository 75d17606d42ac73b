"""The console's Deliveries page and the digest page's downloads in Chromium, with tokens on: the
destinations listed without a secret, a dead delivery (made dead in the test database through
db/deliveries.py) shown under "dead letters" with its last error, "Retry" moving it to pending;
and the digest's HTML download, fetched with the console's token and saved through a Blob URL,
is the export route's file. No inline script, no request off loopback, no policy violation."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import asyncpg
import pytest
from playwright.async_api import expect

from db import deliveries as delivery_queries
from runner.exports.store import export_file
from server.settings import Settings
from tests.support.api import gql
from tests.support.browser import Watched, secured
from tests.support.console import console_app, run_queued_jobs, seed_channel, trigger_digest
from tests.support.database import row_id

pytestmark = pytest.mark.browser

WRITER = "writer-token-1"
SECRET = "whsec-console-0123456789abcdef"
URL_TOKEN = "tok-console-4f3e2d-private"
WORKER = "console-test"


async def test_a_dead_delivery_is_listed_and_retried_and_the_digest_downloads_as_html(
    db: asyncpg.Pool, settings: Settings, watched: Watched, tmp_path: Path
) -> None:
    secure = secured(settings)
    async with console_app(secure) as (base_url, http):
        channel_id, _ = await seed_channel(http, WRITER)
        job_id = await trigger_digest(http, channel_id, WRITER)
        await run_queued_jobs(secure)
        job = await gql(
            http, "query($id: ID!) { job(id: $id) { digestId } }", {"id": job_id}, WRITER
        )
        digest_id = str(job["job"]["digestId"])
        # A webhook subscribed to finished jobs, its delivery queued, claimed and given up on,
        # as the delivery loop does when a receiver keeps answering 500.
        async with db.acquire() as connection:
            destination = await delivery_queries.insert_destination(
                connection,
                "ops-hook",
                "webhook",
                {"team": "ops"},
                {"url": f"http://127.0.0.1:9/hooks/{URL_TOKEN}", "signing_secret": SECRET},
                ["job.succeeded"],
                "127.0.0.1",
            )
            assert destination is not None
            assert await delivery_queries.enqueue_job_deliveries(connection, row_id(job_id)) == 1
            (claimed,) = await delivery_queries.claim_deliveries(connection, WORKER, 10, 30.0)
            dead = await delivery_queries.mark_dead(connection, claimed.id, WORKER, "HTTP 500")
            assert dead is not None

        page = watched.page
        await page.goto(f"{base_url}/#/deliveries")
        await expect(page.get_by_role("heading", name="A token is needed")).to_be_visible()
        await page.get_by_label("API token").fill(WRITER)
        await page.get_by_role("button", name="Use token").click()
        await expect(page.get_by_role("heading", level=1, name="Deliveries")).to_be_visible()

        row = page.locator("table.destinations tbody tr")
        await expect(row).to_have_count(1)
        await expect(row.locator("td")).to_have_text(
            ["ops-hook", "webhook", "127.0.0.1", "job succeeded", re.compile(r".+")]
        )
        content = await page.content()
        assert SECRET not in content and URL_TOKEN not in content

        await page.get_by_role("link", name="dead letters").click()
        await expect(page).to_have_url(re.compile(r"#/deliveries\?state=DEAD$"))
        dead_row = page.locator("tr.delivery")
        await expect(dead_row).to_have_count(1)
        await expect(dead_row).to_have_attribute("data-state", "DEAD")
        await expect(dead_row.locator(".last-error")).to_have_text("HTTP 500")
        await expect(dead_row.locator(".attempts")).to_have_text("1")
        await expect(page.get_by_role("status").filter(has_text="dead delivery")).to_have_text(
            "1 dead delivery, newest first."
        )

        await dead_row.get_by_role("button", name="Retry").click()
        await expect(dead_row.locator(".state")).to_have_text("pending")
        await expect(dead_row).to_have_attribute("data-state", "PENDING")
        await expect(dead_row.locator(".attempts")).to_have_text("0")
        async with db.acquire() as connection:
            (stored,) = await delivery_queries.deliveries_by_ids(connection, [claimed.id])
        assert stored.state == "pending" and stored.delivery_id == claimed.delivery_id
        # Gone from the dead letters once the page is read again.
        await page.reload()
        await expect(page.get_by_text("No dead letters.")).to_be_visible()

        # The digest page downloads its HTML export with the console's token.
        await page.goto(f"{base_url}/#/digest/{digest_id}")
        html_link = page.get_by_role("link", name="Download the digest as HTML")
        await expect(html_link).to_have_attribute(
            "href", f"/export/digests/{quote(digest_id, safe='')}.html"
        )
        async with page.expect_download() as downloading:
            await html_link.click()
        download = await downloading.value
        assert download.suggested_filename == f"digestd-digest-{row_id(digest_id)}.html"
        saved = tmp_path / download.suggested_filename
        await download.save_as(saved)
        async with db.acquire() as connection:
            exported = await export_file(connection, "digest", row_id(digest_id), "html")
        assert exported is not None
        assert saved.read_text(encoding="utf-8") == exported.content
    watched.assert_clean()


async def test_deliveries_page_by_the_connection_cursors(
    db: asyncpg.Pool, settings: Settings, watched: Watched
) -> None:
    """25 deliveries: 20 on the first page, the 5 oldest behind "Older", and "Newer" back."""
    async with console_app(settings) as (base_url, http):
        channel_id, _ = await seed_channel(http, None)
        job_id = await trigger_digest(http, channel_id, None)
        await run_queued_jobs(settings)
        async with db.acquire() as connection:
            for number in range(25):
                added = await delivery_queries.insert_destination(
                    connection,
                    f"hook-{number:02d}",
                    "webhook",
                    {},
                    {"url": f"http://127.0.0.1:9/{number}", "signing_secret": SECRET},
                    ["job.succeeded"],
                    "127.0.0.1",
                )
                assert added is not None
            assert await delivery_queries.enqueue_job_deliveries(connection, row_id(job_id)) == 25

        page = watched.page
        await page.goto(f"{base_url}/#/deliveries")
        rows = page.locator("tr.delivery")
        await expect(rows).to_have_count(20)
        first_page = await rows.evaluate_all("rs => rs.map(r => r.dataset.deliveryId)")
        await expect(page.get_by_role("link", name="Newer deliveries")).to_have_count(0)
        await page.get_by_role("link", name="Older deliveries").click()
        await expect(rows).to_have_count(5)
        second_page = await rows.evaluate_all("rs => rs.map(r => r.dataset.deliveryId)")
        assert not set(first_page) & set(second_page)
        await expect(page.get_by_role("link", name="Older deliveries")).to_have_count(0)
        await page.get_by_role("link", name="Newer deliveries").click()
        await expect(rows).to_have_count(20)
        again = await rows.evaluate_all("rs => rs.map(r => r.dataset.deliveryId)")
        assert again == first_page
        await expect(page.get_by_role("link", name="Newer deliveries")).to_have_count(0)
    watched.assert_clean()
