"""What a report job reads, from Postgres: each chosen channel's messages in the range (at most
`max_messages`, the newest, with a `window_cap` warning naming what was not read), the claims of
its digests whose window overlaps the range, each chosen document's canonical text, and the
stored digest of a document made for the report's question, whose evidence snippets then stand
for it (`runner.reports.digest_evidence`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import asyncpg

from db import channels as channel_queries
from db import documents as document_queries
from db import reports as report_queries
from db.models import MessageRange, WindowMessageRow
from runner.core.job_options import ReportOptions
from runner.documents.canonical import CanonicalDocument
from runner.documents.policy import SourceQuality, estimate_quality
from runner.jobs.outcomes import FailNow
from runner.reports.coverage import ChosenSource
from runner.reports.digest_evidence import StoredDigest, digest_snippets
from runner.reports.evidence import ChannelMessage, DigestClaim, DocumentText, shown_title
from runner.reports.source_scores import DocumentFacts
from runner.reports.sources import DocumentAttribution

# Stored digests read per chosen document, newest first, to find one made for the question.
DIGESTS_READ_PER_DOCUMENT = 20


@dataclass(frozen=True)
class ReportInputs:
    """What a report read, in the order asked: each channel's messages and digest claims, each
    document (with its digest's snippets, if any), and what the cache key is made of."""

    channels: list[list[ChannelMessage]]
    claims: list[list[DigestClaim]]  # of each channel's digests whose window overlaps the range
    documents: list[DocumentText]
    revisions: list[tuple[int, list[tuple[int, int]]]]
    digests: list[tuple[int, list[int]]]  # (channel, [digest id]) whose claims were read
    # `window_cap` warnings: channels with more messages in the range than the cap.
    window_warnings: list[dict[str, Any]] = field(default_factory=list)
    # Every channel then document asked for, in evidence order, for `missing_sections`.
    sources: list[ChosenSource] = field(default_factory=list)
    # (document, digest id, snippets used, snippets left out) of each document whose stored
    # digest for the question stands for it (`runner.reports.digest_evidence`).
    document_digests: list[tuple[int, int, int, int]] = field(default_factory=list)
    # Document id → what its credibility needs beyond its attribution (runner.reports.source_scores).
    document_facts: dict[str, DocumentFacts] = field(default_factory=dict)


async def read_inputs(
    pool: asyncpg.Pool, options: ReportOptions, max_messages: int
) -> ReportInputs:
    """What a report reads (module docstring); a chosen source that no longer exists fails the
    job (`source_gone`)."""
    channel_ids, document_ids = list(options.channel_ids), list(options.document_ids)
    since, until = options.since, options.until
    channels: list[list[ChannelMessage]] = []
    claims: list[list[DigestClaim]] = []
    digests: list[tuple[int, list[int]]] = []
    revisions: list[tuple[int, list[tuple[int, int]]]] = []
    window_warnings: list[dict[str, Any]] = []
    sources: list[ChosenSource] = []
    async with pool.acquire() as connection:
        found = await channel_queries.channels_by_ids(connection, channel_ids)
        known = {channel.id: channel for channel in found}
        documents = {
            d.id: d for d in await document_queries.documents_by_ids(connection, document_ids)
        }
        for channel_id in channel_ids:
            channel = known.get(channel_id)
            if channel is None:
                raise FailNow("source_gone", f"channel {channel_id} no longer exists")
            rows = await report_queries.report_window_messages(
                connection, channel_id, since, until, max_messages
            )
            if rows and len(rows) >= max_messages:
                left_out = await report_queries.report_window_left_out(
                    connection, channel_id, rows[0], since
                )
                if left_out is not None:
                    window_warnings.append(
                        window_cap_warning(channel_id, channel.name, rows, left_out, max_messages)
                    )
            channels.append(
                [
                    ChannelMessage(
                        channel.name,
                        row.external_id,
                        row.revision,
                        row.author,
                        row.ts,
                        row.normalized_text,
                        row.id,
                    )
                    for row in rows
                ]
            )
            revisions.append((channel_id, [(row.id, row.revision) for row in rows]))
            sources.append(ChosenSource("channel", channel_id, channel.name, not rows))
            items = await report_queries.report_digest_items(connection, channel_id, since, until)
            claims.append(
                [DigestClaim(item.kind, item.text, tuple(item.message_ids)) for item in items]
            )
            digests.append((channel_id, sorted({item.digest_id for item in items})))
        stored = await document_queries.latest_digests_of_documents(
            connection, document_ids, DIGESTS_READ_PER_DOCUMENT
        )
    digests_of: dict[int, list[StoredDigest]] = {}
    for digest in stored:  # newest first within each document
        digests_of.setdefault(digest.document_id, []).append(
            StoredDigest(digest.id, digest.query, digest.payload)
        )
    texts: list[DocumentText] = []
    used: list[tuple[int, int, int, int]] = []
    facts: dict[str, DocumentFacts] = {}
    for document_id in document_ids:
        row = documents.get(document_id)
        if row is None:
            raise FailNow("source_gone", f"document {document_id} no longer exists")
        document = CanonicalDocument.from_record(document_queries.document_record(row))
        title = shown_title(document.title, document.canonical_text, str(row.id))
        empty = not document.canonical_text.strip()
        sources.append(ChosenSource("document", row.id, title, empty))
        text = DocumentText(
            str(row.id),
            title,
            document.canonical_text,
            document.source_text_hash,
            document.page_spans,
            document.source_url,
            attribution=DocumentAttribution.of(document, row.id),
            quality=estimate_quality(document.warnings),
        )
        facts[text.document_id] = DocumentFacts(
            titled=document.title is not None, degraded=text.quality is SourceQuality.LOW
        )
        # A digest of this document for the question: its evidence, not the text cut again.
        chosen = digest_snippets(text, digests_of.get(row.id, []), [options.question])
        if chosen is not None:
            text = replace(text, snippets=chosen.snippets)
            used.append((row.id, chosen.digest_id, len(chosen.snippets), chosen.left_out))
        texts.append(text)
    return ReportInputs(
        channels, claims, texts, revisions, digests, window_warnings, sources, used, facts
    )


def window_cap_warning(
    channel_id: int,
    channel_name: str,
    read: list[WindowMessageRow],
    left_out: MessageRange,
    cap: int,
) -> dict[str, Any]:
    """The `window_cap` warning of a channel read up to the cap: which channel, how many older
    messages were not read and from when to when, and which range was read (the newest)."""
    name = channel_name if len(channel_name) <= 80 else channel_name[:79] + "…"
    first, last = read[0].ts.isoformat(), read[-1].ts.isoformat()
    skipped_from, skipped_to = left_out.first_at.isoformat(), left_out.last_at.isoformat()
    return {
        "code": "window_cap",
        "phase": "read",
        "channel_id": channel_id,
        "messages_read": len(read),
        "messages_not_read": left_out.message_count,
        "read_from": first,
        "read_to": last,
        "not_read_from": skipped_from,
        "not_read_to": skipped_to,
        "message": (
            f"channel {channel_id} ({name!r}): {left_out.message_count:,} older messages, "
            f"{skipped_from} to {skipped_to}, were not read; a report reads at most {cap:,} "
            f"messages per channel (DIGESTD_MAX_WINDOW_MESSAGES), the newest: here {len(read):,} "
            f"from {first} to {last}. Narrow since/until to read the others."
        ),
    }
