"""The JSON export: a versioned document with the digest's sentences and their citations, its
items and its footnotes with the cited words, every stored text a plain string."""

from __future__ import annotations

import json

from runner.exports.json_export import render
from tests.support.exports import HOSTILE, hostile_digest


def test_a_digest_is_versioned_json_with_sentences_items_and_quoted_footnotes() -> None:
    document = json.loads(render(hostile_digest()))
    assert document["format"] == "digestd.digest/1"
    digest = document["digest"]
    assert digest["id"] == "RGlnZXN0OjE=" and digest["title"] == HOSTILE
    assert digest["overview"] == [
        {"text": HOSTILE, "citations": [1]},
        {"text": "Plain words.", "citations": [2]},
    ]
    assert digest["highlights"] == [{"text": HOSTILE, "citations": [1, 2]}]
    assert digest["periods"] == [] and digest["topics"] == []
    assert digest["actionItems"] == [{"text": HOSTILE, "messageIds": [], "owner": HOSTILE}]
    assert digest["links"][0]["url"] == "javascript:alert(4)"  # data, shown as text, never a link
    assert [note["number"] for note in document["footnotes"]] == [1, 2]
    assert document["footnotes"][1] == {
        "number": 2,
        "kind": "message",
        "messageId": "m2",
        "channel": "ops",
        "author": "bob",
        "at": "2024-05-01T10:02:00+00:00",
        "quotes": [{"text": "the staging deploy passed"}],
    }


def test_every_citation_names_a_footnote() -> None:
    document = json.loads(render(hostile_digest()))
    numbers = {note["number"] for note in document["footnotes"]}
    cited = {
        n
        for key in ("overview", "highlights")
        for sentence in document["digest"][key]
        for n in sentence["citations"]
    }
    assert cited == numbers
