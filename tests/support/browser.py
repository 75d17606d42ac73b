"""A real browser against a live digestd: Debian's Chromium through Playwright, every request to a host other than loopback aborted and recorded."""

from __future__ import annotations

import asyncio
import shutil
from urllib.parse import urlsplit

from playwright.async_api import Page, Route
from pydantic import SecretStr

from server.settings import Settings

LOOPBACK = {"127.0.0.1", "localhost"}


TOKENS = "reader:reader-token-1,writer:writer-token-1"


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TIMEOUT_MS = 60_000


async def loopback_only(page: Page) -> list[str]:
    """Aborts every request to a host other than loopback; returns the list they are added to."""
    blocked: list[str] = []

    async def route(route: Route) -> None:
        if urlsplit(route.request.url).hostname in LOOPBACK:
            await route.continue_()
        else:
            blocked.append(route.request.url)
            await route.abort()

    await page.route("**/*", route)
    return blocked


def secured(settings: Settings, **update: object) -> Settings:
    return settings.model_copy(update={"digestd_api_tokens": SecretStr(TOKENS), **update})


class Watched:
    """A page with the loopback guard and a record of policy violations and script errors."""

    def __init__(self, page: Page, blocked: list[str]) -> None:
        self.page = page
        self.blocked = blocked
        self.problems: list[str] = []
        page.on("console", lambda m: self.problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: self.problems.append(str(error)))

    async def expect_problem(self, part: str) -> None:
        """Waits for a problem the test caused on purpose, and takes it off the record."""
        for _ in range(100):
            found = [p for p in self.problems if part in p]
            if found:
                self.problems.remove(found[0])
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"no problem reported containing {part!r}: {self.problems}")

    def assert_clean(self) -> None:
        assert self.blocked == [], f"the console requested other hosts: {self.blocked}"
        assert [p for p in self.problems if "401" not in p] == [], self.problems
