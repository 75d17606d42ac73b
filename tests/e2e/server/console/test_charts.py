"""The console's pictures in Debian's Chromium (Playwright) against the real app, database and
worker, every non-loopback request aborted: a channel digested in two weeks shows its activity
per day and its topic and entity trends per week as charts whose drawn numbers (read from the
uPlot instance) are the API's; its conversations page lists the API's threads with their state
and participants and opens one with each reply under the message it answers; its entities page
lists the API's entities with their trend chart. Chat text and markup stay text."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from playwright.async_api import Page, expect

from server.settings import Settings
from tests.support.api import gql
from tests.support.browser import Watched
from tests.support.console import (
    INGEST,
    console_app,
    run_queued_jobs,
    seed_channel,
    trigger_digest,
)

pytestmark = pytest.mark.browser

SCREENSHOTS = {
    "channel": Path("/tmp/digestd-console-channel-charts.png"),
    "conversations": Path("/tmp/digestd-console-conversations.png"),
    "entities": Path("/tmp/digestd-console-entities.png"),
}
# A week after the sample (2025-03-10/11): the same tools again, so trends span two weeks.
FOLLOW_UP = [
    {
        "id": "w2-1",
        "author": "Ana Souza",
        "ts": "2025-03-18T09:00:00Z",
        "text": "The nightly ingest job ran clean all week since the retry with backoff; "
        "Grafana shows the upstream API p99 under 10s.",
    },
    {
        "id": "w2-2",
        "author": "Björn Lindqvist",
        "ts": "2025-03-18T09:04:00Z",
        "text": "Nice. Should we lower the kubectl rollout restart alert for the ingest worker?",
        "replyTo": "w2-1",
    },
    {
        "id": "w2-3",
        "author": "Ana Souza",
        "ts": "2025-03-18T09:06:00Z",
        "text": "Yes, lower it to 20 seconds in Grafana. <b>done</b>",
        "replyTo": "w2-2",
    },
    {
        "id": "w2-4",
        "author": "Priya Raman",
        "ts": "2025-03-19T14:00:00Z",
        "text": "The ingest worker on Kubernetes restarted twice today; kubectl logs show OOM.",
    },
]
CHANNEL = """query($id: ID!) { channel(id: $id) { name
  activity(days: 30) { day messageCount conversationCount digestCount } }
  topics(filter: {channelId: $id}, first: 20) { nodes { title mentionCount trend { week mentions } } }
  entities(filter: {channelId: $id}, first: 50) { nodes { id name kind mentionCount
    trend { week mentions } } }
  conversations(filter: {channelId: $id}, first: 25) { totalCount nodes { id title state
    participants messageCount } } }"""
THREAD = """query($c: ID!, $conv: ID!) { messages(filter: {channelId: $c, conversationId: $conv},
  first: 100) { nodes { id messageId normalizedText parent { id } } } }"""
DRAWN = """f => ({
  x: Array.from(f.uplot.data[0]),
  series: f.uplot.series.slice(1).map((s, i) => [s.label, Array.from(f.uplot.data[i + 1])]),
})"""


def day_seconds(day: str) -> int:
    return int(datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp())


def week_seconds(week: str) -> int:
    return int(datetime.strptime(f"{week}-1", "%G-W%V-%u").replace(tzinfo=UTC).timestamp())


def weekly(trends: list[tuple[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """What a weekly trend chart must draw: the union of the weeks, each line 0 where absent."""
    weeks = sorted({p["week"] for _, trend in trends for p in trend})
    return {
        "x": [week_seconds(w) for w in weeks],
        "series": [
            [label, [{p["week"]: p["mentions"] for p in trend}.get(w, 0) for w in weeks]]
            for label, trend in trends
        ],
    }


async def drawn(page: Page, name: str) -> dict[str, Any]:
    chart = page.locator(f'main figure.chart[data-chart="{name}"]')
    await expect(chart).to_have_attribute("data-ready", "true")
    result: dict[str, Any] = await chart.evaluate(DRAWN)
    return result


def depths(nodes: list[dict[str, Any]]) -> list[int]:
    """Each message's depth in its thread: 0 unless it answers a message of the same thread."""
    parent: dict[str, str | None] = {n["id"]: (n["parent"] or {}).get("id") for n in nodes}

    def depth(node_id: str) -> int:
        up = parent[node_id]
        return depth(up) + 1 if up is not None and up in parent else 0

    return [depth(n["id"]) for n in nodes]


async def test_channel_charts_conversations_and_entities_show_the_apis_numbers(
    db: asyncpg.Pool, settings: Settings, watched: Watched
) -> None:
    async with console_app(settings) as (base_url, http):
        channel_id, _ = await seed_channel(http, None)
        await trigger_digest(http, channel_id, None)
        await run_queued_jobs(settings)
        channel = {"name": "team-platform", "server": "acme"}
        await gql(http, INGEST, {"c": channel, "m": FOLLOW_UP})
        await trigger_digest(http, channel_id, None)
        await run_queued_jobs(settings)
        api = await gql(http, CHANNEL, {"id": channel_id})
        page = watched.page

        # The channel page: activity per day, the API's days and counts, drawn.
        await page.goto(f"{base_url}/#/channel/{channel_id}")
        activity = api["channel"]["activity"]
        assert len(activity) == 30 and activity[-1]["day"] == "2025-03-19"
        assert sum(d["digestCount"] > 0 for d in activity) == 4  # Mar 10, 11, 18, 19
        assert await drawn(page, "activity") == {
            "x": [day_seconds(d["day"]) for d in activity],
            "series": [
                ["Messages", [d["messageCount"] for d in activity]],
                ["Conversations", [d["conversationCount"] for d in activity]],
                ["Digests reading them", [d["digestCount"] for d in activity]],
            ],
        }
        # Topic trends: the five most mentioned recurring topics, per ISO week.
        topics = sorted(
            api["topics"]["nodes"], key=lambda t: (-t["mentionCount"], t["title"].casefold())
        )[:5]
        assert topics
        assert await drawn(page, "topics") == weekly([(t["title"], t["trend"]) for t in topics])
        # Entity trends: the five most mentioned entities (the API's order), per ISO week.
        entities = api["entities"]["nodes"]
        assert await drawn(page, "entities") == weekly(
            [(e["name"], e["trend"]) for e in entities[:5]]
        )
        assert any(len(e["trend"]) == 2 for e in entities[:5]), entities[:5]
        # The numbers are also a table, for screen readers and copying.
        table = page.locator('figure[data-chart="activity"] details.chart-data')
        await table.locator("summary").click()
        await expect(table.locator("tbody tr")).to_have_count(30)
        await expect(table.locator("tbody tr").last.locator("th")).to_have_text("2025-03-19")
        await table.locator("summary").click()
        await page.locator("section.channel-charts").scroll_into_view_if_needed()
        await page.screenshot(path=SCREENSHOTS["channel"], full_page=True)

        # Conversations: from the channel page, the API's threads, newest first.
        await page.get_by_role("link", name="Conversations", exact=True).click()
        await expect(
            page.get_by_role("heading", level=1, name="Conversations of team-platform")
        ).to_be_focused()
        conversations = api["conversations"]["nodes"]
        shown = page.locator("li.conversation")
        await expect(shown).to_have_count(len(conversations))
        assert await shown.locator(".conversation-title").all_text_contents() == [
            c["title"] for c in conversations
        ]
        assert await shown.evaluate_all("ls => ls.map(l => l.dataset.state)") == [
            c["state"] for c in conversations
        ]
        for entry, conversation in zip(await shown.all(), conversations, strict=True):
            await expect(entry.locator(".participants")).to_have_text(
                ", ".join(conversation["participants"]), use_inner_text=False
            )
        # The follow-up thread (w2-1 ← w2-2 ← w2-3, and what the reply model adds): opened,
        # each reply under the message it answers.
        index, thread = next(
            (i, c) for i, c in enumerate(conversations) if c["title"].startswith("The nightly")
        )
        entry = shown.nth(index)
        await entry.locator("summary").click()
        messages = (await gql(http, THREAD, {"c": channel_id, "conv": thread["id"]}))["messages"]
        nodes = messages["nodes"]
        assert [n["messageId"] for n in nodes][:3] == ["w2-1", "w2-2", "w2-3"]
        items = entry.locator("li.thread-message")
        await expect(items).to_have_count(thread["messageCount"])
        assert await items.evaluate_all("ls => ls.map(l => Number(l.dataset.depth))") == depths(
            nodes
        )
        assert depths(nodes)[:3] == [0, 1, 2]
        # Markup in a message is text.
        await expect(items.nth(2).locator(".message-text")).to_have_text(nodes[2]["normalizedText"])
        assert "<b>done</b>" in nodes[2]["normalizedText"]
        await expect(page.locator("main b, main img")).to_have_count(0)
        # By state: only the answered ones.
        await page.get_by_role("link", name="answered", exact=True).click()
        answered = (
            await gql(
                http,
                "query($f: ConversationFilter!) { conversations(filter: $f, first: 25) "
                "{ nodes { title state } } }",
                {"f": {"channelId": channel_id, "state": "ANSWERED"}},
            )
        )["conversations"]["nodes"]
        await expect(page.locator("li.conversation")).to_have_count(len(answered))
        await page.get_by_role("link", name="all", exact=True).click()
        await expect(page.locator("li.conversation")).to_have_count(len(conversations))
        await page.locator("li.conversation").nth(index).locator("summary").click()
        await page.screenshot(path=SCREENSHOTS["conversations"], full_page=True)

        # #/conversations without a channel asks for one (it used to be "Not found").
        await page.goto(f"{base_url}/#/conversations")
        await expect(page.get_by_role("heading", level=1, name="Conversations")).to_be_visible()
        await page.get_by_role("link", name="team-platform").click()
        await expect(page.locator("li.conversation")).to_have_count(len(conversations))

        # Entities: the API's, the most mentioned first, with their trend chart.
        await page.goto(f"{base_url}/#/entities?channel={channel_id}")
        await expect(
            page.get_by_role("heading", level=1, name="Entities of team-platform")
        ).to_be_focused()
        rows = page.locator("table.entities tbody tr")
        await expect(rows).to_have_count(len(entities))
        assert await rows.locator(".entity-name").all_text_contents() == [
            e["name"] for e in entities
        ]
        assert await rows.locator(".mention-count").all_text_contents() == [
            str(e["mentionCount"]) for e in entities
        ]
        assert await drawn(page, "entities") == weekly(
            [(e["name"], e["trend"]) for e in entities[:5]]
        )
        await page.screenshot(path=SCREENSHOTS["entities"], full_page=True)
        # A search by spelling narrows the list.
        wanted = entities[0]["name"]
        await page.get_by_label("Name, any spelling").fill(wanted.upper())
        await page.get_by_role("button", name="Find").click()
        await expect(rows.first.locator(".entity-name")).to_have_text(wanted)
        for shot in SCREENSHOTS.values():
            assert shot.stat().st_size > 20_000, shot
            print(f"console screenshot: {shot}")
    watched.assert_clean()
