"""Markdown of a stored digest, for the terminal (`digestd digest`, `digestd demo`, `digestd show`),
exports and deliveries:
the overview and highlights as Markdown with numbered footnotes (runner.grounding.footnotes), then
items; and of a document digest (`digestd add-doc --wait`, `digestd show document`): its summary,
key points and the evidence quoted with the locators that slice it from the document.
Every stored text (titles, item texts, owners, links, excerpts) is escaped
(runner.core.markdown_text.escape_inline): a message cannot add a heading, a footnote or markup."""

from __future__ import annotations

import textwrap
from typing import Any

import asyncpg

from db import channels as channel_queries
from db import digests as digest_queries
from db import documents as document_queries
from db.models import (
    Digest,
    DocumentDigest,
)
from runner.core.markdown_text import escape_inline as md
from runner.digests.periods import stored_heading
from runner.exports.digest_items import read_digest_items
from runner.grounding.footnotes import Section, citation_keys, footnoted_markdown, stored_sentences

EXCERPT_CHARS = 160


def _cites(ids: list[str]) -> str:
    shown = ", ".join(md(i) for i in ids[:4]) + (" …" if len(ids) > 4 else "")
    return f"  [msg {shown}]" if ids else ""


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return md(flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1] + "…")


def _flags(flags: list[dict[str, Any]]) -> str:
    return f"  (flags: {', '.join(f['code'] for f in flags)})" if flags else ""


async def _prose_markdown(connection: asyncpg.Connection, digest: Digest) -> str:
    """Overview, highlights and each period of a multi-day window (its label and counts as its
    heading) with one footnote numbering; a digest stored before citations
    (no sentences) shows its overview and highlights as they were."""
    if not digest.overview_sentences and not digest.highlight_sentences:
        legacy = [md(digest.overview)]
        if digest.highlights:
            legacy += ["", "## Highlights"] + [f"- {md(h)}" for h in digest.highlights]
        return "\n".join(legacy)
    periods = [list(period.get("sentences", [])) for period in digest.periods]
    stored = [
        *digest.overview_sentences,
        *digest.highlight_sentences,
        *(sentence for period in periods for sentence in period),
    ]
    keys = citation_keys(stored)
    rows = await channel_queries.revision_texts(
        connection, [k[0] for k in keys], [k[1] for k in keys]
    )
    texts = {(r.message_id, r.revision): r.normalized_text for r in rows}
    messages = await channel_queries.messages_by_ids(connection, [k[0] for k in keys])
    authors = {m.id: (m.author, m.ts) for m in messages}
    return footnoted_markdown(
        [
            Section(None, stored_sentences(digest.overview_sentences, authors, texts)),
            Section(
                "Highlights",
                stored_sentences(digest.highlight_sentences, authors, texts),
                bullets=True,
            ),
            *(
                Section(stored_heading(period), stored_sentences(told, authors, texts), True)
                for period, told in zip(digest.periods, periods, strict=True)
            ),
        ]
    )


async def render_digest(connection: asyncpg.Connection, digest_id: int) -> str:
    digest = await digest_queries.digest_by_id(connection, digest_id)
    if digest is None:
        return f"no digest {digest_id}"
    items = await read_digest_items(connection, digest_id)

    lines = [
        f"# {md(digest.title)}",
        f"digest {digest.id} · {digest.message_count} messages · signal "
        f"{digest.signal_quality} ({md(digest.signal_reason)}) · extractor {digest.extractor}",
        "",
        await _prose_markdown(connection, digest),
    ]

    def section(title: str, rows: list[str]) -> None:
        if rows:
            lines.extend(["", f"## {title}", *rows])

    section("Topics", [f"- {md(r.title)}{_cites(list(r.message_ids))}" for r in items.topics])
    section(
        "Decisions",
        [f"- {md(r.text)}{_cites(list(r.message_ids))}{_flags(r.flags)}" for r in items.decisions],
    )
    section(
        "Action items",
        [
            f"- {md(r.text)}"
            + (f" — owner: {md(r.owner)}" if r.owner else "")
            + _cites(list(r.message_ids))
            + _flags(r.flags)
            for r in items.action_items
        ],
    )
    section(
        "Open questions",
        [f"- {md(r.text)}{_cites(list(r.message_ids))}" for r in items.open_questions],
    )
    section("Links", [f"- {md(r.url)} — {md(r.description)}" for r in items.links])
    section(
        "Artifacts",
        [
            f"- [{r.kind}] {md(r.title)} (msg {md(r.message_external_id)} "
            f"{r.char_start}:{r.char_end}): {_excerpt(items.pointer_text(r))}"
            for r in items.artifacts
        ],
    )
    knowledge = []
    for r in items.knowledge_items:
        body = _excerpt(items.pointer_text(r)) if r.message_id else _excerpt(r.content or "")
        where = (
            f" (msg {md(r.message_external_id or '')} {r.char_start}:{r.char_end})"
            if r.message_id
            else _cites(list(r.message_ids))
        )
        version = f" \\[{md(r.context_version)}\\]" if r.context_version else ""
        knowledge.append(f"- {r.kind}: {md(r.title)}{version}{where}{_flags(r.flags)}\n    {body}")
    section("Knowledge", knowledge)
    if digest.rejections:
        lines += [
            "",
            f"({len(digest.rejections)} extracted items failed validation and were dropped)",
        ]
    return "\n".join(textwrap.dedent(line) for line in lines)


async def render_document_digest(connection: asyncpg.Connection, row: DocumentDigest) -> str:
    """A document digest as Markdown: the document's title, the query, the summary, key points,
    and each evidence snippet quoted with its locator (`char:S-E`, `page:N:char:S-E`)."""
    document = await document_queries.document_by_id(connection, row.document_id)
    payload = row.payload
    title = (document.title if document else None) or f"document {row.document_id}"
    lines = [
        f"# {md(title)}",
        f"document digest {row.id} · document {row.document_id} · {row.summarizer} · "
        f"fidelity {md(row.fidelity_level)}",
        f"query: {md(row.query)}",
        "",
        md(payload.get("summary", "")),
    ]
    key_points = [f"- {md(point)}" for point in payload.get("key_points", [])]
    if key_points:
        lines += ["", "## Key points", *key_points]
    evidence = [
        f"- “{md(snippet['text'])}” ({md(snippet['locator'])}, relevance "
        f"{float(snippet['relevance_score']):.3f})"
        for snippet in payload.get("evidence_snippets", [])
    ]
    if evidence:
        lines += ["", "## Evidence", *evidence]
    lines += [
        "",
        f"{payload.get('original_chars')} characters of text, {payload.get('digest_chars')} in "
        f"the digest ({float(payload.get('compression_ratio', 0)):.0%}), "
        f"{md(str(payload.get('source_text_hash', '')))}",
    ]
    warnings = [
        f"- {md(str(warning.get('code', '')))}: {md(str(warning.get('message', '')))}"
        for warning in row.warnings
    ]
    if warnings:
        lines += ["", "## Warnings", *warnings]
    return "\n".join(lines)
