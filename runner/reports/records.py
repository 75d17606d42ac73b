"""A report as the JSON stored with it (db/migrations/0005_reports.sql) and its cache key.

`sections`: [{heading, bullets, sentences: [{text, source_ids}]}]; `sources`: the registry in id
order, each {id, kind, quote, ...}: a message source with its channel, messages row, external
id, revision, author, ts and the span `char_start`/`char_end` of that revision's text; a document
source with its document id, title, source_text_hash and locator. A stored report is read back
as the same `Report` (`report_from_json`), so its Markdown and audit can be rebuilt and checked.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from runner.grounding.footnotes import FootnotedSentence, Section
from runner.reports.report import Report, ReportSection
from runner.reports.sources import DocumentSource, MessageSource, ReportSource


def source_json(identifier: str, source: ReportSource) -> dict[str, Any]:
    if isinstance(source, MessageSource):
        return {
            "id": identifier,
            "kind": "message",
            "quote": source.quote,
            "channel": source.channel,
            "message_id": source.row_id,
            "external_id": source.message_id,
            "revision": source.revision,
            "author": source.author,
            "ts": source.ts.isoformat(),
            "char_start": source.char_start,
            "char_end": source.char_end,
        }
    return {
        "id": identifier,
        "kind": "document",
        "quote": source.quote,
        "document_id": source.document_id,
        "title": source.title,
        "source_text_hash": source.source_text_hash,
        "locator": source.locator,
    }


def report_json(report: Report) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(sections, sources) of a report, sources numbered by first appearance."""
    registry = report.registry()
    sections = [
        {
            "heading": section.heading,
            "bullets": section.bullets,
            "sentences": [
                {
                    "text": sentence.sentence,
                    "source_ids": list(
                        dict.fromkeys(
                            registry.find_by_key(source.key) for source in sentence.sources
                        )
                    ),
                }
                for sentence in section.sentences
            ],
        }
        for section in report.sections
    ]
    return sections, [source_json(identifier, source) for identifier, source in registry]


def _source(entry: dict[str, Any], message_texts: dict[tuple[int, int], str]) -> ReportSource:
    if entry["kind"] == "document":
        return DocumentSource(
            str(entry["document_id"]),
            str(entry["title"]),
            str(entry["source_text_hash"]),
            str(entry["locator"]),
            str(entry["quote"]),
        )
    row, revision = int(entry["message_id"]), int(entry["revision"])
    return MessageSource(
        channel=str(entry["channel"]),
        message_id=str(entry["external_id"]),
        revision=revision,
        author=str(entry["author"]),
        ts=datetime.fromisoformat(entry["ts"]),
        text=message_texts[(row, revision)],
        char_start=int(entry["char_start"]),
        char_end=int(entry["char_end"]),
        row_id=row,
    )


def report_from_json(
    question: str,
    title: str,
    sections: list[dict[str, Any]],
    sources: list[dict[str, Any]],
    message_texts: dict[tuple[int, int], str],
) -> Report:
    """The stored report as a `Report`; `message_texts` holds the text of each cited message
    revision by (messages row, revision)."""
    by_id = {str(entry["id"]): _source(entry, message_texts) for entry in sources}
    rebuilt: list[ReportSection] = []
    for section in sections:
        sentences = tuple(
            FootnotedSentence(
                str(sentence["text"]), tuple(by_id[i] for i in sentence["source_ids"])
            )
            for sentence in section["sentences"]
        )
        rebuilt.append(Section(section["heading"], sentences, bool(section["bullets"])))
    return Report(question, title, tuple(rebuilt))


# How a report's Markdown is written (runner.grounding.footnotes, runner.core.markdown_text): part of the cache
# key, so a report stored before a change of the Markdown is written again, not served as it was.
MARKDOWN_VERSION = "escaped-1"


def report_cache_key(
    question: str,
    message_revisions: list[tuple[int, list[tuple[int, int]]]],
    document_texts: list[tuple[int, str]],
    settings: dict[str, Any],
    writer: str,
    digests: list[tuple[int, list[int]]] | None = None,
) -> str:
    """sha256 of what a report is a function of: the question, the exact message revisions read
    per channel ((channel, [(row, revision)])), the digests whose claims were read per channel
    ((channel, [digest id])), each document's canonical-text hash, the settings, the
    writer's version and the Markdown's. Equal keys give the same report."""
    material = {
        "question": " ".join(question.split()),
        "messages": [
            [channel, [list(pair) for pair in pairs]] for channel, pairs in message_revisions
        ],
        "digests": [[channel, ids] for channel, ids in digests or []],
        "documents": [list(pair) for pair in document_texts],
        "settings": settings,
        "writer": writer,
        "markdown": MARKDOWN_VERSION,
    }
    encoded = json.dumps(material, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(encoded).hexdigest()
