"""A channel digested across several days: each day stored with its own cited overview, read
back through GraphQL (footnotes in the digest's one numbering) and in the Markdown digest."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import asyncpg

from runner.exports.markdown import render_digest
from schema.types.ids import DIGEST, global_id
from tests.support.database import Msg, add_channel
from tests.support.digests import DAY_EXCHANGES, digest_once
from tests.support.schema import gql

START = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)

PERIODS = """query($id: ID!) { digest(id: $id) {
    messageCount
    overviewSentences { citations { messageId footnote } }
    highlightSentences { citations { messageId footnote } }
    periods { granularity label start end messageCount conversationCount
              overview { text citations { messageId quote footnote } } } } }"""


def _messages() -> list[Msg]:
    items: list[Msg] = []
    for day, (asked, answered, closed) in enumerate(DAY_EXCHANGES):
        at = START + timedelta(days=day)
        lines = [("ann", asked), ("bob", f"ann: {answered}"), ("ann", f"bob: {closed}")]
        lines.append(("cem", "ann: good to know, I will note that in the runbook for the team"))
        for position, (author, text) in enumerate(lines):
            ts = at + timedelta(minutes=2 * position)
            # Replies as a client records them, so the day's exchange is one conversation.
            reply_to = f"d{day}-{position - 1}" if position else None
            items.append(Msg(f"d{day}-{position}", author, ts, text, reply_to))
    return items


async def test_each_day_of_a_backlog_is_told_with_its_own_cited_overview(
    db: asyncpg.Pool, database_url: str
) -> None:
    items = _messages()
    channel = await add_channel(db, "ops-days", items)
    done = await digest_once(db, database_url, channel)
    assert done.status == "succeeded" and done.digest_id is not None
    digest = (await gql(db, PERIODS, id=global_id(DIGEST, done.digest_id)))["digest"]
    periods = digest["periods"]
    assert [p["label"] for p in periods] == ["2024-05-06", "2024-05-07", "2024-05-08"]
    assert {p["granularity"] for p in periods} == {"DAY"}
    assert [(p["start"], p["end"]) for p in periods][0] == ("2024-05-06", "2024-05-06")
    assert sum(p["messageCount"] for p in periods) == digest["messageCount"] == len(items)
    texts = {m.external_id: m.text for m in items}
    sent_on = {m.external_id: m.ts.date().isoformat() for m in items}
    numbers: dict[str, int] = {}
    for section in (digest["overviewSentences"], digest["highlightSentences"]):
        for sentence in section:
            for citation in sentence["citations"]:
                numbers.setdefault(citation["messageId"], citation["footnote"])
    for period, (asked, _, _) in zip(periods, DAY_EXCHANGES, strict=True):
        assert period["conversationCount"] >= 1
        assert period["overview"], f"{period['label']} told nothing"
        assert asked[:20] in period["overview"][0]["text"]
        for sentence in period["overview"]:
            for citation in sentence["citations"]:
                # The exact characters of a message of that very day.
                assert citation["quote"] in texts[citation["messageId"]]
                assert sent_on[citation["messageId"]] == period["start"]
                # One numbering for the whole digest: a message keeps its number everywhere.
                number = numbers.setdefault(citation["messageId"], citation["footnote"])
                assert number == citation["footnote"]
    assert sorted(set(numbers.values())) == list(range(1, len(numbers) + 1))
    async with db.acquire() as connection:
        markdown = await render_digest(connection, done.digest_id)
    headings = re.findall(r"^## (2024-05-0\d): (\d+) messages", markdown, flags=re.M)
    assert headings == [("2024-05-06", "4"), ("2024-05-07", "4"), ("2024-05-08", "4")]
    assert "[^" in markdown.split("## 2024-05-08", 1)[1]
