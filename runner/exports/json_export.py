"""An exported digest, report or catch-up as one versioned JSON document (`"format":
"digestd.digest/1"`, `"digestd.report/1"` or `"digestd.catchup/1"`), with the API's camelCase
names and global ids.

A digest: its fields (channel, window, signal, extractor), `overview` and `highlights` as
sentences each naming the footnotes it cites (`{"text", "citations": [1, 2]}`), `periods` (a
heading and sentences each), its items by kind (`decisions`, `actionItems`, ...), and
`footnotes`: each with its number, the cited words (`quotes`) and who, when and where. A report:
its question, writer and sections (heading and sentences) and the same footnotes (`[n]` is source
`Sn`). A catch-up (`"digestd.catchup/1"`): the person, where it starts, and its channels in rank
order, each with its counts and entries, each entry naming the footnotes that cite it. A consumer
may rely on the fields of a format version; new fields may be added within it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from runner.exports.model import ExportDocument, Footnote, Item, Section


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat() if moment else None


def _sentences(section: Section) -> list[dict[str, Any]]:
    return [{"text": s.text, "citations": list(s.footnotes)} for s in section.sentences]


def _item(item: Item) -> dict[str, Any]:
    value: dict[str, Any] = {"text": item.text, "messageIds": list(item.message_ids)}
    optional = {
        "owner": item.owner,
        "flags": list(item.flags) or None,
        "detail": item.detail,
        "where": item.where,
        "url": item.url,
        "kind": item.label,
    }
    value.update({key: v for key, v in optional.items() if v is not None})
    return value


def _footnote(note: Footnote) -> dict[str, Any]:
    quotes = [
        {"text": q.text, **({"locator": q.where} if q.where is not None else {})}
        for q in note.quotes
    ]
    if note.kind == "message":
        return {
            "number": note.number,
            "kind": "message",
            "messageId": note.message_id,
            "channel": note.channel,
            "author": note.author,
            "at": _iso(note.at),
            "quotes": quotes,
        }
    return {
        "number": note.number,
        "kind": "document",
        "documentIds": list(note.document_ids),
        "title": note.title,
        "url": note.url,
        "author": note.author,
        "publisher": note.publisher,
        "publishedAt": note.published,
        "quotes": quotes,
    }


def document_json(document: ExportDocument) -> dict[str, Any]:
    """The export as a JSON-ready dict (see the module docstring for its shape)."""
    body: dict[str, Any] = {
        "id": document.id or None,  # a catch-up of a person nobody stored has none
        "title": document.title,
        "createdAt": _iso(document.created_at),
        **document.fields,
    }
    if document.kind == "digest":
        by_key = {s.key: s for s in document.sections if s.key in ("overview", "highlights")}
        body["overview"] = _sentences(by_key["overview"]) if "overview" in by_key else []
        body["highlights"] = _sentences(by_key["highlights"]) if "highlights" in by_key else []
        body["periods"] = [
            {"heading": s.heading, "sentences": _sentences(s)}
            for s in document.sections
            if s.key == "period"
        ]
        for group in document.item_groups:
            body[group.key] = [_item(item) for item in group.items]
    elif document.kind == "report":
        body["sections"] = [
            {"heading": s.heading, "bullets": s.bullets, "sentences": _sentences(s)}
            for s in document.sections
        ]
    return {
        "format": document.format,
        document.kind: body,
        "footnotes": [_footnote(note) for note in document.footnotes],
    }


def render(document: ExportDocument) -> str:
    """The JSON text, indented for people, ending with a newline; non-ASCII kept as is."""
    return json.dumps(document_json(document), ensure_ascii=False, indent=2) + "\n"
