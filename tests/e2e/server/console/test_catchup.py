"""The console's catch-up page in Chromium: a person's name and a start in the form, the channel
where a question waits on them first, each entry with the quoted words of its message (chat
markup shown as text), the catch-up's JSON download, and "Mark read" moving the channel's read
marker; no inline script, no request off loopback, no policy violation."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from playwright.async_api import expect

from server.settings import Settings
from tests.support.api import gql
from tests.support.browser import Watched
from tests.support.console import INGEST, console_app, run_queued_jobs, trigger_digest

pytestmark = pytest.mark.browser

START = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
OPS = [
    ("o1", "bob", "ann, why does the staging database refuse connections after midnight?", None),
    ("o2", "cid", "I'll update the deploy docs for the new backup flow tomorrow.", None),
]
DEV = [
    ("v1", "eve", "thanks ann <img src=x onerror=alert(1)> the build is green again", None),
    ("v2", "dee", "Let's use restic for the offsite backups.", None),
]


async def _channel(
    http: httpx.AsyncClient, settings: Settings, name: str, rows: list[tuple[str, str, str, None]]
) -> str:
    messages = [
        {
            "id": mid,
            "author": author,
            "ts": (START + timedelta(minutes=i)).isoformat(),
            "text": text,
        }
        for i, (mid, author, text, _) in enumerate(rows)
    ]
    ingested = await gql(http, INGEST, {"c": {"name": name, "server": "acme"}, "m": messages})
    channel_id = str(ingested["ingestMessages"]["channel"]["id"])
    await trigger_digest(http, channel_id, None)
    await run_queued_jobs(settings)
    return channel_id


async def test_the_catch_up_page_ranks_cites_and_marks_read(
    settings: Settings, watched: Watched
) -> None:
    async with console_app(settings) as (base_url, http):
        dev = await _channel(http, settings, "dev", DEV)
        ops = await _channel(http, settings, "ops", OPS)
        page = watched.page
        await page.goto(f"{base_url}/#/catchup")
        await expect(page.get_by_role("heading", level=1, name="Catch-up")).to_be_visible()
        await page.get_by_label("Person or handle").fill("Ann")
        await page.get_by_label("Since (optional)").fill("2024-04-30T00:00")
        await page.get_by_role("button", name="Catch up").click()
        await expect(page).to_have_url(re.compile(r"#/catchup\?person=Ann&since=2024-04-"))

        sections = page.locator("section.catchup-channel")
        await expect(sections).to_have_count(2)
        # ops, where bob's question waits on ann, comes first; dev only names her.
        assert await sections.nth(0).get_attribute("data-channel-id") == ops
        assert await sections.nth(1).get_attribute("data-channel-id") == dev
        first = sections.nth(0)
        await expect(first.locator("h2")).to_contain_text("1. acme / ops")
        question = first.locator('li.catchup-entry[data-kind="QUESTION"]')
        await expect(question).to_have_count(1)
        await expect(question.locator("blockquote.evidence")).to_have_text(
            "ann, why does the staging database refuse connections after midnight?"
        )
        await expect(question.locator("figcaption")).to_contain_text("bob")
        # Chat markup is text: the quote shows it, no element is made from it.
        mention = sections.nth(1).locator('li.catchup-entry[data-kind="MENTION"] blockquote')
        await expect(mention).to_contain_text("<img src=x onerror=alert(1)>")
        assert await page.locator("section.catchup-channel img").count() == 0

        # The same catch-up downloads as a file, the channels in the page's order.
        async with page.expect_download() as downloading:
            await page.get_by_role("link", name="Download the catch-up as JSON").click()
        download = await downloading.value
        assert download.suggested_filename == "digestd-catchup-ann.json"
        exported = json.loads(Path(await download.path()).read_text(encoding="utf-8"))
        assert exported["format"] == "digestd.catchup/1" and exported["footnotes"]
        assert [c["channelId"] for c in exported["catchup"]["channels"]] == [ops, dev]

        # Mark ops read: the next catch-up without a start begins there.
        await first.get_by_role("button", name="Mark read").click()
        await expect(first.get_by_role("status")).to_contain_text("Read up to")
        data = await gql(
            http,
            'query { catchUp(person: "ann") { channels { channelId since } } }',
            {},
        )
        marked = {c["channelId"]: c["since"] for c in data["catchUp"]["channels"]}
        assert ops in marked and datetime.fromisoformat(marked[ops]) > START
    watched.assert_clean()
