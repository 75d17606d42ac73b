"""A catch-up as an HTML or JSON file: a hostile message and a hostile handle stay text, the
footnotes are numbered as the Markdown numbers them, and the JSON names its format."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from runner.catchup.handles import Handles
from runner.catchup.sections import CatchUp, ChannelInfo, SaidMessage, WeighedItem, sections
from runner.exports import html, json_export
from runner.exports.catchup import catch_up_document, catch_up_markdown
from runner.exports.store import catch_up_filename
from tests.support.exports import HOSTILE, parse_page

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def _hostile_catch_up() -> CatchUp:
    """Alice's catch-up where a message, its author, an item's text and owner are all HOSTILE."""
    handles = Handles.of([("alice", None)])
    channels = {1: ChannelInfo(1, HOSTILE, None, T0), 2: ChannelInfo(2, "dev", "acme", T0)}
    asked = SaidMessage(1, 2, "q1", HOSTILE, T0 + timedelta(minutes=1), 1, "alice: can you deploy?")
    mention = SaidMessage(2, 1, HOSTILE, HOSTILE, T0 + timedelta(minutes=2), 1, "alice " + HOSTILE)
    question = WeighedItem(9, 2, "question", "open", HOSTILE, HOSTILE, asked.at, asked, None)
    return CatchUp(
        "Alice",
        1,
        ("alice",),
        None,
        T0,
        T0 + timedelta(hours=1),
        tuple(sections(handles, channels, [mention, asked], [question])),
    )


def test_hostile_messages_and_handles_stay_text_in_the_html() -> None:
    page_text = html.render(catch_up_document(_hostile_catch_up()))
    page = parse_page(page_text)
    assert page.named("script") == [] and page.named("img") == []
    assert not any(key.startswith("on") for _, attrs in page.tags for key in attrs)
    assert "<script>" not in page_text and "\x1b" not in page_text
    # Shown as the characters they are (controls dropped), in the entries, the channel heading
    # and the footnotes' quotes and authors.
    shown = HOSTILE.replace("\x1b", "")
    assert page.text.count(shown) >= 4
    assert "default-src 'none'" in page_text
    # Every reference is a link to a footnote that exists, numbered from 1.
    notes = [a["id"] for a in page.named("li") if (a.get("id") or "").startswith("fn-")]
    assert notes == ["fn-1", "fn-2"]
    references = {a["href"] for a in page.named("a") if (a.get("href") or "").startswith("#fn-")}
    assert references == {"#fn-1", "#fn-2"}
    # Channels in rank order: the one with a question put to Alice first.
    headings = [a for a in page.tags if a[0] == "h2"]
    assert len(headings) == 3  # two channels and the sources
    assert page.text.index("acme / dev") < page.text.index("1 mention.")


def test_the_json_keeps_the_exact_text_and_numbers_footnotes_as_the_markdown() -> None:
    catch_up = _hostile_catch_up()
    document = json.loads(json_export.render(catch_up_document(catch_up)))
    assert document["format"] == "digestd.catchup/1"
    body = document["catchup"]
    assert body["person"] == "Alice" and body["known"] and body["since"] is None
    assert [c["channelName"] for c in body["channels"]] == ["dev", HOSTILE]
    question = body["channels"][0]["entries"][0]
    assert question["kind"] == "QUESTION" and question["text"] == HOSTILE
    assert question["owner"] == HOSTILE and question["citations"] == [1]
    footnotes = document["footnotes"]
    assert [n["number"] for n in footnotes] == [1, 2]
    assert footnotes[0]["quotes"][0]["text"] == "alice: can you deploy?"
    assert footnotes[1]["author"] == HOSTILE and footnotes[1]["messageId"] == HOSTILE
    assert footnotes[1]["channel"] == HOSTILE
    markdown = catch_up_markdown(catch_up)
    assert markdown.count("[^1]:") == 1 and markdown.count("[^2]:") == 1


def test_a_catch_up_file_name_keeps_only_safe_characters() -> None:
    assert catch_up_filename(HOSTILE, "html") == (
        "digestd-catchup-script-alert-1-script-heading-1-click-ja.html"
    )
    assert catch_up_filename("Åsa", "md") == "digestd-catchup-sa.md"
    assert catch_up_filename("../", "json") == "digestd-catchup-person.json"
