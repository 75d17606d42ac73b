"""The channel page of the web console lists the channel's digest schedules (Debian's Chromium
through Playwright, the real app and database, every non-loopback request aborted): cron and
zone, the next run or "paused", and the last job a firing queued, with its outcome."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import asyncpg
import pytest
from playwright.async_api import expect

from runner.schedules.tick import fire_due_schedules
from server.settings import Settings
from tests.support.api import gql
from tests.support.browser import Watched
from tests.support.console import console_app, run_queued_jobs, seed_channel
from tests.support.database import row_id

pytestmark = pytest.mark.browser

CREATE = """mutation($c: ID!, $cron: String!, $tz: String!) {
  createSchedule(channelId: $c, cron: $cron, timezone: $tz) { ... on Schedule { id } } }"""
SCREENSHOT = Path("/tmp/digestd-console-schedules.png")
PAUSE = """mutation($id: ID!) { pauseSchedule(id: $id) { __typename } }"""


async def test_channel_page_lists_its_schedules(
    db: asyncpg.Pool, settings: Settings, watched: Watched
) -> None:
    async with console_app(settings) as (base_url, http):
        channel_id, _ = await seed_channel(http, None)
        page = watched.page
        await page.goto(f"{base_url}/#/channel/{quote(channel_id, safe='')}")
        await expect(page.get_by_role("heading", level=2, name="Schedules")).to_be_visible()
        await expect(page.get_by_text("No schedule yet: add one below")).to_be_visible()

        weekdays = await gql(
            http, CREATE, {"c": channel_id, "cron": "0 9 * * 1-5", "tz": "Europe/Berlin"}
        )
        hourly = await gql(http, CREATE, {"c": channel_id, "cron": "0 * * * *", "tz": "UTC"})
        weekdays_id, hourly_id = weekdays["createSchedule"]["id"], hourly["createSchedule"]["id"]
        await gql(http, PAUSE, {"id": weekdays_id})
        async with db.acquire() as connection:
            await connection.execute(
                "UPDATE schedules SET next_run_at = now() - interval '1 minute' WHERE id = $1",
                row_id(hourly_id),
            )
            assert len(await fire_due_schedules(connection, max_attempts=3)) == 1
        await run_queued_jobs(settings)

        await page.reload()
        await expect(page.locator("caption", has_text="2 schedules")).to_be_visible()
        paused = page.locator(f'tr[data-schedule="{weekdays_id}"]')
        await expect(paused.locator("th")).to_have_text("0 9 * * 1-5")
        await expect(paused.locator(".schedule-next")).to_have_text("paused")
        await expect(paused.locator(".schedule-job")).to_have_text("—")
        fired = page.locator(f'tr[data-schedule="{hourly_id}"]')
        await expect(fired.locator(".schedule-next")).not_to_have_text("paused")
        await page.locator("caption", has_text="2 schedules").scroll_into_view_if_needed()
        await page.screenshot(path=str(SCREENSHOT))
        job_link = fired.locator(".schedule-job a")
        await expect(job_link).to_have_text("SUCCEEDED")
        await job_link.click()
        await expect(page).to_have_url(re.compile(r"#/job/"))
    watched.assert_clean()
