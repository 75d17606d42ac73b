"""The channel page's current state in Chromium: a channel digested on two days shows its open
questions, its open action items by owner and its decisions in force, and one click on an item opens
its history with the quoted evidence of each change."""

from __future__ import annotations

from datetime import datetime, timedelta

import asyncpg
import httpx
import pytest
from playwright.async_api import expect

from server.settings import Settings
from tests.support.api import gql
from tests.support.browser import TIMEOUT_MS, loopback_only
from tests.support.console import INGEST, console_app, run_queued_jobs, trigger_digest
from tests.support.items import DAY1, DAY1_ROWS, DAY2, DAY2_ROWS

pytestmark = pytest.mark.browser

# Day 2 also brings a task nobody has done yet, and a question nobody has answered.
LATER_ROWS: list[tuple[str, str, str, str | None]] = [
    ("t3", "eve", "I'll renew the TLS certificates of the wiki before Friday.", None),
    ("q2", "fay", "Why does the staging database refuse connections after midnight?", None),
]


def _inputs(
    rows: list[tuple[str, str, str, str | None]], start: datetime
) -> list[dict[str, object]]:
    return [
        {
            "id": mid,
            "author": author,
            "ts": (start + timedelta(minutes=i)).isoformat(),
            "text": text,
            "replyTo": reply,
        }
        for i, (mid, author, text, reply) in enumerate(rows)
    ]


async def _digest_day(
    http: httpx.AsyncClient, settings: Settings, messages: list[dict[str, object]]
) -> str:
    ingested = await gql(http, INGEST, {"c": {"name": "ops", "server": "acme"}, "m": messages})
    channel_id = str(ingested["ingestMessages"]["channel"]["id"])
    await trigger_digest(http, channel_id, None)
    await run_queued_jobs(settings)
    return channel_id


async def test_the_channel_page_shows_what_is_open_with_its_evidence_one_click_away(
    db: asyncpg.Pool, settings: Settings, browser: object
) -> None:
    async with console_app(settings) as (base_url, http):
        channel_id = await _digest_day(http, settings, _inputs(DAY1_ROWS, DAY1))
        await _digest_day(
            http,
            settings,
            _inputs(DAY2_ROWS, DAY2) + _inputs(LATER_ROWS, DAY2 + timedelta(hours=3)),
        )
        page = await browser.new_page()  # type: ignore[attr-defined]
        page.set_default_timeout(TIMEOUT_MS)
        blocked = await loopback_only(page)
        problems: list[str] = []
        page.on("pageerror", lambda error: problems.append(str(error)))
        await page.goto(f"{base_url}/#/channel/{channel_id}")
        state = page.locator("section.channel-state")
        await expect(state.get_by_role("heading", level=2, name="Current state")).to_be_visible()

        # Day 1's question was answered on day 2; fay's is still open.
        questions = state.locator("ul.tracked-items").first.locator("li.tracked-item")
        await expect(questions).to_have_count(1)
        await expect(questions.first.locator("summary")).to_contain_text("staging database")
        # cid's task is done (merged); eve's is open, under her name.
        owners = state.locator("section.owner-group")
        await expect(owners).to_have_count(1)
        assert await owners.first.get_attribute("data-owner") == "eve"
        await expect(owners.first.locator("summary")).to_contain_text("TLS certificates")
        # restic was replaced by borg: only borg is in force.
        decisions = state.locator("ul.tracked-items").last.locator("li.tracked-item")
        await expect(decisions).to_have_count(1)
        borg = decisions.first
        await expect(borg.locator("summary")).to_contain_text("borg")

        # One click opens its history: where it was first said, quoted.
        await expect(borg.locator("ol.item-history")).to_be_hidden()
        await borg.locator("summary").click()
        await expect(borg.locator("ol.item-history li.item-event")).to_have_count(1)
        quote = borg.locator("blockquote.evidence")
        await expect(quote).to_contain_text("switch to borg instead of restic")
        assert await quote.get_attribute("data-message-id") == "d3"
        await expect(borg.locator("ul.item-mentions a")).to_have_count(1)
        await page.close()
    assert blocked == [] and problems == []
