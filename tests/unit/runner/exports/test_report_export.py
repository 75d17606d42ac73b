"""A stored report as an export: its sections as stored, `[n]` its source `Sn`, a document
source's spans with their locators, and hostile titles and URLs shown as text."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from db.models import Report
from runner.exports import html, json_export
from runner.exports.store import report_document
from tests.support.exports import HOSTILE, parse_page


def _report() -> Report:
    return Report(
        id=7,
        job_id=None,
        question=HOSTILE,
        request={},
        cache_key="k",
        title=HOSTILE,
        sections=[
            {
                "heading": "Answer",
                "bullets": False,
                "sentences": [
                    {"text": HOSTILE, "source_ids": ["S1", "S2"], "citations": []},
                    {"text": "Rollbacks need approval.", "source_ids": ["S2"], "citations": []},
                ],
            }
        ],
        sources=[
            {
                "id": "S1",
                "kind": "message",
                "quote": "ship on Friday",
                "channel": "ops",
                "message_id": 3,
                "external_id": "m3",
                "revision": 1,
                "author": "ann",
                "ts": "2024-05-01T10:02:00+00:00",
                "char_start": 0,
                "char_end": 14,
                "spans": [{"quote": "ship on Friday", "char_start": 0, "char_end": 14}],
            },
            {
                "id": "S2",
                "kind": "document",
                "quote": HOSTILE,
                "document_id": "9",
                "title": HOSTILE,
                "url": "javascript:alert(1)",
                "source_text_hash": "h",
                "locator": "char:0-10",
                "author": HOSTILE,
                "publisher": None,
                "published_at": "2015-03-25",
                "group": None,
                "spans": [
                    {"quote": HOSTILE, "locator": "page:2:char:10-60", "document_id": "9"},
                    {"quote": "approval", "locator": "char:90-98", "document_id": "11"},
                ],
            },
        ],  # fmt: skip
        markdown="",
        audit={},
        writer="extractive-1",
        fidelity={},
        created_at=datetime(2024, 5, 2, tzinfo=UTC),
    )


def test_a_report_exports_its_sources_as_footnotes_with_every_span() -> None:
    document = json.loads(json_export.render(report_document(_report())))
    assert document["format"] == "digestd.report/1"
    report = document["report"]
    assert report["id"] == "UmVwb3J0Ojc=" and report["question"] == HOSTILE
    assert report["sections"][0]["sentences"] == [
        {"text": HOSTILE, "citations": [1, 2]},
        {"text": "Rollbacks need approval.", "citations": [2]},
    ]
    message, doc = document["footnotes"]
    assert message["quotes"] == [{"text": "ship on Friday"}] and message["channel"] == "ops"
    assert doc["documentIds"] == ["9", "11"] and doc["publishedAt"] == "2015-03-25"
    assert doc["quotes"] == [
        {"text": HOSTILE, "locator": "page:2:char:10-60"},
        {"text": "approval", "locator": "char:90-98"},
    ]


def test_a_report_page_shows_hostile_titles_and_urls_as_text() -> None:
    page = parse_page(html.render(report_document(_report())))
    assert page.named("script") == [] and page.named("img") == []
    hrefs = [a["href"] for a in page.named("a")]
    assert all(h and h.startswith("#") for h in hrefs), hrefs  # the javascript: URL is text
    assert "javascript:alert(1)" in page.text
    assert "page:2:char:10-60" in page.text and "documents 9, 11" in page.text
    assert [a["id"] for a in page.named("li") if a.get("id")] == ["fn-1", "fn-2"]
