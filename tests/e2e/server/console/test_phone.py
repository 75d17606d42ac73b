"""The console on a phone (390 px wide) in Debian's Chromium (Playwright) against the real app,
database and worker: the channel page with its charts, the conversations with a thread open, the
entities and a digest with a footnote's context open never make the page wider than the screen;
a wide table scrolls inside its own box (every column still reachable) instead of being cut."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest
from playwright.async_api import Browser, Page, expect

from server.settings import Settings
from tests.support.browser import TIMEOUT_MS, Watched, loopback_only
from tests.support.console import console_app, digested_sample

pytestmark = pytest.mark.browser

WIDTH = 390
SCREENSHOTS = Path("/tmp")
OVERFLOW = """() => ({
  viewport: window.innerWidth,
  document: document.documentElement.scrollWidth,
  body: document.body.scrollWidth,
  wider: [...document.querySelectorAll('main *')]
    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1
                 && !e.closest('.table-scroll, table'))
    .slice(0, 5).map(e => e.tagName + '.' + e.className),
})"""


async def assert_fits(page: Page, name: str) -> None:
    """Nothing scrolls the page sideways; a screenshot of the whole page for a person to see."""
    sizes = await page.evaluate(OVERFLOW)
    assert sizes["viewport"] == WIDTH, sizes
    assert sizes["document"] <= WIDTH and sizes["body"] <= WIDTH, (name, sizes)
    assert sizes["wider"] == [], (name, sizes)
    shot = SCREENSHOTS / f"digestd-console-phone-{name}.png"
    await page.screenshot(path=shot, full_page=True)
    print(f"console phone screenshot: {shot}")


async def test_every_new_page_fits_a_390_px_screen(
    db: asyncpg.Pool, settings: Settings, browser: Browser
) -> None:
    async with console_app(settings) as (base_url, http):
        channel_id, digest_id = await digested_sample(http, settings)
        page = await browser.new_page(
            viewport={"width": WIDTH, "height": 844}, device_scale_factor=2, is_mobile=True
        )
        page.set_default_timeout(TIMEOUT_MS)
        # Script errors and policy violations (a chart library writing HTML or inline styles
        # would be one) are recorded and must not happen.
        watched = Watched(page, await loopback_only(page))

        await page.goto(f"{base_url}/#/channel/{channel_id}")
        for chart in ("activity", "topics", "entities"):
            figure = page.locator(f'figure.chart[data-chart="{chart}"]')
            await expect(figure).to_have_attribute("data-ready", "true")
            # The chart is drawn as wide as the column, not at a desktop width.
            box = await figure.locator("canvas").bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= WIDTH, (chart, box)
        await assert_fits(page, "channel")

        await page.goto(f"{base_url}/#/conversations?channel={channel_id}")
        first = page.locator("li.conversation").first
        await first.locator("summary").click()
        await expect(first.locator("li.thread-message").first).to_be_visible()
        await assert_fits(page, "conversations")

        await page.goto(f"{base_url}/#/entities?channel={channel_id}")
        table = page.locator("table.entities")
        await expect(table).to_be_visible()
        scroller = page.locator(".table-scroll", has=table)
        widths = await scroller.evaluate("s => [s.scrollWidth, s.clientWidth]")
        assert widths[0] > widths[1], widths  # wider than the screen: it scrolls in its box
        last_header = table.locator("thead th").last
        await last_header.scroll_into_view_if_needed()
        header_box = await last_header.bounding_box()
        assert header_box and header_box["x"] + header_box["width"] <= WIDTH + 1, header_box
        await scroller.evaluate("s => { s.scrollLeft = 0; }")
        await assert_fits(page, "entities")

        await page.goto(f"{base_url}/#/digest/{digest_id}")
        await page.locator("section.overview button.footnote-ref").first.click()
        await expect(page.locator("section.citation-context mark.pointer")).to_be_focused()
        await assert_fits(page, "digest")
        watched.assert_clean()
        await page.close()
