"""The report job: answer a question from chosen channels and documents with a report whose
every sentence cites `S1..Sn` sources, served from the report cache when nothing it reads has
changed.

The steps:
1. read the request (options: question, channel_ids, document_ids, since, until), each channel's
   messages with since <= ts < until (at most `max_messages` per channel: the newest, and a
   `window_cap` warning saying how many older ones of which channel were not read), the
   claims of the channel's digests whose window overlaps that range (decisions, action items,
   open questions, topic summaries, synthesized knowledge: evidence that cites the messages they
   rest on) and each document; a source that no longer exists FAILS the job (`source_gone`);
2. compute the cache key (`runner.reports.records.report_cache_key`: the question, the exact
   message revisions, digests and document texts read, the settings, the writer: the offline
   extractor's version, or the LLM writer's model and prompt version); a stored report with
   that key ends the job at once, with no evidence gathered, no model called, nothing written;
3. otherwise gather and rank the evidence and write the report: with the LLM writer when the
   worker has one (`runner.reports.llm_writer`: evidence fitted to the model's budget, one
   re-ask with the audit's errors), else the offline extractive writer; the citation audit
   (`runner.reports.audit.accept_sentences`) drops what fails, never stored as cited;
   a chosen channel or document the report cites nothing of gets a `no_section` warning saying
   why (`runner.reports.coverage`: nothing in the range, nothing quotable, nothing matching);
4. the report row and the job's end commit in one transaction (a lost lease rolls both back);
   then /metrics counts its citations, sources, orphans and audit failures
   (`runner.metrics.count_report`).
A failing model (call errors after retries, an open circuit breaker, unusable output twice, a
request too large for it) does not fail the job: it ends PARTIAL with the offline extractive
report, stored under the extractive writer's cache key (so a later run asks the model again)
and an `llm_writer_failed` warning.
Nothing here logs message or document text: only ids, counts and codes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from db import channels as channel_queries
from db import documents as document_queries
from db import reports as report_queries
from db.jobs import JobStatus
from db.models import DigestJob, MessageRange, WindowMessageRow
from db.reports import EMPTY_FIDELITY
from runner.core.cancel import Cancelled
from runner.core.job_options import ReportOptions
from runner.core.progress import JobPhase
from runner.documents.canonical import CanonicalDocument
from runner.errors import LLMError
from runner.grounding.claim_support import DEFAULT_MIN_OVERLAP
from runner.jobs.base import JobContext, finish, report_progress
from runner.jobs.outcomes import FailNow, Finished, Outcome, Stored
from runner.metrics import count_report
from runner.reports.audit import ReportAudit, accept_sentences
from runner.reports.coverage import ChosenSource, missing_sections
from runner.reports.evidence import (
    ChannelMessage,
    DigestClaim,
    DocumentText,
    RankedEvidence,
    gather_evidence,
    rank_evidence,
    shown_title,
)
from runner.reports.extractive import EXTRACTOR_VERSION, write_extractive_report
from runner.reports.llm_writer import EvidenceOverflow, LLMReportWriter
from runner.reports.records import report_cache_key, report_json
from runner.reports.report import Report, report_markdown

logger = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGES = 20_000


@dataclass(frozen=True)
class ReportInputs:
    channels: list[list[ChannelMessage]]
    claims: list[list[DigestClaim]]  # of each channel's digests whose window overlaps the range
    documents: list[DocumentText]
    revisions: list[tuple[int, list[tuple[int, int]]]]
    digests: list[tuple[int, list[int]]]  # (channel, [digest id]) whose claims were read
    # `window_cap` warnings: channels with more messages in the range than the cap.
    window_warnings: list[dict[str, Any]] = field(default_factory=list)
    # Every channel then document asked for, in evidence order, for `missing_sections`.
    sources: list[ChosenSource] = field(default_factory=list)


@dataclass
class Written:
    """A written, audited report and what goes with it into the row and the job."""

    report: Report
    audit: ReportAudit
    writer: str
    cache_key: str
    status: JobStatus = JobStatus.SUCCEEDED
    fidelity: dict[str, Any] = field(default_factory=lambda: dict(EMPTY_FIDELITY))
    warnings: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ReportJobRunner:
    """Runs report jobs with the claims' overlap minimum, a per-channel message cap and, when
    the worker has a model, the LLM writer (else the offline extractive writer)."""

    min_overlap: float = DEFAULT_MIN_OVERLAP
    max_messages: int = DEFAULT_MAX_MESSAGES
    llm_writer: LLMReportWriter | None = None

    async def run(self, job: DigestJob, context: JobContext) -> Outcome:
        options = ReportOptions.parse(job.options)
        question = options.question
        inputs = await self._read(options, context)
        stats = context.stats
        writer = self.llm_writer.version if self.llm_writer else EXTRACTOR_VERSION
        cache_key = self._cache_key(question, inputs, writer)
        stats.update(
            {
                "channels": len(inputs.channels),
                "documents": len(inputs.documents),
                "messages": sum(len(messages) for messages in inputs.channels),
                "writer": writer,
                "digest_claims": sum(len(claims) for claims in inputs.claims),
                "messages_not_read": sum(w["messages_not_read"] for w in inputs.window_warnings),
            }
        )
        async with context.pool.acquire() as connection:
            cached = await report_queries.cached_report_id(connection, cache_key)
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
            # The evidence of every source is the report's map; writing it, its reduce.
            await report_progress(connection, job.id, context.worker_id, JobPhase.MAP)
        units = await asyncio.to_thread(
            gather_evidence, inputs.channels, inputs.documents, inputs.claims
        )
        ranked = await asyncio.to_thread(rank_evidence, question, units)
        stats["evidence_units"] = len(units)
        async with context.pool.acquire() as connection:
            await report_progress(connection, job.id, context.worker_id, JobPhase.REDUCE)
        if self.llm_writer is not None:
            written = await self._write_llm(job, question, ranked, inputs, cache_key, stats)
        else:
            written = await asyncio.to_thread(self._write_offline, question, ranked, cache_key)
        # A chosen source the report says nothing about is named, with why.
        missing = missing_sections(inputs.sources, units, ranked, written.report)
        if inputs.window_warnings or missing:  # window first: what no later step could see
            written.warnings = [*inputs.window_warnings, *written.warnings, *missing]
            written.fidelity = {
                **written.fidelity,
                "warnings": [
                    *inputs.window_warnings,
                    *written.fidelity.get("warnings", []),
                    *missing,
                ],
            }
        stats.update(written.audit.as_json())
        stats.pop("problems", None)
        if context.should_stop():
            raise Cancelled()
        await self._store(context, job, options, written)
        return Stored(written.status)

    def _cache_key(self, question: str, inputs: ReportInputs, writer: str) -> str:
        return report_cache_key(
            question,
            inputs.revisions,
            [(int(t.document_id), t.source_text_hash) for t in inputs.documents],
            {"min_overlap": self.min_overlap, "max_messages": self.max_messages},
            writer,
            inputs.digests,
        )

    def _write_offline(
        self, question: str, ranked: list[RankedEvidence], cache_key: str
    ) -> Written:
        """The extractive report (CPU-bound: run in a thread)."""
        draft = write_extractive_report(question, ranked)
        report, audit = accept_sentences(draft, self.min_overlap)
        return Written(report, audit, EXTRACTOR_VERSION, cache_key)

    async def _write_llm(
        self,
        job: DigestJob,
        question: str,
        ranked: list[RankedEvidence],
        inputs: ReportInputs,
        cache_key: str,
        stats: dict[str, Any],
    ) -> Written:
        """The LLM report, or the extractive one (PARTIAL, warned) when the model fails."""
        assert self.llm_writer is not None
        try:
            run = await self.llm_writer.write(question, ranked)
        except LLMError as error:
            logger.warning("report.llm_failed job_id=%s error=%s", job.id, type(error).__name__)
            key = self._cache_key(question, inputs, EXTRACTOR_VERSION)
            written = await asyncio.to_thread(self._write_offline, question, ranked, key)
            written.status = JobStatus.PARTIAL
            written.warnings.append(
                {
                    "code": "llm_writer_failed",
                    "message": (
                        f"the report model failed ({type(error).__name__}: {str(error)[:200]}); the "
                        "offline extractive report was written instead"
                    ),
                }
            )
            if isinstance(error, EvidenceOverflow):  # what the fitting did, and why it stopped
                written.warnings[:0] = error.fit.warnings
                written.fidelity = error.fit.as_json()
            written.fidelity = {**written.fidelity, "warnings": list(written.warnings)}
            return written
        usage = run.usage
        stats.update(
            {
                "llm_calls": usage.llm_calls,
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "cached_tokens": usage.cached_tokens,
                "evidence_given": len(run.fit.units),
                "evidence_tokens": run.fit.tokens,
                "evidence_dropped": len(run.fit.dropped_content_ids),
            }
        )
        warnings = [*run.notes, *run.fit.warnings, *run.warnings]
        status = JobStatus.PARTIAL if run.warnings else JobStatus.SUCCEEDED
        writer = self.llm_writer.version_for(run.model)
        stats["model"] = run.model
        if writer != self.llm_writer.version:  # a fallback model's report: under its own key
            stats["writer"] = writer
            cache_key = self._cache_key(question, inputs, writer)
        return Written(
            run.report,
            run.audit,
            writer,
            cache_key,
            status,
            {**run.fit.as_json(), "warnings": warnings},
            warnings,
        )

    async def _read(self, options: ReportOptions, context: JobContext) -> ReportInputs:
        channel_ids, document_ids = list(options.channel_ids), list(options.document_ids)
        since, until = options.since, options.until
        channels: list[list[ChannelMessage]] = []
        claims: list[list[DigestClaim]] = []
        digests: list[tuple[int, list[int]]] = []
        revisions: list[tuple[int, list[tuple[int, int]]]] = []
        window_warnings: list[dict[str, Any]] = []
        sources: list[ChosenSource] = []
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
                rows = await report_queries.report_window_messages(
                    connection, channel_id, since, until, self.max_messages
                )
                if rows and len(rows) >= self.max_messages:
                    left_out = await report_queries.report_window_left_out(
                        connection, channel_id, rows[0], since
                    )
                    if left_out is not None:
                        window_warnings.append(
                            window_cap_warning(
                                channel_id, channel.name, rows, left_out, self.max_messages
                            )
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
                items = await report_queries.report_digest_items(
                    connection, channel_id, since, until
                )
                claims.append(
                    [DigestClaim(item.kind, item.text, tuple(item.message_ids)) for item in items]
                )
                digests.append((channel_id, sorted({item.digest_id for item in items})))
        texts: list[DocumentText] = []
        for document_id in document_ids:
            row = documents.get(document_id)
            if row is None:
                raise FailNow("source_gone", f"document {document_id} no longer exists")
            document = CanonicalDocument.from_record(document_queries.document_record(row))
            title = shown_title(document.title, document.canonical_text, str(row.id))
            empty = not document.canonical_text.strip()
            sources.append(ChosenSource("document", row.id, title, empty))
            texts.append(
                DocumentText(
                    str(row.id),
                    title,
                    document.canonical_text,
                    document.source_text_hash,
                    document.page_spans,
                    document.source_url,
                )
            )
        return ReportInputs(channels, claims, texts, revisions, digests, window_warnings, sources)

    async def _store(
        self, context: JobContext, job: DigestJob, options: ReportOptions, written: Written
    ) -> None:
        """The report row and the job's end state, in one transaction."""
        report, audit = written.report, written.audit
        started = time.perf_counter()
        registry = report.registry()
        sections, sources = report_json(report, registry)
        markdown = report_markdown(report, registry)
        sources_seconds = time.perf_counter() - started
        values: dict[str, Any] = {
            "question": report.question,
            "request": options.request(),
            "cache_key": written.cache_key,
            "title": report.title,
            "sections": sections,
            "sources": sources,
            "markdown": markdown,
            "audit": audit.as_json(),
            "writer": written.writer,
            "fidelity": written.fidelity,
        }
        warnings = [
            {"code": f"sentence_dropped:{reason}", "message": f"{count} sentence(s) dropped"}
            for reason, count in sorted(audit.reasons.items())
        ]
        warnings += [{"code": w["code"], "message": w["message"]} for w in written.warnings]
        async with context.pool.acquire() as connection:
            await report_progress(connection, job.id, context.worker_id, JobPhase.STORE)
        async with context.pool.acquire() as connection, connection.transaction():
            report_id = await report_queries.insert_report(connection, job.id, values)
            end = Finished(written.status, report_id=report_id, warnings=warnings)
            await finish(connection, job.id, context.worker_id, end, context.stats)
        count_report(audit, sources_seconds)
        logger.info(
            "report.stored job_id=%s report_id=%s writer=%s sentences=%s sources=%s",
            job.id,
            report_id,
            written.writer,
            audit.kept,
            audit.sources,
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
