"""The report job: answer a question from chosen channels and documents with an offline,
extractive report whose every sentence cites `S1..Sn` sources, served from the report cache when
nothing it reads has changed.

The steps:
1. read the request (options: question, channel_ids, document_ids, since, until), each channel's
   messages with since <= ts < until (at most `max_messages` per channel, the oldest first), the
   claims of the channel's digests whose window overlaps that range (decisions, action items,
   open questions, topic summaries, synthesized knowledge: evidence that cites the messages they
   rest on) and each document; a source that no longer exists FAILS the job (`source_gone`);
2. compute the cache key (`runner.reports.records.report_cache_key`: the question, the exact
   message revisions, digests and document texts read, the settings, the writer's version); a stored
   report with that key ends the job at once, with no evidence gathered and nothing written;
3. otherwise gather and rank the evidence, write the extractive report, and run the citation
   audit (`runner.reports.audit.accept_sentences`): what fails is dropped, never stored as cited;
4. the report row and the job's end commit in one transaction (a lost lease rolls both back).
Nothing here logs message or document text: only ids, counts and codes.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from db import channels as channel_queries
from db import documents as document_queries
from db import jobs as job_queries
from db import reports as report_queries
from db.jobs import JobStatus
from db.models import DigestJob
from runner.claim_support import DEFAULT_MIN_OVERLAP
from runner.jobs.base import JobContext, finish
from runner.jobs.outcomes import Cancelled, FailNow, Finished, Outcome, Stored
from runner.documents.canonical import CanonicalDocument
from runner.reports.audit import ReportAudit
from runner.reports.evidence import ChannelMessage, DigestClaim, DocumentText
from runner.reports.extractive import EXTRACTOR_VERSION, run_extractive_report
from runner.reports.records import report_cache_key, report_json
from runner.reports.report import Report, report_markdown

logger = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGES = 20_000


@dataclass(frozen=True)
class ReportInputs:
    channels: list[list[ChannelMessage]]
    claims: list[list[DigestClaim]]  # of each channel's digests whose window overlaps the range
    documents: list[DocumentText]
    cache_key: str


@dataclass
class ReportJobRunner:
    """Runs report jobs with the claims' overlap minimum and a per-channel message cap."""

    min_overlap: float = DEFAULT_MIN_OVERLAP
    max_messages: int = DEFAULT_MAX_MESSAGES

    async def run(self, job: DigestJob, context: JobContext) -> Outcome:
        options = job.options or {}
        question = str(options.get("question", ""))
        inputs = await self._read(job, context)
        stats = context.stats
        stats.update({
            "channels": len(inputs.channels), "documents": len(inputs.documents),
            "messages": sum(len(messages) for messages in inputs.channels),
            "digest_claims": sum(len(claims) for claims in inputs.claims),
        })  # fmt: skip
        async with context.pool.acquire() as connection:
            cached = await report_queries.cached_report_id(connection, inputs.cache_key)
        if cached is not None:
            stats["cache_hit"] = True
            logger.info("report.cache_hit job_id=%s report_id=%s", job.id, cached)
            return Finished(
                JobStatus.SUCCEEDED, message="served from the report cache", report_id=cached
            )
        stats["cache_hit"] = False
        if context.should_stop():
            raise Cancelled()
        async with context.pool.acquire() as connection:
            await job_queries.update_progress(
                connection, job.id, context.worker_id, "reduce", 0, 1
            )
        report, audit, evidence_units = await asyncio.to_thread(self._write, question, inputs)
        stats.update({"evidence_units": evidence_units, **audit.as_json()})
        stats.pop("problems", None)
        if context.should_stop():
            raise Cancelled()
        await self._store(context, job, report, audit, inputs.cache_key)
        return Stored(JobStatus.SUCCEEDED)

    async def _read(self, job: DigestJob, context: JobContext) -> ReportInputs:
        options = job.options or {}
        channel_ids = [int(i) for i in options.get("channel_ids", [])]
        document_ids = [int(i) for i in options.get("document_ids", [])]
        since = _time(options.get("since"))
        until = _time(options.get("until"))
        channels: list[list[ChannelMessage]] = []
        claims: list[list[DigestClaim]] = []
        revisions: list[tuple[int, list[tuple[int, int]]]] = []
        digests: list[tuple[int, list[int]]] = []
        async with context.pool.acquire() as connection:
            found = await channel_queries.channels_by_ids(connection, channel_ids)
            known = {channel.id: channel for channel in found}
            documents = {
                d.id: d for d in await document_queries.documents_by_ids(connection, document_ids)
            }
            for channel_id in channel_ids:
                channel = known.get(channel_id)
                if channel is None:
                    raise FailNow("source_gone", f"channel {channel_id} no longer exists")
                rows = await channel_queries.catch_up_messages(
                    connection, channel_id, since, until, self.max_messages
                )
                channels.append([
                    ChannelMessage(channel.name, row.external_id, row.revision, row.author,
                                   row.ts, row.normalized_text, row.id)
                    for row in rows
                ])  # fmt: skip
                revisions.append((channel_id, [(row.id, row.revision) for row in rows]))
                items = await report_queries.report_digest_items(
                    connection, channel_id, since, until
                )
                claims.append([
                    DigestClaim(item.kind, item.text, tuple(item.message_ids)) for item in items
                ])  # fmt: skip
                digests.append((channel_id, sorted({item.digest_id for item in items})))
        texts: list[DocumentText] = []
        for document_id in document_ids:
            row = documents.get(document_id)
            if row is None:
                raise FailNow("source_gone", f"document {document_id} no longer exists")
            document = CanonicalDocument.from_record(document_queries.document_record(row))
            texts.append(DocumentText(
                str(row.id), document.title or f"document {row.id}", document.canonical_text,
                document.source_text_hash, document.page_spans,
            ))  # fmt: skip
        key = report_cache_key(
            str(options.get("question", "")), revisions,
            [(int(t.document_id), t.source_text_hash) for t in texts],
            {"min_overlap": self.min_overlap, "max_messages": self.max_messages},
            EXTRACTOR_VERSION, digests,
        )  # fmt: skip
        return ReportInputs(channels, claims, texts, key)

    def _write(self, question: str, inputs: ReportInputs) -> tuple[Report, ReportAudit, int]:
        """CPU-bound (BM25 over every sentence): run in a thread."""
        run = run_extractive_report(
            question, inputs.channels, inputs.documents, self.min_overlap, inputs.claims
        )
        return run.report, run.audit, len(run.units)

    async def _store(
        self, context: JobContext, job: DigestJob, report: Report, audit: ReportAudit,
        cache_key: str,
    ) -> None:  # fmt: skip
        """The report row and the job's end state, in one transaction."""
        sections, sources = report_json(report)
        options = job.options or {}
        values: dict[str, Any] = {
            "question": report.question,
            "request": {k: options[k] for k in sorted(options) if k != "request_hash"},
            "cache_key": cache_key,
            "title": report.title,
            "sections": sections,
            "sources": sources,
            "markdown": report_markdown(report),
            "audit": audit.as_json(),
            "writer": EXTRACTOR_VERSION,
        }
        warnings = [
            {"code": f"sentence_dropped:{reason}", "message": f"{count} sentence(s) dropped"}
            for reason, count in sorted(audit.reasons.items())
        ]
        async with context.pool.acquire() as connection, connection.transaction():
            report_id = await report_queries.insert_report(connection, job.id, values)
            end = Finished(JobStatus.SUCCEEDED, report_id=report_id, warnings=warnings)
            await finish(connection, job.id, context.worker_id, end, context.stats)
        logger.info("report.stored job_id=%s report_id=%s sentences=%s sources=%s",
                    job.id, report_id, audit.kept, audit.sources)  # fmt: skip


def _time(value: Any) -> datetime | None:
    return None if value in (None, "") else datetime.fromisoformat(str(value))
