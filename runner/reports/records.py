"""A report as the JSON stored with it (db/migrations/0005_reports.sql) and its cache key.

`sections`: [{heading, bullets, sentences: [{text, source_ids, citations: [{source_id, span}]}]}]
(`span`: the index of the cited span under its source); `sources`: the registry in id order,
each {id, kind, quote, ..., spans, sections, citation_count}: a message source with its channel,
messages row, external id, revision, author, ts and the span `char_start`/`char_end` of that
revision's text; a document source with its document id, title, url, source_text_hash and
locator (each span has its own: near-duplicates are one source), author, publisher,
published_at (ISO date) and group (the near-duplicate group's document id); the top-level quote and span are the first of `spans` (each {quote, char_start,
char_end} or {quote, locator}), `sections` the headings citing it, `citation_count` how many
(sentence, span) pairs point at it, and `credibility_score` / `relevance_score` (floats in
[0, 1], `runner.reports.source_scores`; absent from a report stored before them, which reads
back unscored). A report stored before sources had spans reads back too:
each source its one span. A stored report is read back
as the same `Report` (`report_from_json`), so its Markdown and audit can be rebuilt and checked.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date, datetime
from typing import Any

from runner.grounding.footnotes import FootnotedSentence, Section
from runner.reports.report import Report, ReportSection
from runner.reports.sources import (
    DocumentAttribution,
    DocumentSource,
    MessageSource,
    RegisteredSource,
    ReportSource,
    SourceRegistry,
    SourceScores,
)


def span_json(span: ReportSource) -> dict[str, Any]:
    """One cited span: its quote and where it lies (a message's characters, a locator)."""
    if isinstance(span, MessageSource):
        return {"quote": span.quote, "char_start": span.char_start, "char_end": span.char_end}
    # Spans of one source may come from near-duplicate documents: each names its own.
    return {
        "quote": span.quote,
        "locator": span.locator,
        "document_id": span.document_id,
        "title": span.title,
        "url": span.url,
        "source_text_hash": span.source_text_hash,
    }


def source_json(entry: RegisteredSource) -> dict[str, Any]:
    """A source with its spans; the top-level quote and span are its first span's."""
    source = entry.first
    usage = {
        "spans": [span_json(span) for span in entry.spans],
        "sections": list(entry.sections),
        "citation_count": entry.citations,
        **(entry.scores.as_json() if entry.scores is not None else {}),
    }
    if isinstance(source, MessageSource):
        return {
            "id": entry.identifier,
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
            **usage,
        }
    return {
        "id": entry.identifier,
        "kind": "document",
        "quote": source.quote,
        "document_id": source.document_id,
        "title": source.title,
        "url": source.url,
        "source_text_hash": source.source_text_hash,
        "locator": source.locator,
        "author": source.attribution.author,
        "publisher": source.attribution.publisher,
        "published_at": (
            source.attribution.published_at.isoformat() if source.attribution.published_at else None
        ),
        "group": source.attribution.group,
        **usage,
    }


def report_json(
    report: Report, registry: SourceRegistry | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(sections, sources) of a report, sources numbered by first appearance; each sentence
    lists its sources' ids (`source_ids`) and the exact span of each it cites (`citations`)."""
    registry = registry or report.registry()
    sections = []
    for section in report.sections:
        sentences = []
        for sentence in section.sentences:
            cited = [registry.span_of(source) for source in dict.fromkeys(sentence.sources)]
            pairs = list(dict.fromkeys(pair for pair in cited if pair is not None))
            sentences.append(
                {
                    "text": sentence.sentence,
                    "source_ids": list(dict.fromkeys(identifier for identifier, _ in pairs)),
                    "citations": [{"source_id": i, "span": span} for i, span in pairs],
                }
            )
        sections.append(
            {"heading": section.heading, "bullets": section.bullets, "sentences": sentences}
        )
    return sections, [source_json(entry) for entry in registry.entries()]


def _spans(entry: dict[str, Any], message_texts: dict[tuple[int, int], str]) -> list[ReportSource]:
    """The spans of a stored source (a report stored before sources had spans: its one)."""
    stored = entry.get("spans") or [entry]
    if entry["kind"] == "document":
        published = entry.get("published_at")
        attribution = DocumentAttribution(
            entry.get("author"),
            entry.get("publisher"),
            date.fromisoformat(published) if published else None,
            entry.get("group"),
        )
        return [
            DocumentSource(
                str(span.get("document_id", entry["document_id"])),
                str(span.get("title", entry["title"])),
                str(span.get("source_text_hash", entry["source_text_hash"])),
                str(span["locator"]),
                str(span["quote"]),
                span.get("url", entry.get("url")),
                attribution,
            )
            for span in stored
        ]
    row, revision = int(entry["message_id"]), int(entry["revision"])
    return [
        MessageSource(
            channel=str(entry["channel"]),
            message_id=str(entry["external_id"]),
            revision=revision,
            author=str(entry["author"]),
            ts=datetime.fromisoformat(entry["ts"]),
            text=message_texts[(row, revision)],
            char_start=int(span["char_start"]),
            char_end=int(span["char_end"]),
            row_id=row,
        )
        for span in stored
    ]


def report_from_json(
    question: str,
    title: str,
    sections: list[dict[str, Any]],
    sources: list[dict[str, Any]],
    message_texts: dict[tuple[int, int], str],
) -> Report:
    """The stored report as a `Report`; `message_texts` holds the text of each cited message
    revision by (messages row, revision)."""
    by_id = {str(entry["id"]): _spans(entry, message_texts) for entry in sources}
    # A report stored before sources were scored has none: its sources stay unscored.
    scores = {
        by_id[str(entry["id"])][0].key: scored
        for entry in sources
        if (scored := SourceScores.from_json(entry)) is not None
    }
    rebuilt: list[ReportSection] = []
    for section in sections:
        sentences = []
        for sentence in section["sentences"]:
            citations = sentence.get("citations") or [
                {"source_id": i, "span": 0} for i in sentence["source_ids"]
            ]
            cited = tuple(by_id[str(c["source_id"])][int(c["span"])] for c in citations)
            sentences.append(FootnotedSentence(str(sentence["text"]), cited))
        rebuilt.append(Section(section["heading"], tuple(sentences), bool(section["bullets"])))
    return Report(question, title, tuple(rebuilt), scores)


# How a report's Markdown is written (runner.grounding.footnotes, runner.core.markdown_text): part of the cache
# key, so a report stored before a change of the Markdown is written again, not served as it was.
MARKDOWN_VERSION = "sources-3"


def report_cache_key(
    question: str,
    message_revisions: list[tuple[int, list[tuple[int, int]]]],
    document_texts: list[tuple[int, str]],
    settings: dict[str, Any],
    writer: str,
    digests: list[tuple[int, list[int]]] | None = None,
    document_digests: list[tuple[int, int]] | None = None,
) -> str:
    """sha256 of what a report is a function of: the question, the exact message revisions read
    per channel ((channel, [(row, revision)])), the digests whose claims were read per channel
    ((channel, [digest id])), each document's canonical-text hash and the stored digest whose
    evidence stands for it ((document, digest id)), the settings, the writer's version and the
    Markdown's. Equal keys give the same report."""
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
    if document_digests:
        material["document_digests"] = [list(pair) for pair in document_digests]
    encoded = json.dumps(material, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(encoded).hexdigest()
