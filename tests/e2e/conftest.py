"""Fixtures of the end-to-end tests: Debian's Chromium through Playwright, and a page of it that
aborts and records every request to a host other than loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright

from tests.support.browser import CHROMIUM, TIMEOUT_MS, Watched, loopback_only


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium is not installed ({CHROMIUM} is absent): apt-get install chromium")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM)
        yield launched
        await launched.close()


@pytest.fixture
async def watched(browser: Browser) -> AsyncIterator[Watched]:
    page = await browser.new_page(viewport={"width": 1300, "height": 1000})
    page.set_default_timeout(TIMEOUT_MS)
    yield Watched(page, await loopback_only(page))
    await page.close()
