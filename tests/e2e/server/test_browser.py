"""In a real browser (Debian's Chromium driven by Playwright) against the real app and database:
GraphiQL works offline and makes no request to any host but digestd's, with tokens on; and a
dashboard on another origin reads the API when DIGESTD_CORS_ORIGINS allows its origin and is
refused by the browser when it does not.

Every request to a host other than 127.0.0.1/localhost is aborted and recorded, and each test
asserts none was made. Skipped, saying why, where Chromium is not installed (.ci/run installs it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import asyncpg
import httpx
import pytest
from playwright.async_api import Browser, ConsoleMessage, expect
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route as StarletteRoute

from server.app import AppOptions, create_app
from server.settings import Settings
from tests.support.browser import TIMEOUT_MS, loopback_only, secured
from tests.support.database import add_channel, messages
from tests.support.servers import running_server

pytestmark = pytest.mark.browser


INGEST = """mutation($c: ChannelInput!, $m: [MessageInput!]!) { ingestMessages(channel: $c, messages: $m) {
  ... on IngestResult { accepted } } }"""
CHANNELS = "{ channels { nodes { id name } } }"


def _keep_text(lines: list[str]) -> Callable[[ConsoleMessage], None]:
    """A console listener that appends each message's text to `lines`."""
    return lambda message: lines.append(message.text)


async def test_graphiql_runs_a_query_offline_with_a_pasted_token(
    db: asyncpg.Pool, settings: Settings, browser: Browser, tmp_path: Path
) -> None:
    app = create_app(secured(settings), AppOptions(run_workers=0))
    async with running_server(app) as base_url:
        async with httpx.AsyncClient(base_url=base_url) as http:
            channel = {"server": "digestd", "externalId": "c1", "name": "release-planning"}
            message = {
                "id": "m1",
                "author": "ana",
                "ts": "2024-05-01T10:00:00Z",
                "text": "Ship 1.2 on Friday.",
            }
            ingested = await http.post(
                "/graphql",
                json={"query": INGEST, "variables": {"c": channel, "m": [message]}},
                headers={"authorization": "Bearer writer-token-1"},
            )
            assert ingested.json()["data"]["ingestMessages"] == {"accepted": 1}, ingested.text
        page = await browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        blocked = await loopback_only(page)
        policy_violations: list[str] = []
        page.on(
            "console",
            lambda m: (
                policy_violations.append(m.text) if "Content Security Policy" in m.text else None
            ),
        )

        await page.goto(f"{base_url}/graphql?q={CHANNELS}")
        run = page.locator(".graphiql-execute-button")
        await expect(run).to_be_visible()
        result = page.locator(".graphiql-response")

        # No token yet: the page loaded, the API refuses.
        await run.click()
        await expect(result).to_contain_text("UNAUTHENTICATED")

        # The user pastes the header into the Headers tab and runs again.
        await page.get_by_role("button", name="Headers").click()
        await page.locator(
            ".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror"
        ).last.click()
        await page.keyboard.insert_text('{"Authorization": "Bearer reader-token-1"}')
        await run.click()
        await expect(result).to_contain_text('"name": "release-planning"')
        shown = json.loads(
            await result.locator(".CodeMirror").evaluate("e => e.CodeMirror.getValue()")
        )
        assert shown["data"]["channels"]["nodes"][0]["name"] == "release-planning"

        # The schema, refused before the token was there, loads with it; the explorer plugin
        # lists its root fields.
        await page.get_by_role("button", name="Re-fetch GraphQL schema").click()
        await page.get_by_role("button", name="Show GraphiQL Explorer").click()
        await expect(page.locator(".graphiql-explorer-root")).to_contain_text("channels")

        screenshot = tmp_path / "graphiql.png"
        await page.screenshot(path=screenshot)
        print(f"GraphiQL screenshot: {screenshot}")
        assert screenshot.stat().st_size > 30_000
        assert blocked == [], f"the page requested other hosts: {blocked}"
        assert policy_violations == []


async def test_graphiql_follows_a_job_over_a_subscription(
    db: asyncpg.Pool, settings: Settings, browser: Browser
) -> None:
    """jobProgress in GraphiQL: over a WebSocket to digestd (allowed by the page's policy),
    authenticated by the token pasted in the Headers tab, showing each state as it comes."""
    app = create_app(secured(settings), AppOptions(run_workers=0))
    async with running_server(app) as base_url, httpx.AsyncClient(base_url=base_url) as http:
        channel_id = await add_channel(
            db, "release-planning", messages([("ana", "Ship 1.2 on Friday.")])
        )
        writer = {"authorization": "Bearer writer-token-1"}
        trigger = "mutation($id: ID!) { triggerDigest(channelId: $id) { ... on DigestJob { id } } }"
        triggered = await http.post(
            "/graphql",
            json={"query": trigger, "variables": {"id": str(channel_id)}},
            headers=writer,
        )
        job_id = triggered.json()["data"]["triggerDigest"]["id"]
        page = await browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        blocked = await loopback_only(page)
        policy_violations: list[str] = []
        page.on(
            "console",
            lambda m: (
                policy_violations.append(m.text) if "Content Security Policy" in m.text else None
            ),
        )

        subscription = f'subscription {{ jobProgress(id: "{job_id}") {{ id status }} }}'
        await page.goto(f"{base_url}/graphql?q={quote(subscription)}")
        await page.get_by_role("button", name="Headers").click()
        await page.locator(
            ".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror"
        ).last.click()
        await page.keyboard.insert_text('{"Authorization": "Bearer reader-token-1"}')
        await page.locator(".graphiql-execute-button").click()
        result = page.locator(".graphiql-response")
        await expect(result).to_contain_text('"status": "QUEUED"')

        cancel = "mutation($id: ID!) { cancelJob(id: $id) { ... on DigestJob { status } } }"
        await http.post(
            "/graphql", json={"query": cancel, "variables": {"id": job_id}}, headers=writer
        )
        await expect(result).to_contain_text('"status": "CANCELLED"')
        assert blocked == [], f"the page requested other hosts: {blocked}"
        assert policy_violations == []


DASHBOARD_PAGE = """<!doctype html><html><body><pre id="out">waiting</pre><script>
fetch(new URLSearchParams(location.search).get("api") + "/graphql", {
  method: "POST",
  headers: {"content-type": "application/json", "authorization": "Bearer reader-token-1"},
  body: JSON.stringify({query: "{ channels { nodes { id } } }"}),
}).then(r => r.json()).then(
  data => { document.getElementById("out").textContent = "data " + JSON.stringify(data); },
  error => { document.getElementById("out").textContent = "refused " + error; },
);
</script></body></html>"""


async def dashboard(request: Request) -> HTMLResponse:
    return HTMLResponse(DASHBOARD_PAGE)


async def test_a_dashboard_on_another_origin_reads_the_api_only_when_allowed(
    db: asyncpg.Pool, settings: Settings, browser: Browser
) -> None:
    """The dashboard server is reached as 127.0.0.1 (allowed) and as localhost (another origin,
    not allowed); the API is a third origin (another port). A last visit points the dashboard
    at a non-loopback host, to show the guard aborts such a request and says so."""
    dashboards = Starlette(routes=[StarletteRoute("/", dashboard)])
    async with running_server(dashboards) as dashboard_url:
        other_origin = dashboard_url.replace("127.0.0.1", "localhost")
        app = create_app(
            secured(settings, digestd_cors_origins=dashboard_url), AppOptions(run_workers=0)
        )
        async with running_server(app) as api_url:
            visits = {
                "allowed": f"{dashboard_url}/?api={api_url}",
                "other origin": f"{other_origin}/?api={api_url}",
                "remote api": f"{dashboard_url}/?api=http://api.example",
            }
            shown: dict[str, str] = {}
            console: dict[str, list[str]] = {}
            blocked: dict[str, list[str]] = {}
            for visit, url in visits.items():
                page = await browser.new_page()
                page.set_default_timeout(TIMEOUT_MS)
                blocked[visit] = await loopback_only(page)
                console[visit] = []
                page.on("console", _keep_text(console[visit]))
                await page.goto(url)
                await expect(page.locator("#out")).not_to_have_text("waiting")
                shown[visit] = await page.locator("#out").inner_text()
                await page.close()
    assert shown["allowed"] == 'data {"data":{"channels":{"nodes":[]}}}', shown
    assert shown["other origin"].startswith("refused TypeError"), shown
    assert any("blocked by CORS policy" in line for line in console["other origin"]), console
    assert blocked["allowed"] == [] and blocked["other origin"] == [], blocked
    assert blocked["remote api"] == ["http://api.example/graphql"], blocked
    assert shown["remote api"].startswith("refused TypeError"), shown
