"""An exported HTML digest opened from disk (file://) in a real browser, offline: a footnote
reference leads to its footnote, which quotes the cited words and names who said them, the
back-link returns to the sentence, and the page asks for nothing but itself.

The digest is the Gitter docker room of ../shared/data, digested offline (skipped when the data
is absent); the browser is Debian's Chromium (skipped, saying why, when it is not installed),
in an offline context where every request but the file's own is aborted and recorded."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg
import pytest
from playwright.async_api import Browser, Request, Route, expect

from runner.exports.store import export_file
from tests.support.browser import TIMEOUT_MS
from tests.support.exports import digested_docker_room

pytestmark = pytest.mark.browser


async def test_an_exported_digest_opens_offline_with_working_footnotes(
    db: asyncpg.Pool, database_url: str, browser: Browser, tmp_path: Path
) -> None:
    _, digest_id = await digested_docker_room(db, database_url)
    async with db.acquire() as connection:
        exported = await export_file(connection, "digest", digest_id, "html")
        as_json = await export_file(connection, "digest", digest_id, "json")
    assert exported is not None and as_json is not None
    footnotes = json.loads(as_json.content)["footnotes"]
    assert footnotes, "the digest cites no message"
    path = tmp_path / exported.filename
    path.write_text(exported.content, encoding="utf-8")
    url = path.as_uri()

    context = await browser.new_context(offline=True, viewport={"width": 900, "height": 600})
    page = await context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    requested: list[str] = []
    problems: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))

    async def only_the_file(route: Route, request: Request) -> None:
        await (route.continue_() if request.url == url else route.abort())

    await page.route("**/*", only_the_file)
    try:
        await page.goto(url)
        # The last footnote's first reference: the footnote is far below, out of view.
        last = footnotes[-1]
        number = last["number"]
        target = page.locator(f"#fn-{number}")
        await expect(target).not_to_be_in_viewport()
        reference = page.locator(f'sup.ref a[href="#fn-{number}"]').first
        await reference.click()
        assert await page.evaluate("location.hash") == f"#fn-{number}"
        await expect(target).to_be_in_viewport()
        assert await page.evaluate("document.querySelector(':target').id") == f"fn-{number}"
        await expect(target.locator("blockquote").first).to_have_text(last["quotes"][0]["text"])
        await expect(target.locator("p.source")).to_contain_text(
            f"{last['author']} · {last['at'][:10]}"
        )
        await expect(target.locator("p.source")).to_contain_text(f"message {last['messageId']}")

        # Back to the sentence that cited it.
        await target.locator("a.back").first.click()
        assert await page.evaluate("location.hash") == f"#ref-{number}-1"
        await expect(reference).to_be_in_viewport()
    finally:
        await context.close()
    assert requested == [url], f"the page asked for more than itself: {requested}"
    assert problems == []
