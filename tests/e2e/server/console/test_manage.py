"""Managing digestd from the web console (Debian's Chromium through Playwright, the real app and
database, every non-loopback request aborted): uploading a chat export and a document, adding,
pausing, resuming and deleting a schedule, deleting a channel's data after two confirmations
(an admin token only), and searching knowledge items of one channel. A screenshot of each page
is saved in the test's own folder (tmp_path)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import asyncpg
import httpx
import pytest
from playwright.async_api import Dialog, FilePayload, Page, expect
from pydantic import SecretStr

from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.api import gql
from tests.support.browser import Watched
from tests.support.console import DOCUMENT_TEXT, run_queued_jobs, seed_channel, trigger_digest
from tests.support.database import row_id
from tests.support.manage import ADMIN, ROLE_TOKENS, WRITER, channel_rows, slack_zip
from tests.support.servers import running_server

pytestmark = pytest.mark.browser

IRC_LOG = b"""[09:00] <ana> the deploy of the billing service failed at the migration step
[09:01] <kenji> ana: run `make migrate-status` first, it shows the stuck lock
[09:02] * lena has joined #ops
[09:03] <ana> that worked, thanks
"""
INGEST = """mutation($c: ChannelInput!, $m: [MessageInput!]!) { ingestMessages(channel: $c, messages: $m) {
  ... on IngestResult { channel { id } } } }"""
BACKUP_MESSAGES = [
    {
        "id": "b1",
        "author": "Lena",
        "ts": "2025-03-11T10:00:00Z",
        "text": "Fixed: to restart the backup agent run "
        "`systemctl restart restic-backup.service` and watch the logs.",
    },
    {"id": "b2", "author": "Omar", "ts": "2025-03-11T10:01:00Z", "text": "thanks, that worked"},
]
ITEMS = """query($c: ID) { knowledgeItems(filter: {channelId: $c}, first: 100) { nodes { id } } }"""


@pytest.fixture
async def served(
    db: asyncpg.Pool, settings: Settings
) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    secured = settings.model_copy(update={"digestd_api_tokens": SecretStr(ROLE_TOKENS)})
    app = create_app(secured, AppOptions(run_workers=0))
    async with (
        running_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, timeout=60) as http,
    ):
        yield base_url, http


async def use_token(page: Page, token: str) -> None:
    await page.get_by_label("API token").fill(token)
    await page.get_by_role("button", name="Use token").click()


def answer_dialogs(page: Page, answers: list[bool]) -> list[str]:
    """Answers the next dialogs in order (True: OK, False: Cancel); returns their messages."""
    seen: list[str] = []

    async def answer(dialog: Dialog) -> None:
        seen.append(dialog.message)
        await (dialog.accept() if answers.pop(0) else dialog.dismiss())

    page.on("dialog", answer)
    return seen


async def test_upload_a_chat_export_then_a_document(
    served: tuple[str, httpx.AsyncClient], watched: Watched, tmp_path: Path
) -> None:
    base_url, _ = served
    page = watched.page
    await page.goto(f"{base_url}/#/upload")
    await use_token(page, WRITER)
    await expect(page.get_by_role("heading", level=1, name="Add data")).to_be_visible()
    await page.get_by_label("Export file").set_input_files(
        files=[FilePayload(name="ops-chat.log", mimeType="text/plain", buffer=IRC_LOG)]
    )
    await expect(page.get_by_label("Channel name")).to_have_value("ops-chat")
    await page.get_by_role("button", name="Import").click()
    report = page.locator(".import-report")
    await expect(report).to_contain_text("imported ops-chat.log (irc): 3 accepted, 0 rejected")
    await expect(report).to_contain_text("Skipped on purpose: 1 system line.")
    await report.get_by_text("Repaired records (first 3 records)").click()
    await expect(report.locator("ul.repaired li")).to_have_count(3)
    await page.screenshot(path=str(tmp_path / "upload.png"), full_page=True)

    await page.get_by_label("Document file").set_input_files(
        files=[FilePayload(name="notes.txt", mimeType="text/plain", buffer=DOCUMENT_TEXT.encode())]
    )
    await page.get_by_label("Title (optional)").fill("Ingest release notes")
    await page.get_by_role("button", name="Upload").click()
    await expect(page.get_by_text("Stored “Ingest release notes” (text/plain")).to_be_visible()
    await expect(page.get_by_role("link", name="Open it to digest it for a query")).to_be_visible()

    await page.get_by_role("button", name="Digest ops-chat now").click()
    await expect(page).to_have_url(re.compile(r"#/job/"))
    await page.get_by_role("link", name="Channels", exact=True).click()
    row = page.locator("tr", has=page.get_by_role("link", name="ops-chat"))
    await expect(row.locator(".message-count")).to_have_text("3")
    watched.assert_clean()


async def test_upload_a_slack_zip_each_channel_keeps_its_name(
    served: tuple[str, httpx.AsyncClient], watched: Watched
) -> None:
    base_url, _ = served
    page = watched.page
    await page.goto(f"{base_url}/#/upload")
    await use_token(page, WRITER)
    await page.get_by_label("Export file").set_input_files(
        files=[FilePayload(name="workspace.zip", mimeType="application/zip", buffer=slack_zip())]
    )
    await expect(page.get_by_label("Channel name")).to_have_value("")
    await page.get_by_role("button", name="Import").click()
    report = page.locator(".import-report")
    await expect(report).to_contain_text("imported workspace.zip (slack): 3 accepted, 0 rejected")
    await expect(report.get_by_role("button", name="Digest general now")).to_be_visible()
    await expect(report.get_by_role("button", name="Digest random now")).to_be_visible()
    watched.assert_clean()


async def test_a_bad_upload_says_why(
    served: tuple[str, httpx.AsyncClient], watched: Watched
) -> None:
    base_url, _ = served
    page = watched.page
    await page.goto(f"{base_url}/#/upload")
    await use_token(page, WRITER)
    await page.get_by_label("Export file").set_input_files(
        files=[
            FilePayload(name="chat.html", mimeType="text/html", buffer=b"<html><p>hi</p></html>")
        ]
    )
    await page.get_by_role("button", name="Import").click()
    await expect(page.get_by_role("alert")).to_contain_text("chat.html is HTML")
    watched.assert_clean()


async def test_schedule_create_pause_resume_delete(
    served: tuple[str, httpx.AsyncClient], watched: Watched, db: asyncpg.Pool, tmp_path: Path
) -> None:
    base_url, http = served
    channel_id, _ = await seed_channel(http, WRITER)
    page = watched.page
    await page.goto(f"{base_url}/#/channel/{quote(channel_id, safe='')}")
    await use_token(page, WRITER)
    await expect(page.get_by_text("No schedule yet: add one below")).to_be_visible()
    await page.get_by_label("Cron").fill("0 9 * * 1-5")
    await page.get_by_label("Time zone").fill("Europe/Berlin")
    await page.get_by_role("button", name="Add schedule").click()
    row = page.locator("tr[data-schedule]")
    await expect(row.locator("th")).to_have_text("0 9 * * 1-5")
    await expect(row.locator(".schedule-next")).not_to_have_text("paused")

    await row.get_by_role("button", name="Pause").click()
    await expect(row.locator(".schedule-next")).to_have_text("paused")
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT paused FROM schedules") is True
    await page.locator("caption", has_text="1 schedule").scroll_into_view_if_needed()
    await page.screenshot(path=str(tmp_path / "schedules.png"))
    await row.get_by_role("button", name="Resume").click()
    await expect(row.locator(".schedule-next")).not_to_have_text("paused")

    # A bad expression is refused with the API's reason, and nothing is added.
    await page.get_by_label("Cron").fill("every morning")
    await page.get_by_role("button", name="Add schedule").click()
    await expect(page.locator(".schedule-status")).to_contain_text("cron")
    await expect(page.locator("tr[data-schedule]")).to_have_count(1)

    messages = answer_dialogs(page, [False, True])
    await row.get_by_role("button", name="Delete").click()  # cancelled: it stays
    await expect(page.locator("tr[data-schedule]")).to_have_count(1)
    await row.get_by_role("button", name="Delete").click()
    await expect(page.get_by_text("No schedule yet: add one below")).to_be_visible()
    assert messages[0].startswith("Delete the schedule “0 9 * * 1-5” (Europe/Berlin)?"), messages
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM schedules") == 0
    watched.assert_clean()


async def test_delete_a_channel_after_two_confirmations_with_an_admin_token(
    served: tuple[str, httpx.AsyncClient],
    watched: Watched,
    db: asyncpg.Pool,
    settings: Settings,
    tmp_path: Path,
) -> None:
    base_url, http = served
    channel_id, count = await seed_channel(http, WRITER)
    other = await gql(http, INGEST, {"c": {"name": "backups"}, "m": BACKUP_MESSAGES}, WRITER)
    other_id = other["ingestMessages"]["channel"]["id"]
    await trigger_digest(http, channel_id, WRITER)
    await run_queued_jobs(settings)
    other_before = await channel_rows(db, row_id(other_id))
    page = watched.page
    await page.goto(f"{base_url}/#/channel/{quote(channel_id, safe='')}")
    await use_token(page, WRITER)
    start = page.get_by_role("button", name="Delete this channel's data…")
    confirm = page.get_by_label("Type the channel's name to confirm")
    really = page.get_by_role("button", name="Delete for good")

    messages = answer_dialogs(page, [False, True, True])
    await start.click()  # the first question, answered Cancel: nothing more is asked
    await expect(confirm).to_have_count(0)
    await start.click()
    assert f"{count} messages" in messages[0] and "“team-platform”" in messages[0], messages
    await confirm.fill("team-platfor")
    await expect(really).to_be_disabled()
    await confirm.fill("team-platform")
    await expect(really).to_be_enabled()
    await really.click()  # a writer's token: refused, nothing deleted
    await expect(page.get_by_role("alert")).to_contain_text("needs an admin token")
    assert (await channel_rows(db, row_id(channel_id)))["messages"] == count

    await use_token(page, ADMIN)
    await start.click()
    await confirm.fill("team-platform")
    await page.screenshot(path=str(tmp_path / "delete-channel.png"), full_page=True)
    await really.click()
    await expect(page).to_have_url(re.compile(r"#/channels$"))
    await expect(
        page.get_by_role("status").filter(has_text="Deleted the channel “team-platform”")
    ).to_be_visible()
    await expect(page.get_by_role("link", name="team-platform")).to_have_count(0)
    await expect(page.get_by_role("link", name="backups")).to_be_visible()
    assert set((await channel_rows(db, row_id(channel_id))).values()) == {0}
    assert await channel_rows(db, row_id(other_id)) == other_before
    watched.assert_clean()


async def test_search_knowledge_items_of_one_channel(
    served: tuple[str, httpx.AsyncClient], watched: Watched, settings: Settings, tmp_path: Path
) -> None:
    base_url, http = served
    channel_id, _ = await seed_channel(http, WRITER)
    other = await gql(http, INGEST, {"c": {"name": "backups"}, "m": BACKUP_MESSAGES}, WRITER)
    other_id = other["ingestMessages"]["channel"]["id"]
    await trigger_digest(http, channel_id, WRITER)
    await trigger_digest(http, other_id, WRITER)
    await run_queued_jobs(settings)
    mine = len((await gql(http, ITEMS, {"c": channel_id}, WRITER))["knowledgeItems"]["nodes"])
    theirs = len((await gql(http, ITEMS, {"c": other_id}, WRITER))["knowledgeItems"]["nodes"])
    assert mine > 0 and theirs > 0, (mine, theirs)

    page = watched.page
    await page.goto(f"{base_url}/#/search")
    await use_token(page, WRITER)
    items = page.locator("li.knowledge-item")
    for name, shown, expected in (
        ("backups", "backups", theirs),
        ("acme / team-platform", "acme / team-platform", mine),
    ):
        await page.get_by_label("Channel").select_option(label=name)
        await page.get_by_role("button", name="Search").click()
        await expect(page.get_by_role("heading", level=2)).to_have_text(
            f"{expected} item{'' if expected == 1 else 's'}"
        )
        await expect(items).to_have_count(expected)
        sources = await items.locator(".item-source a").first.all_inner_texts()
        assert sources == [shown], sources
        for source in await items.locator(".item-source").all_inner_texts():
            assert source.startswith(f"From {shown} ·"), source
    await page.screenshot(path=str(tmp_path / "search.png"), full_page=True)
    assert "channel=" in page.url
    # Words across every channel: each result names its own channel.
    await page.get_by_label("Channel").select_option(label="every channel")
    await page.get_by_label("Words").fill("systemctl")
    await page.get_by_role("button", name="Search").click()
    await expect(items.first.locator(".item-source")).to_contain_text("From backups")
    watched.assert_clean()


async def test_delete_a_digest_after_two_confirmations_with_an_admin_token(
    served: tuple[str, httpx.AsyncClient],
    watched: Watched,
    db: asyncpg.Pool,
    settings: Settings,
) -> None:
    base_url, http = served
    channel_id, count = await seed_channel(http, WRITER)
    job_id = await trigger_digest(http, channel_id, WRITER)
    await run_queued_jobs(settings)
    job = await gql(http, "query($id: ID!) { job(id: $id) { digestId } }", {"id": job_id}, WRITER)
    digest_id = job["job"]["digestId"]
    number = str(row_id(digest_id))
    page = watched.page
    await page.goto(f"{base_url}/#/digest/{quote(digest_id, safe='')}")
    await use_token(page, ADMIN)
    start = page.get_by_role("button", name="Delete this digest…")
    confirm = page.get_by_label("Type the digest's number to confirm")
    really = page.get_by_role("button", name="Delete for good")

    messages = answer_dialogs(page, [False, True])
    await start.click()  # cancelled at the first question
    await expect(confirm).to_have_count(0)
    await start.click()
    assert "messages stay" in messages[-1] and "reads them again" in messages[-1], messages
    await confirm.fill(number + "0")
    await expect(really).to_be_disabled()
    await confirm.fill(number)
    await really.click()
    await expect(page).to_have_url(re.compile(r"#/channel/"))
    await expect(
        page.get_by_role("status").filter(has_text=f"Deleted digest {number}")
    ).to_be_visible()
    async with db.acquire() as connection:
        assert await connection.fetchval("SELECT count(*) FROM digests") == 0
        # Its messages are the channel's again: the next digest reads them.
        channel = await connection.fetchrow(
            "SELECT count(*) AS n FROM messages WHERE channel_id = $1", row_id(channel_id)
        )
    assert channel is not None and channel["n"] == count
    await expect(page.locator(".facts")).to_contain_text(f"Not yet digested{count}")
    watched.assert_clean()
